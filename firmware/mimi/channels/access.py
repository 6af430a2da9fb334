"""Who may talk to the assistant: the allow list, the owner, and the pairing code.

Closed by default: a chat reaches the agent only when its id is in the setting
``allowed_chats`` (comma-separated ids; groups have negative ids). The owner allows a
chat on the serial console (``allow <id>``) or by sending, from that chat, the one-time
pairing code the console prints (``new_code``; void after ``TG_PAIR_TRIES`` wrong
tries, so it cannot be guessed). The first chat allowed becomes the owner
(``owner_chat``), who gets heartbeat reports. Ids are kept as text: Telegram ids exceed
32 bits. (The rate limit on replies to strangers is the Telegram channel's.)
"""
import os

from mimi import commands, config, log

_code = [None, 0]  # the pairing code (str, or None when there is none) and wrong tries at it


def _id(chat_id):
    """``chat_id`` as canonical text (``"123"``, ``"-100456"``); ``ValueError`` if it is not an id."""
    s = str(chat_id).strip()
    if not s.lstrip("-").isdigit() or len(s) > 21:
        raise ValueError(commands.text("bad_id", s))
    return str(int(s))


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
    """The owner's chat id (str): the setting, else the first allowed chat, else ''."""
    return config.get("owner_chat") or (allowed() + [""])[0]


def allow(chat_id):
    """Allow ``chat_id``; the first chat allowed becomes the owner. Returns a message.

    Raises ``ValueError`` for a malformed id or a full list (the setting holds 512 bytes).
    """
    cid = _id(chat_id)
    ids = allowed()
    if cid in ids:
        return commands.text("allowed", cid, "already ")
    config.set("allowed_chats", ",".join(ids + [cid]))  # ValueError when over the store's limit
    if config.get("owner_chat"):
        return commands.text("allowed", cid, "")
    config.set("owner_chat", cid)
    return commands.text("owner", cid)


def deny(chat_id):
    """Remove ``chat_id`` from the allow list (and as owner). Returns a message."""
    cid = _id(chat_id)
    ids = allowed()
    if cid not in ids:
        return commands.text("not_in", cid)
    ids.remove(cid)
    config.set("allowed_chats", ",".join(ids))
    if config.get("owner_chat") == cid:
        config.set("owner_chat", (ids + [""])[0])
    return commands.text("denied", cid, owner() or "nobody")


def new_code():
    """Make a fresh 6-digit pairing code (the old one is void) and return it. Print it on
    the console only: whoever sends it from Telegram gets their chat allowed."""
    _code[0] = "%06d" % (int.from_bytes(os.urandom(4), "big") % 1000000)
    _code[1] = 0
    return _code[0]


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
