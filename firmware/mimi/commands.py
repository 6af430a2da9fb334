"""What the chat commands and the serial CLI share: /status, /model, /provider, /new,
/memory, /help.

Each function returns the text to show (str) and raises nothing for bad input: a wrong
argument comes back as a short message saying what is expected. Telegram calls
``run(text, channel, chat_id)`` for a message that starts with ``/``; the CLI calls the
functions directly.

Provider and model changes go through ``mimi.llm.switch`` (which checks them, persists
them and rebuilds the provider); tokens come from ``mimi.llm.usage``. While ``mimi.llm``
is not installed, the settings are written directly.
"""
from mimi import config, seam

TAG = "cmd"

# The provider presets mimi knows (docs/internals.md, "LLM").
PROVIDERS = ("anthropic", "openai", "openrouter", "deepseek", "ollama", "lmstudio", "custom")
_LOCAL = ("ollama", "lmstudio", "custom")  # may run without an API key
_MODEL_MAX = 100

COMMANDS = config.TG_COMMANDS



def _llm():
    try:
        from mimi import llm
    except ImportError:
        return None
    return llm


def _providers():
    llm = _llm()
    return tuple(sorted(llm.PRESETS)) if llm is not None else PROVIDERS


# -- the commands ------------------------------------------------------------------------


def help_text():
    lines = ["Commands:"]
    for name, desc in COMMANDS:
        lines.append("/%s - %s" % (name, desc))
    lines.append("Anything else is a message for me.")
    return "\n".join(lines)


def start_text():
    return ("Hi, I am mimi, a personal assistant running on a small board. "
            "Write to me as you would to a person; I remember what matters in my notes.\n\n"
            + help_text())


def _uptime():
    try:
        from mimi import app
        t0 = app.state.get("started_ms")
    except ImportError:
        t0 = None
    if t0 is None:
        return "not started"
    s = seam.ticks_diff(seam.ticks_ms(), t0) // 1000
    if s < 3600:
        return "%d min %d s" % (s // 60, s % 60)
    if s < 86400:
        return "%d h %d min" % (s // 3600, (s % 3600) // 60)
    return "%d d %d h" % (s // 86400, (s % 86400) // 3600)


def _heap():
    free = seam.mem_free()
    if free is None:
        return "n/a (CPython)"
    used = seam.mem_alloc() or 0
    return "%d KB free of %d KB" % (free // 1024, (free + used) // 1024)


def _wifi():
    try:
        up, ip, rssi = seam.wifi_status()
    except Exception as e:  # noqa: BLE001 - a status line must not fail
        return "unknown (%s)" % e
    if not up:
        return "not connected"
    ssid = config.get("wifi_ssid") or "?"
    return "%s, %s%s" % (ssid, ip, (", %d dBm" % rssi) if rssi is not None else "")


def model_text():
    m = config.get("model")
    return m if m else "(the provider's default)"


def _tokens():
    try:
        from mimi.llm import usage
    except ImportError:
        return "tokens today: not counted (no LLM part installed)"
    return usage.summary()


def _llm_line():
    llm = _llm()
    if llm is not None:
        try:
            return "LLM: " + llm.describe()
        except Exception as e:  # noqa: BLE001 - a status line must not fail
            return "LLM: %s (%s)" % (config.get("provider"), e)
    return "LLM: %s, model %s" % (config.get("provider"), model_text())


def status():
    """Several lines: runtime, LLM (provider, model, address), heap, uptime, WiFi, clock,
    tokens today."""
    from mimi import VERSION

    return "\n".join((
        "mimi %s on %s" % (VERSION, seam.describe()),
        _llm_line(),
        "heap: %s" % _heap(),
        "uptime: %s" % _uptime(),
        "WiFi: %s" % _wifi(),
        "clock: %s" % ("synced" if seam.clock_synced() else "not set yet (no NTP)"),
        _tokens(),
    ))


def model(name=None):
    """Show the model, or set it to ``name`` (kept across reboots)."""
    if name is None or not str(name).strip():
        return "model: %s (provider %s). Set one with /model <name>." % (model_text(), config.get("provider"))
    name = str(name).strip()
    if len(name) > _MODEL_MAX or " " in name:
        return "A model name is one word of at most %d characters, e.g. /model claude-sonnet-4-5" % _MODEL_MAX
    llm = _llm()
    if llm is not None:
        try:
            llm.switch(model=name)
        except ValueError as e:
            return str(e)
    else:
        config.set("model", name)
    return "model set to %s (provider %s)" % (name, config.get("provider"))


def provider(name=None):
    """Show the provider, or switch to ``name`` (a preset; kept across reboots).

    Switching starts from the new provider's own model and address (names differ between
    providers) until ``model`` sets one.
    """
    cur = config.get("provider")
    names = _providers()
    if name is None or not str(name).strip():
        return "provider: %s. Choose with /provider <name>, one of: %s" % (cur, ", ".join(names))
    name = str(name).strip().lower()
    if name not in names:
        return "unknown provider '%s'; choose one of: %s" % (name, ", ".join(names))
    if name == cur:
        return "provider is already %s (model: %s)" % (cur, model_text())
    llm = _llm()
    if llm is not None:
        try:
            llm.switch(provider=name)
        except ValueError as e:
            return str(e)
    else:
        config.set("provider", name)
        config.set("model", "")
    out = "provider set to %s; model reset to its default" % name
    if name not in _LOCAL and not (config.get("api_key") or _key_for(name)):
        out += ". No API key is set: on the serial console, set_api_key <key>"
    if name in _LOCAL and not config.get("base_url"):
        out += ". Check its address on the serial console: set_base_url <url>"
    return out


def _key_for(name):
    try:
        return config.get("key_" + name)
    except KeyError:  # no per-provider keys in this build
        return ""


def new_session(channel, chat_id):
    """Start a fresh conversation for this chat; the old one moves to the archive."""
    from mimi.storage import sessions

    key = sessions.key_for(channel, chat_id)
    try:
        archived = sessions.clear(key)
    except (OSError, ValueError) as e:
        return "could not start afresh: %s" % e
    if archived:
        return "Started a fresh conversation. The old one is archived (%s)." % archived
    return "Started a fresh conversation."


def memory(cap=3000):
    """The long-term memory (MEMORY.md), at most ``cap`` bytes."""
    from mimi.storage import memory as mem

    try:
        text = mem.read_memory(cap + 1)
    except (OSError, ValueError) as e:
        return "could not read MEMORY.md: %s" % e
    if not text.strip():
        return "MEMORY.md is empty: I have not noted anything long-term yet."
    b = text.encode()
    if len(b) > cap:
        end = cap
        while end > 0 and (b[end] & 0xC0) == 0x80:
            end -= 1
        text = b[:end].decode() + "\n[... more in /data/memory/MEMORY.md]"
    return text


def parse(text):
    """Split a chat command: ``"/model@mimi_bot  gpt-4o"`` -> ``("model", "gpt-4o")``.

    Returns None when ``text`` is not a command (does not start with ``/``).
    """
    if not text or text[0] != "/":
        return None
    head, _, rest = text[1:].partition(" ")
    name = head.split("@", 1)[0].lower()
    if not name:
        return None
    return name, rest.strip()


def run(text, channel, chat_id):
    """Answer a chat command, or return None when ``text`` is not one of ours (so it goes
    to the agent as an ordinary message)."""
    p = parse(text)
    if p is None:
        return None
    name, arg = p
    if name == "start":
        return start_text()
    if name == "help":
        return help_text()
    if name == "status":
        return status()
    if name == "model":
        return model(arg or None)
    if name == "provider":
        return provider(arg or None)
    if name == "new":
        return new_session(channel, chat_id)
    if name == "memory":
        return memory()
    return None
