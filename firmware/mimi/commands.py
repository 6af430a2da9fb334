"""What the chat commands and the serial CLI share: /start, /help, /status, /model,
/provider, /new, /memory, and the fixed texts.

Each command returns the text to show (str) and raises nothing for bad input: a wrong
argument comes back as a short message saying what is expected. Telegram calls
``run(text, channel, chat_id)`` for a message that starts with ``/``; the CLI calls the
functions directly. Provider and model changes go through ``mimi.llm.switch`` (which
checks, persists and rebuilds the provider); tokens come from ``mimi.llm.usage``.

Long fixed texts (help pages, the command menu, replies to strangers, the heartbeat
prompt) live in ``texts.md`` beside this module and are read when needed (``text``).
"""
from mimi import config, seam

_TEXTS = __file__.rsplit("/", 1)[0] + "/texts.md"


def text(key, *args):
    """The text under ``## key`` in texts.md, %-formatted with ``args`` (str).

    Reads the file line by line (at most 4 KB of the text kept). A missing file or key
    gives ``[key]`` followed by the arguments, so a broken deploy still says something.
    """
    out = []
    n = 0
    try:
        with open(_TEXTS) as f:
            on = False
            while n < 4096:
                line = f.readline()
                if not line:
                    break
                if line.startswith("## "):
                    if on:
                        break
                    on = line[3:].strip() == key
                elif on:
                    n += len(line)
                    out.append(line)
    except OSError:
        pass
    t = "".join(out).strip()
    if not t:
        return "[%s] %s" % (key, args) if args else "[%s]" % key
    try:
        return t % args if args else t
    except (TypeError, ValueError):
        return "%s %s" % (t, args)


def menu():
    """The command menu for ``setMyCommands``: ``[(name, description)]`` from /help."""
    out = []
    for line in text("help").split("\n"):
        if line.startswith("/"):
            name, _, desc = line[1:].partition(" - ")
            out.append((name, desc))
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
    if t0 is None:
        up = "not started"
    else:
        s = seam.ticks_diff(seam.ticks_ms(), t0) // 1000
        up = "%d d %d h %d min" % (s // 86400, s // 3600 % 24, s // 60 % 60)
    return "mimi %s on %s\nLLM: %s\nheap: %s\nuptime: %s\nWiFi: %s\nclock: %s\n%s" % (
        VERSION, seam.describe(), ai, heap(), up, wifi(),
        "synced" if seam.clock_synced() else "not set yet (no NTP)", usage.summary())


def wifi():
    """``"connected to <ssid>, address <ip>, signal <n> dBm"`` or why not."""
    try:
        up, ip, rssi = seam.wifi_status()
    except Exception as e:  # noqa: BLE001 - a status line must not fail
        return "unknown (%s)" % e
    ssid = config.get("wifi_ssid") or "none"
    if up:
        return "connected to %s, address %s, signal %s dBm" % (ssid, ip, rssi)
    return "not connected (network set: %s)" % ssid


def heap():
    """``"12345 B used, 67890 B free"``, or a note on CPython."""
    seam.collect()
    free = seam.mem_free()
    if free is None:
        return "not measurable on CPython"
    return "%d B used, %d B free" % (seam.mem_alloc() or 0, free)


def _model():
    return config.get("model") or "(the provider's default)"


def model(name=None):
    """Show the model, or set it to ``name`` (kept across reboots)."""
    from mimi import llm

    name = str(name or "").strip()
    if not name:
        return "model: %s (provider %s). Set one with /model <name>." % (_model(), config.get("provider"))
    if " " in name:
        return "A model name is one word, e.g. /model claude-sonnet-4-5"
    try:
        llm.switch(model=name)
    except ValueError as e:
        return str(e)
    return "model set to %s (provider %s)" % (name, config.get("provider"))


def provider(name=None):
    """Show the provider, or switch to preset ``name`` (kept across reboots).

    Switching starts from the new provider's own model and address (names differ between
    providers) until ``model`` sets one.
    """
    from mimi import llm

    cur = config.get("provider")
    name = str(name or "").strip().lower()
    if not name:
        return "provider: %s. Choose with /provider <name>, one of: %s" % (cur, ", ".join(sorted(llm.PRESETS)))
    if name == cur:
        return "provider is already %s (model: %s)" % (cur, _model())
    try:
        llm.switch(provider=name)
    except ValueError as e:
        return str(e)
    out = "provider set to %s; model reset to its default" % name
    if not llm.PRESETS[name][3]:
        return out + ("" if config.get("base_url") else text("no_url"))
    if config.get("key_" + name) or config.get("api_key"):
        return out
    return out + text("no_key")


def new_session(channel, chat_id):
    """Start a fresh conversation for this chat; the old one moves to the archive."""
    from mimi.storage import sessions

    try:
        a = sessions.clear(sessions.key_for(channel, chat_id))
    except (OSError, ValueError) as e:
        return "could not start afresh: %s" % e
    return "Started a fresh conversation." + (" The old one is archived (%s)." % a if a else "")


def memory(cap=3000):
    """The long-term memory (MEMORY.md), at most ``cap`` bytes."""
    from mimi.storage import memory as mem

    try:
        b = mem.read_memory(cap + 1).encode()
    except (OSError, ValueError) as e:
        return "could not read MEMORY.md: %s" % e
    if not b.strip():
        return "MEMORY.md is empty: I have not noted anything long-term yet."
    if len(b) <= cap:
        return b.decode()
    while cap and (b[cap] & 0xC0) == 0x80:  # not inside a UTF-8 character
        cap -= 1
    return b[:cap].decode() + "\n[... more in /data/memory/MEMORY.md]"


def parse(text):
    """Split a chat command: ``"/model@mimi_bot  gpt-4o"`` -> ``("model", "gpt-4o")``.

    Returns None when ``text`` is not a command (does not start with ``/``).
    """
    if not text or text[0] != "/":
        return None
    head, _, rest = text[1:].partition(" ")
    name = head.split("@", 1)[0].lower()
    return (name, rest.strip()) if name else None


def run(text_, channel, chat_id):
    """Answer a chat command, or return None when ``text_`` is not one of ours (so it
    goes to the agent as an ordinary message)."""
    p = parse(text_)
    name, arg = p or ("", "")
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
        return new_session(channel, chat_id)
    if name == "memory":
        return memory()
    return None
