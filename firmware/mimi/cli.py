"""The serial console: commands as functions for the REPL, and a ``mimi>`` line console.

At the REPL (the assistant keeps running in its threads)::

    >>> from mimi import cli
    >>> cli.set_wifi("home", "secret")
    >>> cli.ask("what time is it?")
    >>> cli.run()            # a line console: mimi> set_tz +01:00

Every command prints its result and returns None. A missing or wrong argument prints the
command's usage, and an error inside prints one line, never a traceback. Secrets are
shown masked. ``help()`` lists the commands. In ``run()``, Ctrl-C stops the assistant
(``app.stop()``) and returns to the REPL; ``exit`` leaves the console only.
"""
import json

from mimi import config, log, seam

TAG = "cli"

# name -> (arguments, what it does). Arguments in <> are needed, in [] optional; "..."
# takes the rest of the line.
USAGE = {
    "set_wifi": ("<ssid> <password>", "store WiFi credentials and connect"),
    "wifi_status": ("", "connection, address, signal"),
    "wifi_scan": ("", "list the networks in range"),
    "set_tg_token": ("<token>", "store the Telegram bot token (from @BotFather)"),
    "set_api_key": ("<key>", "store the LLM API key"),
    "set_provider": ("<name>", "LLM provider: anthropic, openai, openrouter, deepseek, ollama, lmstudio, custom"),
    "set_model": ("<name>", "LLM model name"),
    "set_base_url": ("<url>", "API address for OpenAI-compatible servers (http:// or https://)"),
    "set_search_key": ("<key>", "web search API key"),
    "set_tz": ("<offset>", "your time zone as a UTC offset, e.g. +01:00"),
    "allow": ("<chat_id>", "let a Telegram chat talk to the assistant"),
    "deny": ("<chat_id>", "remove a chat from the allow list"),
    "chats": ("", "the allowed chats and the owner"),
    "pair": ("", "print a one-time pairing code to send from Telegram"),
    "config_show": ("", "all settings (secrets masked)"),
    "config_reset": ("<name|all>", "forget a setting (or all of them)"),
    "skill_list": ("", "installed skills"),
    "skill_show": ("<name>", "a skill's text"),
    "memory_read": ("", "the long-term memory, MEMORY.md"),
    "memory_write": ("<text...>", "replace MEMORY.md"),
    "session_list": ("", "stored conversations"),
    "session_clear": ("<key>", "archive a conversation and start it afresh"),
    "heap_info": ("", "free and used RAM"),
    "cron_list": ("", "scheduled jobs"),
    "heartbeat_trigger": ("", "check HEARTBEAT.md now"),
    "tool_exec": ("<tool> [json args...]", "run a tool, e.g. tool_exec get_time {}"),
    "ask": ("<text...>", "chat with the assistant from here"),
    "status": ("", "what /status shows"),
    "start": ("", "start the assistant's threads"),
    "stop": ("", "stop the assistant's threads"),
    "safe_mode": ("<on|off>", "boot into safe mode (no app) until turned off"),
    "restart": ("", "reset the board"),
    "help": ("[command]", "this list"),
}
_REST = ("memory_write", "ask")  # the whole rest of the line is one argument

out = print  # where the console writes (tests collect it)


def _usage(name):
    args, what = USAGE[name]
    out("usage: %s %s  -- %s" % (name, args, what) if args else "usage: %s  -- %s" % (name, what))


def _text(x):
    return isinstance(x, str) and x.strip() != ""


def _safe(fn):
    """Run a command so that an error prints one line instead of a traceback."""

    name = fn.__name__

    def wrapper(*args, **kw):
        try:
            fn(*args, **kw)
        except KeyboardInterrupt:
            raise
        except TypeError as e:  # called with the wrong arguments (or a bug: say both)
            out("error: %s" % e)
            if name in USAGE:
                _usage(name)
        except Exception as e:  # noqa: BLE001 - the console never shows a traceback
            out("error: %s" % (str(e) or type(e).__name__))

    return wrapper


def _set(name, value, shown=None):
    config.set(name, value)
    out("%s set to %s" % (name, shown if shown is not None else config.masked(name)))


# -- WiFi ------------------------------------------------------------------------------


@_safe
def set_wifi(ssid=None, password=""):
    if not _text(ssid) or not isinstance(password, str):
        return _usage("set_wifi")
    config.set("wifi_ssid", ssid)
    config.set("wifi_pass", password)
    out("WiFi set to %s; connecting..." % ssid)
    ok = seam.wifi_connect(ssid, password, config.BOOT_WIFI_WAIT_MS)
    out("connected" if ok else "not connected yet; the assistant keeps trying")


@_safe
def wifi_status():
    up, ip, rssi = seam.wifi_status()
    if up:
        out("connected to %s, address %s, signal %s dBm" % (config.get("wifi_ssid"), ip, rssi))
    else:
        out("not connected (network set: %s)" % (config.get("wifi_ssid") or "none"))


@_safe
def wifi_scan():
    nets = seam.wifi_scan()
    if not nets:
        out("no networks in range")
    for ssid, rssi, ch in nets:
        out("%4d dBm  ch %2d  %s" % (rssi, ch, ssid))


# -- settings ----------------------------------------------------------------------------


@_safe
def set_tg_token(token=None):
    if not _text(token):
        return _usage("set_tg_token")
    t = token.strip()
    head, _, tail = t.partition(":")
    if not head.isdigit() or len(tail) < 5 or " " in t:
        out("that does not look like a bot token (digits, a colon, then letters): ask @BotFather")
        return
    _set("tg_token", t)
    out("Telegram starts polling with it within a few seconds")


@_safe
def set_api_key(key=None):
    if not _text(key) or " " in key.strip():
        return _usage("set_api_key")
    try:
        from mimi import llm
    except ImportError:
        return _set("api_key", key.strip())
    llm.set_key(key.strip())
    out("API key for %s set (%s****)" % (config.get("provider"), key.strip()[:4]))


@_safe
def set_provider(name=None):
    if not _text(name):
        return _usage("set_provider")
    from mimi import commands

    out(commands.provider(name))


@_safe
def set_model(name=None):
    if not _text(name):
        return _usage("set_model")
    from mimi import commands

    out(commands.model(name))


@_safe
def set_base_url(url=None):
    if not _text(url):
        return _usage("set_base_url")
    u = url.strip()
    if not (u.startswith("http://") or u.startswith("https://")) or " " in u:
        out("a base URL starts with http:// or https://, e.g. http://192.168.1.20:11434/v1")
        return
    try:
        from mimi import llm
    except ImportError:
        return _set("base_url", u.rstrip("/"))
    llm.switch(base_url=u)
    out("base_url set to %s" % config.get("base_url"))


@_safe
def set_search_key(key=None):
    if not _text(key):
        return _usage("set_search_key")
    _set("search_key", key.strip())


@_safe
def set_tz(tz=None):
    if not _text(tz):
        return _usage("set_tz")
    from mimi import clock

    out("time zone set to UTC%s" % clock.set_tz(tz))


@_safe
def config_show():
    for name in config.SETTINGS:
        v = config.masked(name)
        out("%-16s %s" % (name, v if v != "" else "-"))


@_safe
def config_reset(name=None):
    if not _text(name):
        return _usage("config_reset")
    if name == "all":
        config.reset()
        out("all settings are back to their defaults")
    elif name in config.SETTINGS:
        config.reset(name)
        out("%s is back to its default (%s)" % (name, config.masked(name) or "empty"))
    else:
        out("no setting '%s'; config_show lists them" % name)


# -- access ------------------------------------------------------------------------------


@_safe
def allow(chat_id=None):
    if chat_id is None or str(chat_id).strip() == "":
        return _usage("allow")
    from mimi.channels import access

    out(access.allow(chat_id))


@_safe
def deny(chat_id=None):
    if chat_id is None or str(chat_id).strip() == "":
        return _usage("deny")
    from mimi.channels import access

    out(access.deny(chat_id))


@_safe
def chats():
    from mimi.channels import access

    ids = access.allowed()
    if not ids:
        out("no chat is allowed yet: allow <chat_id>, or send the pairing code (pair) from Telegram")
    own = access.owner()
    for c in ids:
        out(c + ("  (owner)" if c == own else ""))


@_safe
def pair():
    from mimi import app

    code = app.pairing().new()
    out("pairing code: %s  (send it to the bot from your Telegram chat; it works once)" % code)


# -- files -------------------------------------------------------------------------------


@_safe
def skill_list():
    from mimi.storage import skills

    items = skills.list()
    if not items:
        out("no skills in /data/skills")
    for name, title in items:
        out("%-20s %s" % (name, title))


@_safe
def skill_show(name=None):
    if not _text(name):
        return _usage("skill_show")
    from mimi.storage import fs, skills

    text, cut, _ = fs.read_text(skills.path(name.strip()), 4096)
    out(text + ("\n[... cut at 4 KB]" if cut else ""))


@_safe
def memory_read():
    from mimi import commands

    out(commands.memory(4096))


@_safe
def memory_write(text=None):
    if not isinstance(text, str):
        return _usage("memory_write")
    from mimi.storage import memory

    memory.write_memory(text)
    out("MEMORY.md written (%d bytes)" % len(text.encode()))


@_safe
def session_list():
    from mimi.storage import fs, sessions

    keys = sessions.keys()
    if not keys:
        out("no conversations stored")
    for k in keys:
        out("%-24s %6d bytes" % (k, fs.size(sessions.path_for(k))))


@_safe
def session_clear(key=None):
    if not _text(key):
        return _usage("session_clear")
    from mimi.storage import sessions

    archived = sessions.clear(key.strip())
    out("%s started afresh%s" % (key, (" (archived as %s)" % archived) if archived else ""))


@_safe
def cron_list():
    from mimi.storage import cronjobs

    jobs = cronjobs.list()
    if not jobs:
        out("no scheduled jobs")
    for j in jobs:
        out("%-5s %-28s -> %s %s: %s" % (j.get("id"), cronjobs.kind_text(j), j.get("channel"),
                                            j.get("chat_id"), j.get("text")))


# -- runtime -----------------------------------------------------------------------------


@_safe
def heap_info():
    seam.collect()
    free = seam.mem_free()
    if free is None:
        out("heap: not measurable on CPython")
        return
    used = seam.mem_alloc() or 0
    out("heap: %d B used, %d B free, %d B total" % (used, free, used + free))


@_safe
def status():
    from mimi import commands

    out(commands.status())


@_safe
def heartbeat_trigger():
    from mimi import app

    out(app.heartbeat().run_now())


@_safe
def tool_exec(name=None, args="{}"):
    if not _text(name):
        return _usage("tool_exec")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as e:
            out("the arguments must be a JSON object, e.g. {\"path\": \"/data/x\"}: %s" % e)
            return
    from mimi import app
    from mimi.tools import registry

    app.register_tools()
    text, is_error = registry.execute(name, args, _ctx())
    out(("error: " if is_error and not text.startswith("Error") else "") + text)


def _ctx():
    from mimi import app

    return {"channel": "cli", "chat_id": config.CLI_CHAT_ID, "session": _session(), "bus": app.state["bus"]}


def _session():
    from mimi.storage import sessions

    return sessions.key_for("cli", config.CLI_CHAT_ID)


@_safe
def start():
    from mimi import app

    if app.running():
        out("the assistant is already running")
    elif app.init():
        app.start()


@_safe
def stop():
    from mimi import app

    out("stopped" if app.stop() else "stopping (a turn is still finishing)")


@_safe
def safe_mode(on=None):
    if on not in ("on", "off", True, False):
        return _usage("safe_mode")
    from mimi import boot

    boot.set_safe_flag(on in ("on", True))
    out("safe mode %s at the next boot" % ("ON" if on in ("on", True) else "off"))


@_safe
def restart():
    from mimi import app

    out("stopping the assistant and resetting the board...")
    app.restart()


# -- talking to the assistant ------------------------------------------------------------

@_safe
def ask(text=None):
    if not _text(text):
        return _usage("ask")
    from mimi import app

    from mimi.channels import console

    msg = {"channel": "cli", "chat_id": config.CLI_CHAT_ID, "text": text.strip(), "session": _session()}
    console.clear()
    if not app.running():
        out(app.handle_inline(msg) or "(no reply)")
        return
    console.asking[0] = True
    try:
        if not app.state["bus"].inbound.put(msg):
            out("the assistant is busy; try again in a moment")
            return
        _wait_reply(console)
    finally:
        console.asking[0] = False


def _wait_reply(console):
    t0 = seam.ticks_ms()
    got_text_at = None
    while seam.ticks_diff(seam.ticks_ms(), t0) < config.CLI_ASK_TIMEOUT_MS:
        m = console.take()
        if m is None:
            if got_text_at is not None and seam.ticks_diff(seam.ticks_ms(), got_text_at) > 1500:
                return  # a reply came and no "idle" followed: done anyway
            seam.sleep_ms(50)
            continue
        kind = m.get("kind")
        if kind == "text":
            out(m.get("text", ""))
            got_text_at = seam.ticks_ms()
        elif kind == "note":
            out("(%s)" % m.get("text", ""))
        elif kind == "idle":
            return
    out("(no reply within %d s; it will be printed when it comes)" % (config.CLI_ASK_TIMEOUT_MS // 1000))


# -- help and the line console -----------------------------------------------------------


def help(name=None):  # noqa: A001 - the console's own word for it
    if _text(name) and name in USAGE:
        return _usage(name)
    out("commands (at the REPL: cli.name(args); in cli.run(): name args):")
    for n in USAGE:
        args, what = USAGE[n]
        out("  %-18s %-22s %s" % (n, args, what))


def split(line):
    """Split a console line into words; "double" or 'single' quotes keep spaces.

    Returns a list of str; ``ValueError`` for an unclosed quote.
    """
    out = []
    cur = []
    quote = None
    have = False
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote = ch
            have = True
        elif ch in " \t":
            if have or cur:
                out.append("".join(cur))
                cur = []
                have = False
        else:
            cur.append(ch)
    if quote:
        raise ValueError("a quote is not closed")
    if have or cur:
        out.append("".join(cur))
    return out


def execute(line):
    """Run one console line (``set_tz +01:00``). Unknown commands and wrong arguments
    print a hint; returns False for ``exit``/``quit``, else True."""
    line = line.strip()
    if not line or line.startswith("#"):
        return True
    if len(line) > config.CLI_LINE_MAX:
        out("line too long (over %d characters)" % config.CLI_LINE_MAX)
        return True
    name, _, rest = line.partition(" ")
    if name in ("exit", "quit"):
        return False
    if name not in USAGE:
        out("unknown command '%s'; help lists them" % name)
        return True
    fn = globals()[name]
    if name in _REST:
        args = [rest.strip()] if rest.strip() else []
    elif name == "tool_exec":
        tool, _, js = rest.strip().partition(" ")
        args = [tool] + ([js] if js.strip() else []) if tool else []
    else:
        try:
            args = split(rest)
        except ValueError as e:
            out("%s; usage follows" % e)
            return _usage(name) or True
    spec = USAGE[name][0]
    need = spec.count("<")
    most = need + spec.count("[")
    if len(args) < need or len(args) > most:
        _usage(name)
        return True
    fn(*args)
    return True


def run():
    """A line console with a ``mimi>`` prompt until ``exit``.

    Ctrl-C stops the assistant cleanly and returns to the REPL (``start`` runs it again).
    """
    out("mimi console: 'help' lists the commands, 'exit' returns to the REPL, Ctrl-C stops the assistant")
    while True:
        try:
            line = input("mimi> ")
        except EOFError:
            return
        except KeyboardInterrupt:
            _interrupted()
            return
        try:
            if not execute(line):
                return
        except KeyboardInterrupt:
            _interrupted()
            return


def _interrupted():
    from mimi import app

    out("\nCtrl-C: stopping the assistant (start() or cli.start() runs it again)")
    try:
        app.stop()
    except Exception as e:  # noqa: BLE001
        log.exc(TAG, "stop failed", e)
