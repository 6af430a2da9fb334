"""What the chat commands and the serial CLI share: /start, /help, /status, /model,
/provider, /new, /memory, the fixed texts, and who may talk to the assistant.

Each command returns the text to show (str) and raises nothing for bad input: a wrong
argument comes back as a short message saying what is expected. Telegram calls
``run(text, channel, chat_id)`` for a message that starts with ``/``; the CLI calls the
functions directly. Provider and model changes go through ``mimi.llm.switch`` (which
checks, persists and rebuilds the provider); tokens come from ``mimi.llm.usage``.

Access: closed by default. A chat reaches the agent only when its id is in the setting
``allowed_chats`` (comma-separated ids; Telegram groups have negative ids; Feishu chats
are ``fs_ou_...`` for a person, ``fs_oc_...`` for a group, see ``mimi.channels.feishu``). The owner allows a
chat on the serial console (``allow <id>``) or by sending, from that chat, the one-time
pairing code the console prints (``new_code``; void after ``TG_PAIR_TRIES`` wrong
tries, so it cannot be guessed). The first private chat allowed becomes the owner
(``owner_chat``; a group never does: its members are many), who gets heartbeat reports
and is the only chat that may change the board-wide LLM settings (``/model <name>``,
``/provider <name>``; the serial console may too; anyone allowed may look). Ids are kept
as text: Telegram ids exceed 32 bits. (The rate limit on replies to strangers is the
Telegram channel's.)

The wording lives in ``texts.md`` beside this module, read when needed (``text``): help
pages, the command menu, replies, the heartbeat prompt. Code holds only short strings
(a string constant costs heap for as long as the module is loaded; see docs/heap.md).
"""
import os

from mimi import config, data_path, log, seam

_TEXTS = data_path(__file__, "texts.md")


def text(key, *args):
    """The text under ``## key`` in texts.md, %-formatted with ``args`` (str).

    Reads the file line by line (it is ours: short lines, short sections). A missing file
    or key gives ``[key]`` and the arguments, so a broken deploy still says something.
    """
    out = []
    try:
        with open(_TEXTS) as f:
            on = False
            for line in f:
                if line[:3] == "## ":
                    if on:
                        break
                    on = line[3:].strip() == key
                elif on:
                    out.append(line)
    except OSError:
        pass
    t = "".join(out).strip()
    if not t:
        return "[%s] %s" % (key, args)
    return t % args if args else t


def menu():
    """The command menu for ``setMyCommands``: ``[(name, description)]``, the ``/name -
    description`` lines of the /help text."""
    out = []
    for ln in text("help").split("\n"):
        if ln[:1] == "/":
            out.append(ln[1:].split(" - ", 1))
    return out


def status():
    """Several lines: runtime (MicroPython's version, with a warning below 1.26), LLM
    (provider, model, address), memory (``heap()``), flash free, uptime, WiFi, Telegram,
    clock, tokens today; Feishu and MQTT when set up; the running version and the one before
    (``mimi.ota``)."""
    from mimi import VERSION, app, llm
    from mimi.llm import usage

    t0 = app.state["started_ms"]
    s = seam.elapsed_ms(app.state["started"]) // 1000 if t0 is not None and app.state.get("started") else 0
    tg = app.state["telegram"]
    fl = seam.flash_free()
    fs = app.state.get("feishu")
    mq = app.state.get("mqtt")  # mimi.net.mqtt while mqtt_url is set
    v = seam.version()
    return text("status", VERSION, seam.describe() + (" (older than 1.26: update)" if v and v < (1, 26) else ""),
                llm.describe(), heap(),
                "%d KB free" % (fl // 1024) if fl is not None else "n/a",
                "%d d %d h %d min" % (s // 86400, s // 3600 % 24, s // 60 % 60) if t0 else "stopped", wifi(),
                tg.describe() if tg else "not started", "synced" if seam.clock_synced() else "not set",
                usage.summary()) + ("\nFeishu: " + fs.describe() if fs else "") + (
        "\nMQTT: " + mq.client().describe() if mq and mq.client() else "") + _web() + _version_line()


def _web():
    """The web app's line of /status ('' while it is off)."""
    from mimi import app

    if app.state.get("web") is None:
        return ""
    from mimi.web import server

    return "\nWeb: " + server.describe()


def _version_line():
    """A last line ``version: <git description> (before: ...)`` (``mimi.ota.describe``), or "" when
    the update state cannot be read."""
    try:
        from mimi import ota

        return "\nversion: " + ota.describe()
    except Exception:  # noqa: BLE001 - a status line must not fail
        return ""


def wifi():
    """The WiFi link in words: network, address and signal, or why not."""
    try:
        up, ip, rssi = seam.wifi_status()
    except Exception as e:  # noqa: BLE001 - a status line must not fail
        return "error: %s" % e
    return text("wifi_up", config.get("wifi_ssid"), ip, rssi) if up else \
        text("wifi_down", config.get("wifi_ssid") or "none")


def heap():
    """Three lines on RAM (``seam.ram()``, after a collection), in KB: the GC heap (used,
    free now, and how much more it can take: on the board it grows on demand, so its
    free figure alone understates it), PSRAM free, and internal RAM free with its largest
    free block (thread stacks and TLS sessions each need one there). "n/a" where the
    runtime cannot tell (the GC heap on CPython); on a host the last two are the stand-in's.
    """
    r = seam.ram()
    g = r["gc_grow"]
    out = "heap: n/a" if r["gc_free"] is None else "heap: %d KB used, %d KB free, %s" % (
        r["gc_used"] // 1024, r["gc_free"] // 1024, "fixed size" if not g else "can grow by %d KB" % (g // 1024))
    p = r["psram"]
    out += "\nPSRAM: " + ("none" if p is None else "%d KB free of %d KB" % (p[1] // 1024, p[0] // 1024))
    i = r["internal"]
    return out + "\ninternal RAM: " + ("n/a" if i is None else "%d KB free, largest block %d KB" % (
        i[1] // 1024, i[2] // 1024))


def plain(s):
    """True when ``s`` has no control characters (line breaks, tabs, NUL, DEL): settings
    end up in HTTP headers and URLs, where a line break would start a header of its own."""
    for ch in s:
        if ch < " " or ch == "\x7f":
            return False
    return True


def model(name=None):
    """Show the model, or set it to ``name`` (kept across reboots)."""
    from mimi import llm

    name = str(name or "").strip()
    if not name or " " in name or not plain(name):
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
    name, _, url = str(name or "").strip().partition(" ")  # "/provider custom http://host:8000/v1"
    name = name.lower()
    if not plain(url):
        return text("ctrl", "provider")
    if not name or name == cur and not url:
        return text("prov_same" if name else "provider", cur, ", ".join(llm.PRESETS))
    try:
        llm.switch(provider=name, base_url=url.strip() or None)
    except ValueError as e:
        return str(e)
    if llm.PRESETS.index(name) >= 4:  # a local server: no key, but its address matters
        return text("prov_set", name) + ("" if config.get("base_url") else text("no_url"))
    return text("prov_set", name) + ("" if config.get("key_" + name) else text("no_key"))


def new_session(key):
    """Start session ``key`` afresh; the old one moves to the archive. Returns a message."""
    from mimi.storage import sessions

    try:
        return text("new", sessions.clear(key) or "none")
    except (OSError, ValueError) as e:
        return "error: %s" % e


def memory(cap=3000, turn=None):
    """The long-term memory (MEMORY.md), at most ``cap`` bytes (cut at a character). For a
    ``turn`` (``{"channel", "chat_id"}``) of a chat other than the owner's: that chat's own
    notes, unless the owner shares theirs (``mimi.policy``)."""
    from mimi import policy
    from mimi.storage import fs

    path = policy.memory_dir(turn) + "/MEMORY.md" if turn else config.MEMORY_PATH
    try:
        t, cut, _ = fs.read_text(path, cap)
    except fs.NotFound:
        t, cut = "", False
    except (OSError, ValueError) as e:
        return "error: %s" % e
    if not t.strip():
        return text("mem_empty") if path == config.MEMORY_PATH else text("memory_of_this_chat", path)
    return t + "\n" + text("mem_more") if cut else t


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
    if name == "start" or name == "help":
        return text(name)
    if name == "status":
        return status()
    if name in ("model", "provider") and arg and channel not in ("cli", "gateway") and str(chat_id) != owner():
        # the console and the LAN gateway (its password is the owner's: docs/security.md) are the owner
        return text("owner_only", name)  # board-wide settings: the owner's
    if name == "model":
        return model(arg)
    if name == "provider":
        return provider(arg)
    if name == "new":
        from mimi.storage import sessions

        return new_session(sessions.key_for(channel, chat_id))
    if name == "memory":
        return memory(turn={"channel": channel, "chat_id": str(chat_id)})
    if name == "rules":
        return rules(arg, channel, chat_id)
    return None


def rules(arg, channel, chat_id):
    """``/rules``: the automation rules this chat may see (the owner: all); ``/rules pause
    <id>`` and ``/rules resume <id>`` (the owner, or the chat that made the rule). A
    problem comes back as the text to show."""
    from mimi.rules import chat

    ctx = {"channel": channel, "chat_id": str(chat_id)}
    verb, _, rid = str(arg or "").strip().partition(" ")
    try:
        if verb in ("pause", "resume") and rid.strip():
            return chat.rule_pause({"id": rid.strip(), "paused": verb == "pause"}, ctx)
        if verb:
            return "/rules, /rules pause <id>, /rules resume <id>"
        t = chat.rule_list({}, ctx)
        return text("none_rule_list") if t == "no rules" else t
    except ValueError as e:
        return str(e)


# -- access ----------------------------------------------------------------------------

_code = [None, 0]  # the pairing code (str, or None when there is none) and wrong tries at it


def _id(chat_id):
    """``chat_id`` as canonical text (``"123"``, ``"-100456"``, ``"fs_ou_ab12"``); ``ValueError``
    if it is not an id."""
    s = str(chat_id).strip()
    if s[:6] in ("fs_ou_", "fs_oc_") and 6 < len(s) <= 40:  # Feishu: an open_id or a chat_id
        for c in s:
            if not (c.isalpha() or c.isdigit() or c == "_" or c == "-") or c > "z":
                raise ValueError(text("bad_id", s))
        return s
    if not s.lstrip("-").isdigit() or len(s) > 21 or not int(s):  # no chat has id 0
        raise ValueError(text("bad_id", s))
    return str(int(s))


def is_group(chat_id):
    """True for a group chat's id: negative (Telegram), ``fs_oc_...`` (Feishu; a person's is
    ``fs_ou_...``)."""
    return chat_id.startswith("-") or chat_id.startswith("fs_oc_")


def allowed():
    """The allowed chat ids (list of str), in the order they were added."""
    v = config.get("allowed_chats")
    return v.split(",") if v else []  # written by allow/deny only: no empty items


def is_allowed(chat_id):
    try:
        return _id(chat_id) in allowed()
    except ValueError:
        return False


def owner():
    """The owner's chat id (str): the setting, else the first allowed private chat, else ''."""
    o = config.get("owner_chat")
    for c in [] if o else allowed():
        if c and not is_group(c):
            return c
    return o


def allow(chat_id):
    """Allow ``chat_id``; the first private chat allowed becomes the owner. Returns a message.

    Raises ``ValueError`` for a malformed id or a full list (the setting holds 512 bytes).
    """
    cid = _id(chat_id)
    ids = allowed()
    if cid in ids:
        return text("allowed", cid, "already ")
    config.set("allowed_chats", ",".join(ids + [cid]))  # ValueError when over the store's limit
    if config.get("owner_chat") or is_group(cid):
        return text("allowed", cid, "")
    config.set("owner_chat", cid)
    return text("owner", cid)


def deny(chat_id):
    """Remove ``chat_id`` from the allow list (and as owner). Returns a message."""
    ids = allowed()
    cid = str(chat_id).strip()
    if cid not in ids:  # as stored (an id allowed before the check of _id was stricter), else canonical
        cid = _id(cid)
    if cid not in ids:
        return text("not_in", cid)
    ids.remove(cid)
    config.set("allowed_chats", ",".join(ids))
    if config.get("owner_chat") == cid:
        config.set("owner_chat", "")
        config.set("owner_chat", owner())  # the next private chat, if any
    return text("denied", cid, owner() or "nobody")


def new_code():
    """Make a fresh 6-digit pairing code (the old one is void) and return it. Print it on
    the console only: whoever sends it from Telegram gets their chat allowed."""
    _code[0] = "%06d" % (int.from_bytes(os.urandom(4), "big") % 1000000)
    _code[1] = 0
    return _code[0]


def code():
    """The pairing code in force (a new one when there is none): what a second channel's
    banner shows, so it does not void the first one's."""
    return _code[0] or new_code()


def try_code(chat_id, text):
    """True (and the chat allowed, the code used up) when ``text`` is the pairing code.

    Text that does not look like a code (6 digits) is not counted as a try.
    """
    t = text.strip()
    if _code[0] is None or len(t) != 6 or not t.isdigit():
        return False
    if t == _code[0]:
        _code[0] = None
        allow(chat_id)
        return True
    _code[1] += 1
    if _code[1] >= config.TG_PAIR_TRIES:
        _code[0] = None
        log.warn("access", "code void")  # cli.pair() makes a new one
    return False
