"""What a Telegram ``Message`` says, as the model reads it, and where its answer goes
(pure functions; ``mimi.channels.telegram`` calls them for each message it takes).

Source: https://core.telegram.org/bots/api#message and the objects it holds.
- Replies (``reply_to_message``, ``external_reply``, ``quote``): the text starts with one
  line naming whom it answers and what it quotes: the part the user picked (``quote``),
  else the replied-to text or caption, at most ``TG_QUOTE_MAX_CHARS`` characters,
  between quotation marks and marked as quoted, so the model knows it is not the user's
  own words. (The poll answer keeps at most ``_TG_NESTED_STRING_MAX_BYTES`` of any text
  nested that deep: ``Pruner``, so a short reply to a very long message still fits the
  poll buffer.)
- ``forward_origin``: "[Forwarded from NAME]" first. ``sender_chat`` (a channel posting
  in its discussion group, an anonymous admin) names the sender instead of ``from``.
- Entities: the text keeps what formatting hides: a ``text_link``'s URL after its text,
  a ``text_mention``'s user after the name; code and the rest keep their text as it is.
- Names (first and last name, title, username) are cut to ``TG_NAME_MAX_BYTES`` and lose
  line breaks: a name cannot fill the prompt or open a line of its own.
- Forum topics: a message with ``is_topic_message`` came from a topic, whose id
  (``message_thread_id``) the answer must carry; everything else (the General topic,
  reply threads of ordinary groups, chats without topics) must be answered without one
  (sendMessage: "message_thread_id ... for forum supergroups and private chats of bots
  with forum topic mode enabled only"; the General topic takes none). Such a chat's id
  here is ``"<chat_id>:<message_thread_id>"`` (``dest``): each topic is its own
  conversation, with its own history (session ``tg_<chat>_<thread>``), and replies and
  reminders go back to it.
- Media the model can use (``media``): a photo (the largest ``PhotoSize`` within
  ``TG_IMAGE_MAX_BYTES`` and ``TG_IMAGE_MAX_SIDE``), an image sent as a file (JPEG, PNG,
  GIF, WebP within the byte cap), a voice note (within ``TG_VOICE_MAX_BYTES``).
- A group upgraded to a supergroup (``migrate``): its allow-list entry, the owner
  setting, its history and its reminders move to the new id.
"""
from micropython import const

from mimi import config
from mimi.channels import tgformat

# Tunables (config.py holds those shared by several modules and the settings).
_TG_QUOTE_MAX_CHARS = const(400)  # of a replied-to message or quote, shown to the model
_TG_NAME_MAX_BYTES = const(64)  # of a name shown to the model (Telegram allows 64 + 64 characters)
_TG_NESTED_STRING_MAX_BYTES = const(2048)  # of a JSON string in a replied-to message or quote (as sent)
_TG_NESTED_ITEMS_MAX = const(8)  # items of an array there (a replied-to message's entities, photo sizes)
TG_IMAGE_MAX_BYTES = const(262144)  # a photo or image file sent to the model
TG_IMAGE_MAX_SIDE = const(1568)  # pixels, the longest side (Anthropic scales larger ones down)
TG_VOICE_MAX_BYTES = const(1048576)  # a voice note sent for transcription (Opus: about 8 minutes)
IMAGE_TYPES = const(" image/jpeg image/png image/gif image/webp ")  # what both vision APIs take


def fix(s):
    """``s`` with its surrogate pairs joined (``tgformat.fix_surrogates``); '' for a non-str."""
    return tgformat.fix_surrogates(s) if isinstance(s, str) else ""


def name(who):
    """A ``User`` or ``Chat`` dict as a short one-line name: "Ann Lee (@ann)", a title."""
    if not isinstance(who, dict):
        return "someone"
    n = fix(who.get("title")) or (fix(who.get("first_name")) + " " + fix(who.get("last_name"))).strip()
    u = who.get("username")
    if isinstance(u, str) and u:
        n = "%s (@%s)" % (n, u) if n else "@" + u
    b = n.replace("\n", " ").replace("\r", " ").encode()
    if len(b) > _TG_NAME_MAX_BYTES:
        from mimi.storage import fs

        b = b[:fs.utf8_end(b, _TG_NAME_MAX_BYTES - 3)] + b"..."
    return str(b, "utf-8") or "someone"


def sender(m, me_id=None):
    """Who wrote message ``m``: "you" (the bot), the ``sender_chat`` (channel, anonymous
    admin), else ``from``."""
    f = m.get("from") if isinstance(m.get("from"), dict) else {}
    if me_id is not None and f.get("id") == me_id:
        return "you"
    return name(m.get("sender_chat") or f)


def expand(text, entities):
    """``text`` with the URL of each ``text_link`` written after its text ("docs
    (https://...)") and the user of each ``text_mention`` after the name ("Ann (user
    123)"). Entity offsets count UTF-16 units (https://core.telegram.org/bots/api#messageentity)."""
    adds = []
    for e in entities if isinstance(entities, list) else ():
        if not isinstance(e, dict) or not isinstance(e.get("offset"), int) or not isinstance(e.get("length"), int):
            continue
        t = e.get("type")
        if t == "text_link" and isinstance(e.get("url"), str):
            add = e["url"]
        elif t == "text_mention" and isinstance(e.get("user"), dict):
            add = "%s, user %s" % (name(e["user"]), e["user"].get("id"))
        else:
            continue
        adds.append((e["offset"] + e["length"], fix(add)))
    if not adds:
        return text
    adds.sort(key=lambda a: a[0])
    b = text.encode()
    out = []
    units = last = 0
    k = 0
    for i in range(len(b) + 1):
        while k < len(adds) and adds[k][0] <= units and (i == len(b) or b[i] & 0xC0 != 0x80):
            if b[last:i].decode().rstrip().endswith(adds[k][1]):  # the text is the URL already
                k += 1
                continue
            out.append(b[last:i])
            out.append((" (%s)" % adds[k][1]).encode())
            last = i
            k += 1
        if i < len(b) and b[i] & 0xC0 != 0x80:
            units += 2 if b[i] >= 0xF0 else 1
    out.append(b[last:])
    return b"".join(out).decode()


def _cut(s, n):
    """At most ``n`` characters of ``s``, one line per line break kept, "..." when cut."""
    s = s.strip()
    return s if len(s) <= n else s[:n].rstrip() + "..."


def _what(m):
    """A replied-to message's text or caption, or what it holds ("a photo")."""
    t = fix(m.get("text")) or fix(m.get("caption"))
    if t:
        return expand(t, m.get("entities") or m.get("caption_entities"))
    for k in ("photo", "voice", "document", "video", "sticker", "audio", "location", "poll"):
        if k in m:
            return "(a %s)" % k
    return ""


def lead(m, me_id=None):
    """The lines put before the text of ``m`` for the model: who it was forwarded from,
    what it replies to or quotes. "" when neither."""
    out = []
    o = m.get("forward_origin")
    if isinstance(o, dict):
        who = o.get("sender_user") or o.get("sender_chat") or o.get("chat")
        n = name(who) if who else fix(o.get("sender_user_name")) or "someone"
        out.append("[Forwarded from %s]\n" % n)
    r = m.get("reply_to_message")
    x = m.get("external_reply")
    q = m.get("quote")
    if isinstance(r, dict) or isinstance(x, dict):
        src = r if isinstance(r, dict) else x
        who = sender(src, me_id) if isinstance(r, dict) else name((x.get("origin") or {}).get(
            "sender_user") or (x.get("origin") or {}).get("chat") or x.get("chat"))
        t = q.get("text") if isinstance(q, dict) else None
        if isinstance(t, str) and t:
            t, how = expand(fix(t), q.get("entities")), "quoting the part"
        else:
            t, how = _what(src), "which said"
        if who == "you":
            who = "your (the assistant's) message"
        else:
            who = "a message from " + who
        if t:  # (a reply to a message with nothing to show says nothing)
            out.append('[Replying to %s, %s (quoted, not the user\'s words): "%s"]\n' % (
                who, how, _cut(t, _TG_QUOTE_MAX_CHARS)))
    return "".join(out)


def thread(m):
    """The topic id an answer to ``m`` must carry, or None (see the module doc)."""
    t = m.get("message_thread_id")
    return t if m.get("is_topic_message") is True and type(t) is int and t > 0 else None


def dest(chat_id, thread_id=None):
    """The channel's chat id for a chat (and topic): ``"-100123"`` or ``"-100123:45"``."""
    return str(chat_id) if thread_id is None else "%s:%d" % (chat_id, thread_id)


def split_dest(d):
    """``dest`` undone: ``"-100123:45"`` -> ``("-100123", 45)``; ``"42"`` -> ``("42", None)``."""
    d = str(d)
    c, _, t = d.partition(":")
    return (c, int(t)) if t.isdigit() else (d, None)


def _size(x, cap):
    """The file's size is within ``cap``, or unknown (the download is capped then)."""
    s = x.get("file_size")
    return s is None or type(s) is int and 0 < s <= cap


def media(m):
    """What of ``m`` the model can be given, or None: ``{"kind": "image"|"voice",
    "file_id", "size" (bytes, or None when Telegram did not say), "mime"}``, or ``{"kind":
    "too_big"|"type", "what"}`` for an image or voice note it cannot be given (too large,
    a file type the vision APIs refuse)."""
    p = m.get("photo")
    if isinstance(p, list) and p:
        best = None
        for s in p:  # smallest first, as Telegram lists them; keep the largest that fits
            if isinstance(s, dict) and isinstance(s.get("file_id"), str) and _size(s, TG_IMAGE_MAX_BYTES) and \
                    max(s.get("width") or 0, s.get("height") or 0) <= TG_IMAGE_MAX_SIDE:
                best = s
        if best is None:
            return {"kind": "too_big", "what": "photo"}
        return {"kind": "image", "file_id": best["file_id"], "size": best.get("file_size"), "mime": "image/jpeg"}
    d = m.get("document")
    if isinstance(d, dict) and str(d.get("mime_type") or "")[:6] == "image/":
        if " %s " % d["mime_type"] not in IMAGE_TYPES:
            return {"kind": "type", "what": d["mime_type"]}
        if not _size(d, TG_IMAGE_MAX_BYTES):
            return {"kind": "too_big", "what": "image"}
        return {"kind": "image", "file_id": d.get("file_id"), "size": d.get("file_size"), "mime": d["mime_type"]}
    v = m.get("voice")
    if isinstance(v, dict) and isinstance(v.get("file_id"), str):
        if not _size(v, TG_VOICE_MAX_BYTES):
            return {"kind": "too_big", "what": "voice note"}
        return {"kind": "voice", "file_id": v["file_id"], "size": v.get("file_size"),
                "mime": str(v.get("mime_type") or "audio/ogg")}
    return None


def migrate(old, new):
    """Move chat ``old`` (a group) to ``new`` (the supergroup it became): its place in the
    allow-list, the ``owner_chat`` setting, its history files (``tg_<old>*.jsonl`` when the
    new chat has none yet) and its reminders. Returns True when ``old`` was allowed (then
    nothing of it is left under the old id), False when nothing was moved."""
    from mimi import commands

    old, new = str(old), str(new)
    ids = commands.allowed()
    if old not in ids:
        return False
    ids = [new if c == old else c for c in ids]
    config.set("allowed_chats", ",".join([c for i, c in enumerate(ids) if c not in ids[:i]]))
    if config.get("owner_chat") == old:
        config.set("owner_chat", new)
    from mimi.storage import cronjobs, fs, sessions

    for name_ in fs.listdir("/data/sessions") if fs.size("/data/sessions") is not None else ():
        n = name_[0]
        k = sessions.key_for("telegram", old)
        if n == k + ".jsonl" or n.startswith(k + "_") and n.endswith(".jsonl"):
            dst = "/data/sessions/" + sessions.key_for("telegram", new) + n[len(k):]
            if fs.size(dst) is None:
                fs.rename("/data/sessions/" + n, dst)
    cronjobs.rechat(old, new)
    return True


class Pruner:
    """A byte filter for a poll answer: copies JSON into ``out`` (a bytearray) keeping at
    most ``_TG_NESTED_STRING_MAX_BYTES`` of every string in an object a message holds (the
    text of a replied-to message, a quote: depth 5, counting the answer, ``result``, the
    update and the message) and ``_TG_NESTED_ITEMS_MAX`` items of every array in those (that
    message's entities, photo sizes), so the answer stays valid JSON and
    fits the poll buffer. A string is cut only between characters, never inside an escape.
    ``feed(piece)`` for each piece of the body in order; ``n``: bytes kept; ``full``:
    ``out`` ran out of room (what was kept is the answer's start)."""

    def __init__(self, out):
        self.out = out
        self.n = 0
        self.full = False
        self.stack = []  # per open container: [b"{" or b"[" as an int, items seen]
        self.s = -1  # outside a string: -1; in one: the bytes of it kept so far
        self.esc = 0  # in an escape: -1 right after the backslash, else the hex digits still due
        self.drop = False  # the string under way passed its cap: the rest of it goes
        self.skip = 0  # the depth of an array past its cap, whose rest is dropped; 0: none

    def _put(self, data):
        if self.skip or self.drop:
            return
        k = min(len(data), len(self.out) - self.n)
        if k < len(data):
            self.full = True
        self.out[self.n:self.n + k] = data[:k]
        self.n += k
        if self.s >= 0:
            self.s += k

    def feed(self, piece):
        p = bytes(piece)
        i, n = 0, len(p)
        st = self.stack
        while i < n:
            b = p[i]
            if self.s < 0:  # between values: follow the nesting
                i += 1
                if b == 0x22:
                    self._put(p[i - 1:i])
                    self.s = 0
                    continue
                if b == 0x7B or b == 0x5B:  # { [
                    st.append([b, 1])
                elif b == 0x7D or b == 0x5D:  # } ]
                    if self.skip and len(st) == self.skip:
                        self.skip = 0  # the closing bracket of an array cut short is kept
                    if st:
                        st.pop()
                elif b == 0x2C and not self.skip and len(st) >= 6 and st[-1][0] == 0x5B:  # a comma in an array
                    st[-1][1] += 1
                    if st[-1][1] > _TG_NESTED_ITEMS_MAX:
                        self.skip = len(st)  # the rest of this array goes, this comma too
                        continue
                self._put(p[i - 1:i])
                continue
            nested = len(st) >= 5  # answer, result, update, message, then the object in it
            if self.esc:  # inside an escape: kept whole (\n, \uXXXX)
                k = 1 if self.esc < 0 else min(self.esc, n - i)
                self._put(p[i:i + k])
                self.esc = (4 if b == 0x75 else 0) if self.esc < 0 else self.esc - k
                i += k
                continue
            if b == 0x22:  # the closing quote
                self.drop = False
                self._put(p[i:i + 1])
                self.s = -1
                i += 1
                continue
            if b == 0x5C:  # a backslash starts an escape
                if nested and self.s >= _TG_NESTED_STRING_MAX_BYTES:
                    self.drop = True
                self._put(p[i:i + 1])
                self.esc = -1
                i += 1
                continue
            j1, j2 = p.find(b'"', i), p.find(b"\\", i)
            j = min(j1 if j1 >= 0 else n, j2 if j2 >= 0 else n)  # a run of plain bytes
            if nested and not self.drop and j - i > _TG_NESTED_STRING_MAX_BYTES - self.s:
                k = i + max(0, _TG_NESTED_STRING_MAX_BYTES - self.s)
                while k > i and p[k] & 0xC0 == 0x80:  # not inside a character
                    k -= 1
                while k == i and k < j and p[k] & 0xC0 == 0x80:  # ...nor one begun in the piece before
                    k += 1
                self._put(p[i:k])
                self.drop = True
                i = k
                continue
            self._put(p[i:j])
            i = j
