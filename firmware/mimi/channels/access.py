"""Who may talk to the assistant: the allow list, the owner, pairing codes, and the
rate limit on replies to strangers.

Closed by default: a chat reaches the agent only when its id is in the setting
``allowed_chats`` (comma-separated ids; groups have negative ids). The owner allows a
chat on the serial console (``allow <id>``) or by sending, from that chat, the one-time
pairing code the console prints. The first chat allowed becomes the owner
(``owner_chat``), who gets heartbeat reports. Ids are kept as text: Telegram ids exceed
32 bits.
"""
import os

from micropython import const

from mimi import config, log, seam

TAG = "access"
_CODE_DIGITS = const(6)


def normalise(chat_id):
    """``chat_id`` as canonical text (``"123"``, ``"-100456"``); ``ValueError`` if it is not an id."""
    s = str(chat_id).strip()
    body = s[1:] if s.startswith("-") else s
    if not body.isdigit() or len(body) > 20:
        raise ValueError("a chat id is a whole number such as 123456789 (groups: -100...), got '%s'" % s)
    return str(int(s))


def allowed():
    """The allowed chat ids (list of str), in the order they were added."""
    v = config.get("allowed_chats")
    return [x for x in v.split(",") if x] if v else []


def is_allowed(chat_id):
    try:
        return normalise(chat_id) in allowed()
    except ValueError:
        return False


def owner():
    """The owner's chat id (str): the setting, else the first allowed chat, else ''."""
    o = config.get("owner_chat")
    if o:
        return o
    a = allowed()
    return a[0] if a else ""


def allow(chat_id):
    """Allow ``chat_id``; the first chat allowed becomes the owner. Returns a message.

    Raises ``ValueError`` for a malformed id or a full list (the setting holds 512 bytes).
    """
    cid = normalise(chat_id)
    ids = allowed()
    if cid in ids:
        return "chat %s is already allowed" % cid
    ids.append(cid)
    config.set("allowed_chats", ",".join(ids))  # ValueError when over the store's limit
    msg = "chat %s allowed" % cid
    if not config.get("owner_chat"):
        config.set("owner_chat", cid)
        msg += " (and is the owner: heartbeat reports go there)"
    log.info(TAG, "%s", msg)
    return msg


def deny(chat_id):
    """Remove ``chat_id`` from the allow list (and as owner). Returns a message."""
    cid = normalise(chat_id)
    ids = allowed()
    if cid not in ids:
        return "chat %s was not allowed" % cid
    ids.remove(cid)
    config.set("allowed_chats", ",".join(ids))
    msg = "chat %s removed" % cid
    if config.get("owner_chat") == cid:
        config.set("owner_chat", ids[0] if ids else "")
        msg += "; owner is now %s" % (ids[0] if ids else "nobody")
    log.info(TAG, "%s", msg)
    return msg


class Pairing:
    """A one-time code the owner sends from Telegram to allow that chat.

    ``new()`` makes a fresh code (printed on the console, never sent anywhere);
    ``try_code(chat_id, text)`` allows the chat when ``text`` is the code. After
    ``TG_PAIR_TRIES`` wrong codes the code is void, so it cannot be guessed.
    """

    def __init__(self):
        self.code = None
        self.tries = 0

    def new(self):
        n = int.from_bytes(os.urandom(4), "big") % (10 ** _CODE_DIGITS)
        self.code = "%06d" % n
        self.tries = 0
        return self.code

    def looks_like_code(self, text):
        t = text.strip()
        return len(t) == _CODE_DIGITS and t.isdigit()

    def try_code(self, chat_id, text):
        """True (and the chat allowed, the code used up) when ``text`` is the code."""
        if self.code is None or not self.looks_like_code(text):
            return False
        if text.strip() == self.code:
            self.code = None
            allow(chat_id)
            return True
        self.tries += 1
        if self.tries >= config.TG_PAIR_TRIES:
            self.code = None
            log.warn(TAG, "pairing code void after %d wrong tries; make a new one: cli.pair()", self.tries)
        return False


class Limiter:
    """At most one reply per chat per ``every_ms`` to chats that are not allowed.

    Remembers at most ``size`` chats (the oldest is forgotten first), so a flood of
    strangers costs bounded RAM and gets bounded replies.
    """

    def __init__(self, every_ms, size):
        self.every_ms = every_ms
        self.size = size
        self._last = {}  # chat id -> ticks_ms of the last reply

    def ok(self, chat_id, now_ms):
        t = self._last.get(chat_id)
        if t is not None and seam.ticks_diff(now_ms, t) < self.every_ms:
            return False
        if t is None and len(self._last) >= self.size:
            oldest = None
            for k in self._last:
                if oldest is None or seam.ticks_diff(self._last[oldest], self._last[k]) > 0:
                    oldest = k
            del self._last[oldest]
        self._last[chat_id] = now_ms
        return True
