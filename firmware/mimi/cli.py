"""The serial console: commands as functions for the REPL, and a ``mimi>`` line console.

At the REPL (the assistant keeps running in its threads)::

    >>> from mimi import cli
    >>> cli.set_wifi("home", "secret")
    >>> cli.ask("what time is it?")
    >>> cli.run()            # a line console: mimi> set_tz +01:00

Every command prints its result and returns None. A wrong number of arguments prints the
command's usage, an error inside prints one line, never a traceback. Secrets are shown
masked. ``help()`` lists the commands. In ``run()``, Ctrl-C stops the assistant
(``app.stop()``) and returns to the REPL; ``exit`` leaves the console only.

The commands are one table: their usage lines are the ``## cli`` section of texts.md
(``name <needed> [optional]``; ``...`` takes the rest of the line), and ``_do`` holds
what each one does. The functions below only name them.
"""
from mimi import commands, config, seam

out = print  # where the console writes (tests collect it)


# -- the commands as functions (what each does: _do; usage: texts.md) ---------------------
def set_wifi(*a): _run("set_wifi", a)
def wifi_status(*a): _run("wifi_status", a)
def wifi_scan(*a): _run("wifi_scan", a)
def set_tg_token(*a): _run("set_tg_token", a)
def set_api_key(*a): _run("set_api_key", a)
def set_provider(*a): _run("set_provider", a)
def set_model(*a): _run("set_model", a)
def set_base_url(*a): _run("set_base_url", a)
def set_search_key(*a): _run("set_search_key", a)
def set_tz(*a): _run("set_tz", a)
def allow(*a): _run("allow", a)
def deny(*a): _run("deny", a)
def chats(*a): _run("chats", a)
def pair(*a): _run("pair", a)
def config_show(*a): _run("config_show", a)
def config_reset(*a): _run("config_reset", a)
def skill_list(*a): _run("skill_list", a)
def skill_show(*a): _run("skill_show", a)
def memory_read(*a): _run("memory_read", a)
def memory_write(*a): _run("memory_write", a)
def session_list(*a): _run("session_list", a)
def session_clear(*a): _run("session_clear", a)
def heap_info(*a): _run("heap_info", a)
def cron_list(*a): _run("cron_list", a)
def heartbeat_trigger(*a): _run("heartbeat_trigger", a)
def tool_exec(*a): _run("tool_exec", a)
def ask(*a): _run("ask", a)
def status(*a): _run("status", a)
def start(*a): _run("start", a)
def stop(*a): _run("stop", a)
def safe_mode(*a): _run("safe_mode", a)
def restart(*a): _run("restart", a)
def help(*a): _run("help", a)  # noqa: A001 - the console's own word for it


def _spec(name):
    """The usage line of command ``name`` (texts.md), or ''."""
    for line in commands.text("cli").split("\n"):
        if line.split(" ", 1)[0] == name:
            return line
    return ""


def _run(name, a, spec=None):
    """Run command ``name`` with arguments ``a`` (tuple) and print what it gives."""
    spec = spec or _spec(name)
    head = spec.split("  ")[0]
    if spec and not head.count("<") <= len(a) <= len(head.split()) - 1:
        return out("usage: " + spec)
    try:
        r = _do(name, a[0] if a else None, a)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - the console never shows a traceback
        out("error: %s" % (str(e) or type(e).__name__))
        if isinstance(e, TypeError) and spec:
            out("usage: " + spec)
        return
    if r == []:
        r = commands.text("none_" + name)
    for line in r if isinstance(r, list) else () if r is None else (r,):
        out(line)


def _do(name, x, a):
    """What command ``name`` does with its first argument ``x`` (all of them: ``a``).

    Returns the text to print: a str, a list of lines (empty: the ``none_<name>`` text),
    or None. Raises on bad input (``TypeError`` prints the usage too).
    """
    from mimi import app, llm
    from mimi.channels import access
    from mimi.storage import fs, sessions

    if name == "set_wifi":
        config.set("wifi_ssid", x)
        config.set("wifi_pass", a[1] if len(a) > 1 else "")
        out(commands.text("wifi_set", x))
        seam.wifi_connect(x, config.get("wifi_pass"), config.BOOT_WIFI_WAIT_MS)
        return commands.wifi()
    if name == "wifi_status":
        return commands.wifi()
    if name == "wifi_scan":
        return ["%4d dBm  ch %2d  %s" % (r, c, s) for s, r, c in seam.wifi_scan()]
    if name == "set_tg_token" or name == "set_search_key":
        x = x.strip()
        head, _, tail = x.partition(":")
        if name == "set_tg_token" and (not head.isdigit() or len(tail) < 5 or " " in x):
            return commands.text("bad_token")
        name = name[4:]
        config.set(name, x)
    elif name == "set_api_key":
        llm.set_key(x)
        name = "key_" + config.get("provider")
    elif name == "set_base_url":
        llm.switch(base_url=x)
        name = "base_url"
    elif name == "set_tz":
        from mimi import clock

        clock.set_tz(x)
        name = "tz"
    if name in config.SETTINGS:  # one of the set_ commands above
        return "%s set to %s" % (name, config.masked(name))
    if name == "set_provider":
        return commands.provider(x)
    if name == "set_model":
        return commands.model(x)
    if name == "allow":
        return access.allow(x)
    if name == "deny":
        return access.deny(x)
    if name == "chats":
        own = access.owner()
        return [c + ("  (owner)" if c == own else "") for c in access.allowed()]
    if name == "pair":
        return commands.text("pair", access.new_code())
    if name == "config_show":
        return ["%-16s %s" % (n, config.masked(n) or "-") for n in config.SETTINGS]
    if name == "config_reset":
        if x != "all" and x not in config.SETTINGS:
            return "no setting '%s'" % x
        config.reset(None if x == "all" else x)
        return "%s reset" % x
    if name == "skill_list" or name == "skill_show":
        from mimi.storage import skills

        if x is None:
            return ["%-20s %s" % it for it in skills.list()]
        t, cut, _ = fs.read_text(skills.path(x.strip()), 4096)
        return t + ("\n[...]" if cut else "")
    if name == "memory_read":
        return commands.memory(4096)
    if name == "memory_write":
        from mimi.storage import memory

        memory.write_memory(x)
        return "MEMORY.md: %d bytes" % len(x.encode())
    if name == "session_list":
        return ["%-24s %6d bytes" % (k, fs.size(sessions.path_for(k)) or 0) for k in sessions.keys()]
    if name == "session_clear":
        return commands.new_session(x.strip())
    if name == "cron_list":
        from mimi.storage import cronjobs

        return ["%-5s %-28s -> %s %s: %s" % (j.get("id"), cronjobs.kind_text(j), j.get("channel"), j.get("chat_id"),
                                             j.get("text")) for j in cronjobs.list()]
    if name == "heap_info":
        return "heap: " + commands.heap()
    if name == "status":
        return commands.status()
    if name == "heartbeat_trigger":
        return app.heartbeat().run_now()
    if name == "tool_exec":
        import json
        from mimi.tools import registry

        args = a[1] if len(a) > 1 else {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise TypeError("the arguments are a JSON object")
        app.register_tools()
        t, err = registry.execute(x, args, {"channel": "cli", "chat_id": config.CLI_CHAT_ID,
                                            "session": "cli_console", "bus": app.state["bus"]})
        return t if not err or t[:5] == "Error" else "error: " + t
    if name == "ask":
        return _ask(x)
    if name == "start":
        return "started" if app.init() and app.start() else "not started"
    if name == "stop":
        return "stopped" if app.stop() else "still stopping"
    if name == "safe_mode":
        from mimi import boot

        if x not in ("on", "off", True, False):
            raise TypeError("on or off")
        boot.set_safe_flag(x in ("on", True))
        return "%s set to %s" % (name, x)
    if name == "restart":
        app.restart()
    if name == "help":
        return "usage: " + _spec(x) if x and _spec(x) else commands.text("cli")
    return None


def _ask(text):
    """Chat with the agent as the ``cli`` channel; print its replies as they come."""
    from mimi import app
    from mimi.channels import console

    msg = {"channel": "cli", "chat_id": config.CLI_CHAT_ID, "text": text.strip(), "session": "cli_console"}
    del console.inbox[:]
    if not app.running():
        return app.handle_inline(msg) or "-"
    console.asking[0] = True
    try:
        if not app.state["bus"].inbound.put(msg):
            return commands.text("busy")
        t0 = seam.ticks_ms()
        got = None  # when the last reply came (an agent without "idle" is done 1.5 s later)
        while seam.ticks_diff(seam.ticks_ms(), t0) < config.CLI_ASK_TIMEOUT_MS:
            m = console.take()
            if m is None:
                if got is not None and seam.ticks_diff(seam.ticks_ms(), got) > 1500:
                    return None
                seam.sleep_ms(50)
                continue
            kind = m.get("kind")
            if kind == "idle":
                return None
            if kind == "text":
                out(m.get("text"))
                got = seam.ticks_ms()
            elif kind == "note":
                out("(%s)" % m.get("text"))
        return commands.text("no_reply")
    finally:
        console.asking[0] = False


# -- the line console -------------------------------------------------------------------


def split(line):
    """Split a console line into words; "double" or 'single' quotes keep spaces.

    Returns a list of str; ``ValueError`` for an unclosed quote.
    """
    words = []
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
                words.append("".join(cur))
                cur = []
                have = False
        else:
            cur.append(ch)
    if quote:
        raise ValueError("a quote is not closed")
    if have or cur:
        words.append("".join(cur))
    return words


def execute(line):
    """Run one console line (``set_tz +01:00``). Unknown commands and wrong arguments
    print a hint; returns False for ``exit``/``quit``, else True."""
    line = line.strip()
    if not line or line[0] == "#":
        return True
    if len(line) > config.CLI_LINE_MAX:
        out("line too long")
        return True
    name, _, rest = line.partition(" ")
    if name in ("exit", "quit"):
        return False
    spec = _spec(name)
    if not spec:
        out("unknown command '%s'" % name)
        return True
    words = spec.split("  ")[0].split()[1:]
    if words and "..." in words[-1]:  # the last argument takes the rest of the line
        a = []
        rest = rest.strip()
        while rest and len(a) < len(words) - 1:
            w, _, rest = rest.partition(" ")
            a.append(w)
            rest = rest.strip()
        if rest:
            a.append(rest)
    else:
        try:
            a = split(rest)
        except ValueError as e:
            out("%s; usage: %s" % (e, spec))
            return True
    _run(name, tuple(a), spec)
    return True


def run():
    """A line console with a ``mimi>`` prompt until ``exit``.

    Ctrl-C stops the assistant cleanly and returns to the REPL (``start`` runs it again).
    """
    from mimi import app

    out(commands.text("console"))
    try:
        while execute(input("mimi> ")):
            pass
    except EOFError:
        pass
    except KeyboardInterrupt:
        out("\n" + commands.text("ctrl_c"))
        try:
            app.stop()
        except Exception as e:  # noqa: BLE001
            out("error: %s" % e)
