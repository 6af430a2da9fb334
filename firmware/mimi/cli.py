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
(``name <needed> [optional]``; ``...`` takes the rest of the line), ``_do`` holds what
each one does, and the module's ``__getattr__`` gives each as a function.
"""
from micropython import const

from mimi import commands, config, log, seam

# Tunables (config.py holds those shared by several modules and the settings).
_CLI_ASK_TIMEOUT_MS = const(300000)
_CLI_LINE_MAX = const(512)

out = print  # where the console writes (tests collect it)


def __getattr__(name):
    """Every command of texts.md's ``## cli`` section as a function: ``cli.set_tz("+01:00")``.

    A module-level ``__getattr__`` (PEP 562) instead of one wrapper per command saves
    about 80 bytes of heap per command. MicroPython has it wherever
    ``MICROPY_MODULE_GETATTR`` is on, the default from the "core features" ROM level up
    (py/mpconfig.h), so on the ESP32 port (extra features) and the unix port; CPython
    since 3.7. ``help()`` lists the commands (the REPL's tab completion does not).
    """
    spec = "" if name[:1] == "_" else _spec(name)
    if not spec:
        raise AttributeError(name)
    return lambda *a: _run(name, a, spec)


def _spec(name):
    """The usage line of command ``name`` (texts.md), or ''."""
    for line in commands.text("cli").split("\n"):
        if line.split(" ", 1)[0] == name:
            return line
    return ""


def _run(name, a, spec=None):
    """Run command ``name`` with arguments ``a`` (tuple) and print what it gives."""
    spec = spec or _spec(name)
    while a and a[-1] is None:  # cli.session_clear(None) is session_clear without its argument
        a = a[:-1]
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
        out(log.visible(line))  # files a chat wrote (memory_read, skill_show): shown, not obeyed


def _do(name, x, a):
    """What command ``name`` does with its first argument ``x`` (all of them: ``a``).

    Dispatches on the name's parts, ``session_clear`` -> ("session", "clear"), which are
    short (interned, free) strings. Returns the text to print: a str, a list of lines
    (empty: the ``none_<name>`` text), or None. Raises on bad input (``TypeError``
    prints the usage too).
    """
    from mimi import app, llm
    from mimi.storage import fs, sessions

    group, _, verb = name.partition("_")
    rows = []  # what a listing command prints, one line each
    if group == "set":
        for v in a:
            if not commands.plain(str(v)):
                raise ValueError(commands.text("ctrl", verb))
        if verb == "wifi":
            config.set("wifi_ssid", x)
            config.set("wifi_pass", a[1] if len(a) > 1 else "")
            out(commands.text("wifi_set", x))
            seam.wifi_connect(x, config.get("wifi_pass"), config.BOOT_WIFI_WAIT_MS)
            return commands.wifi()
        if verb == "provider":
            return commands.provider(x)
        if verb == "model":
            return commands.model(x)
        if verb == "feishu":  # the app's id and secret, and for Lark its domain
            config.set("feishu_app_id", x.strip())
            config.set("feishu_app_secret", a[1].strip())
            if len(a) > 2:
                config.set("feishu_domain", a[2].strip().rstrip("/"))
            return "feishu_app_id set to %s, feishu_app_secret to %s, feishu_domain %s%s" % (
                x.strip(), config.masked("feishu_app_secret"), config.get("feishu_domain"),
                "" if app.state["feishu"] else "; restart to connect (restart)")
        x = x.strip()
        if verb == "api_key":
            llm.set_key(x)
            verb = "key_" + config.get("provider")
        elif verb == "base_url":
            llm.switch(base_url=x)
        elif verb == "tz":
            from mimi import clock

            clock.set_tz(x)
        elif verb == "share_memory" or verb == "cross_chat":  # docs/trust.md
            if x not in ("none", "all", "people" if verb == "share_memory" else "owner"):
                raise TypeError(verb)
            config.set(verb, x)
        elif verb == "web_password":  # the web app and the gateway (mimi.web.auth)
            from mimi.web import auth

            auth.set_password(x)
            return "web_password set to %s%s" % (config.masked(verb), "" if app.state["web"] else
                                                   "; restart to start the web app (restart)")
        elif verb == "mqtt_url":  # checked as the board will read it at the next start
            from mimi.net import mqtt

            x = "" if x in ("off", "none") else x
            if x:
                mqtt.parse(x)  # ValueError when malformed
            config.set(verb, x)
        elif verb in ("proxy", "no_proxy"):
            from mimi.net import tunnel

            if verb == "proxy":
                x = "" if tunnel.parse(x) is None else x  # ValueError when malformed
            config.set(verb, x)
        else:  # tg_token, search_key
            if verb == "tg_token" and not token_ok(x):
                return commands.text("bad_token")
            config.set(verb, x)
        return "%s set to %s" % (verb, config.masked(verb))
    if group == "wifi":
        if verb != "scan":
            return commands.wifi()
        for s, r, c in seam.wifi_scan():
            rows.append("%4d dBm  ch %2d  %s" % (r, c, s))
    if group == "allow":
        return commands.allow(x)
    if group == "deny":
        return commands.deny(x)
    if group == "chats":
        for c in commands.allowed():
            rows.append(c + ("  (owner)" if c == commands.owner() else ""))
    if group == "pair":
        return commands.text("pair", commands.new_code())
    if group == "config":
        if verb == "show":
            p = llm.current()
            for n in sorted(config.SETTINGS):  # a dict's order differs between runtimes
                v = config.masked(n)
                if not v and n in ("model", "base_url"):  # what is used instead
                    v = "- (default: %s)" % (p.model if n == "model" else p.base_url)
                rows.append("%-16s %s" % (n, v or "-"))
            return rows
        if x != "all" and x not in config.SETTINGS:
            return "no setting '%s'" % x
        config.reset(None if x == "all" else x)
        llm.reset()  # the next call reads provider, model, key and address again
        return "%s reset" % x
    if group == "skill":
        from mimi.storage import skills

        if x is None:
            for it in skills.list():
                rows.append("%-20s %s" % it)
            return rows
        t, cut, _ = fs.read_text(skills.path(x.strip()), 4096)
        return t + ("\n[...]" if cut else "")
    if group == "memory":
        if x is None:
            return commands.memory(4096)
        from mimi.storage import memory

        memory.write_memory(x)
        return "%d bytes" % len(x.encode())
    if group == "session":
        if x is not None:
            return commands.new_session(x.strip())
        for k in sessions.keys():
            rows.append("%-24s %d B" % (k, fs.size(sessions.path_for(k)) or 0))
    if group == "cron":
        from mimi.storage import cronjobs

        for j in cronjobs.list():
            rows.append("%s %s -> %s %s: %s" % (j.get("id"), cronjobs.kind_text(j), j.get("channel"),
                                                j.get("chat_id"), j.get("text")))
    if group == "rule":  # rule_list, rule_pause, rule_resume, rule_remove (the console is the owner)
        from mimi.rules import chat

        ctx = {"channel": "cli", "chat_id": config.CLI_CHAT_ID}
        if verb == "list":
            t = chat.rule_list({}, ctx)
            return [] if t == "no rules" else t.split("\n")
        if verb == "remove":
            return chat.rule_remove({"id": x.strip()}, ctx)
        return chat.rule_pause({"id": x.strip(), "paused": verb == "pause"}, ctx)
    if group == "web" and verb == "token":  # shown once: only its hash is kept
        from mimi.web import auth

        return commands.text("web_token", auth.new_token())
    if group == "heap":
        return commands.heap()
    if group == "status":
        return commands.status()
    if group == "heartbeat":
        return app.heartbeat().run_now()
    if group == "tool":
        import json
        from mimi.tools import registry

        args = a[1] if len(a) > 1 else {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise TypeError(commands.text("json"))
        app.init()  # loads and registers the tools (not in safe mode)
        t, err = registry.execute(x, args, {"channel": "cli", "chat_id": config.CLI_CHAT_ID,
                                            "session": "cli_console", "bus": app.state["bus"]})
        return t if not err or t[:5] == "Error" else "error: " + t
    if group == "ask":  # as the cli channel; replies are printed as they come
        msg = {"channel": "cli", "chat_id": config.CLI_CHAT_ID, "text": x.strip(), "session": "cli_console"}
        box = app.inbox
        del box[:]
        app.asking[0] = True
        try:
            if not app.running():
                app.handle_inline(msg)  # here and now; its replies are in box
            elif not app.state["bus"].inbound.put(msg):
                return commands.text("busy")
            t0 = seam.ticks_ms()
            got = None  # when the last reply came (an agent without "idle" is done 1.5 s later)
            while seam.ticks_diff(seam.ticks_ms(), t0) < _CLI_ASK_TIMEOUT_MS:
                m = box.pop(0) if box else None
                if m is None:
                    if got is not None and seam.ticks_diff(seam.ticks_ms(), got) > 1500:
                        return None
                    seam.wait_ms(50)
                    continue
                kind = m.get("kind")
                if kind == "idle":
                    return None
                if kind == "text":  # shown, not obeyed (mimi.log.visible)
                    out(log.visible(m.get("text")))
                    got = seam.ticks_ms()
                elif kind == "note":
                    out("(%s)" % log.visible(m.get("text")))
            return commands.text("no_reply")
        finally:
            app.asking[0] = False
    if group == "start":
        return "started" if app.init() and app.start() else commands.text("nostart")
    if group == "stop":
        return "stopped" if app.stop() else "stopping"
    if group == "safe":
        from mimi import boot

        if x not in ("on", "off", True, False):
            raise TypeError("on or off")
        boot.set_safe_flag(x in ("on", True))
        return "%s set to %s" % (name, x)
    if group == "restart":
        return app.restart()
    if group == "help":
        return "usage: " + _spec(x) if x and _spec(x) else commands.text("cli")
    return rows


def token_ok(x):
    """True when ``x`` (str) looks like a Telegram bot token, ``123456789:AAH...``: digits,
    a colon, at least 5 more characters, no space. The console's check, which the setup
    portal (mimi.web.setup_form) shares."""
    head, _, tail = x.partition(":")
    return head.isdigit() and len(tail) >= 5 and " " not in x


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
    if len(line) > _CLI_LINE_MAX:
        out("too long")
        return True
    name, _, rest = line.partition(" ")
    if name in ("exit", "quit"):
        return False
    spec = _spec(name)
    if not spec:
        out("unknown command '%s'" % name)
        return True
    words = spec.split("  ")[0].split()
    if "..." in words[-1]:  # the last argument takes the rest of the line
        a = rest.split(None, len(words) - 2)
    else:
        try:
            a = split(rest)
        except ValueError as e:  # an unclosed quote
            out(e)
            out("usage: " + spec)
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
        app.stop()
