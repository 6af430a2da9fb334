"""What the chat commands and the serial CLI share: /start, /help, /status, /model,
/provider, /new, /memory, and the fixed texts.

Each command returns the text to show (str) and raises nothing for bad input: a wrong
argument comes back as a short message saying what is expected. Telegram calls
``run(text, channel, chat_id)`` for a message that starts with ``/``; the CLI calls the
functions directly. Provider and model changes go through ``mimi.llm.switch`` (which
checks, persists and rebuilds the provider); tokens come from ``mimi.llm.usage``.

The wording lives in ``texts.md`` beside this module, read when needed (``text``): help
pages, the command menu, replies, the heartbeat prompt. Code holds only short strings
(a string constant costs heap for as long as the module is loaded; see docs/heap.md).
"""
from mimi import config, seam

_TEXTS = __file__.rsplit("/", 1)[0] + "/texts.md"


def text(key, *args):
    """The text under ``## key`` in texts.md, %-formatted with ``args`` (str).

    Reads the file line by line (at most 4 KB of the text kept). A missing file or key
    gives ``[key]`` and the arguments, so a broken deploy still says something.
    """
    out = []
    n = 0
    try:
        with open(_TEXTS) as f:
            on = False
            while n < 4096:
                line = f.readline()
                if not line or on and line[:3] == "## ":
                    break
                if on:
                    n += len(line)
                    out.append(line)
                on = on or line[3:].strip() == key and line[:3] == "## "
    except OSError:
        pass
    t = "".join(out).strip()
    if not t:
        return "[%s] %s" % (key, args)
    try:
        return t % args if args else t
    except (TypeError, ValueError):
        return "%s %s" % (t, args)


def menu():
    """The command menu for ``setMyCommands``: ``[(name, description)]``, the ``/name -
    description`` lines of the /help text."""
    out = []
    for ln in text("help").split("\n"):
        if ln[:1] == "/":
            out.append(ln[1:].split(" - ", 1))
    return out


def status():
    """Several lines: runtime, LLM (provider, model, address), heap, uptime, WiFi, clock,
    tokens today."""
    from mimi import VERSION, app, llm
    from mimi.llm import usage

    try:
        ai = llm.describe()
    except Exception as e:  # noqa: BLE001 - a status line must not fail
        ai = "%s (%s)" % (config.get("provider"), e)
    t0 = app.state["started_ms"]
    s = seam.ticks_diff(seam.ticks_ms(), t0 or 0) // 1000
    return text("status", VERSION, seam.describe(), ai, heap(),
                "%d d %d h %d min" % (s // 86400, s // 3600 % 24, s // 60 % 60) if t0 else "stopped", wifi(),
                "synced" if seam.clock_synced() else "not set", usage.summary())


def wifi():
    """The WiFi link in words: network, address and signal, or why not."""
    try:
        up, ip, rssi = seam.wifi_status()
    except Exception as e:  # noqa: BLE001 - a status line must not fail
        return "error: %s" % e
    return text("wifi_up", config.get("wifi_ssid"), ip, rssi) if up else \
        text("wifi_down", config.get("wifi_ssid") or "none")


def heap():
    """``"12345 B used, 67890 B free"`` after a collection ("n/a" on CPython)."""
    seam.collect()
    free = seam.mem_free()
    return "n/a" if free is None else "%d B used, %d B free" % (seam.mem_alloc() or 0, free)


def model(name=None):
    """Show the model, or set it to ``name`` (kept across reboots)."""
    from mimi import llm

    name = str(name or "").strip()
    if not name or " " in name:
        return text("model_bad" if name else "model", config.get("model") or "default", config.get("provider"))
    try:
        llm.switch(model=name)
    except ValueError as e:
        return str(e)
    return text("model_set", name, config.get("provider"))


def provider(name=None):
    """Show the provider, or switch to preset ``name`` (kept across reboots).

    Switching starts from the new provider's own model and address (names differ between
    providers) until ``model`` sets one.
    """
    from mimi import llm

    cur = config.get("provider")
    name = str(name or "").strip().lower()
    if not name or name == cur:
        return text("prov_same" if name else "provider", cur, ", ".join(sorted(llm.PRESETS)))
    try:
        llm.switch(provider=name)
    except ValueError as e:
        return str(e)
    if not llm.PRESETS[name][3]:  # a local server: no key, but its address matters
        return text("prov_set", name) + ("" if config.get("base_url") else text("no_url"))
    return text("prov_set", name) + ("" if config.get("key_" + name) or config.get("api_key") else text("no_key"))


def new_session(key):
    """Start session ``key`` afresh; the old one moves to the archive. Returns a message."""
    from mimi.storage import sessions

    try:
        return text("new", sessions.clear(key) or "none")
    except (OSError, ValueError) as e:
        return "error: %s" % e


def memory(cap=3000):
    """The long-term memory (MEMORY.md), at most ``cap`` bytes."""
    from mimi.storage import memory as mem

    try:
        b = mem.read_memory(cap + 1).encode()
    except (OSError, ValueError) as e:
        return "error: %s" % e
    if len(b) <= cap:
        return b.decode() if b.strip() else text("mem_empty")
    while cap and (b[cap] & 0xC0) == 0x80:  # not inside a UTF-8 character
        cap -= 1
    return b[:cap].decode() + "\n" + text("mem_more")


def parse(text_):
    """Split a chat command: ``"/model@mimi_bot  gpt-4o"`` -> ``("model", "gpt-4o")``.

    Returns None when ``text_`` is not a command (does not start with ``/``).
    """
    if not text_ or text_[0] != "/":
        return None
    head, _, rest = text_[1:].partition(" ")
    name = head.split("@", 1)[0].lower()
    return (name, rest.strip()) if name else None


def run(text_, channel, chat_id):
    """Answer a chat command, or return None when ``text_`` is not one of ours (so it
    goes to the agent as an ordinary message)."""
    name, arg = parse(text_) or ("", "")
    if name == "start":
        return text("start") + "\n\n" + text("help")
    if name == "help":
        return text("help")
    if name == "status":
        return status()
    if name == "model":
        return model(arg)
    if name == "provider":
        return provider(arg)
    if name == "new":
        from mimi.storage import sessions

        return new_session(sessions.key_for(channel, chat_id))
    if name == "memory":
        return memory()
    return None
