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
  ``_TG_IMAGE_MAX_BYTES``, 256 KB, and ``_TG_IMAGE_MAX_SIDE``, 1568 pixels), an image sent
  as a file (JPEG, PNG, GIF, WebP within the byte cap), a voice note (within
  ``_TG_VOICE_MAX_BYTES``, 1 MB).
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
_TG_IMAGE_MAX_BYTES = const(262144)  # a photo or image file sent to the model
_TG_IMAGE_MAX_SIDE = const(1568)  # pixels, the longest side (Anthropic scales larger ones down)
_TG_VOICE_MAX_BYTES = const(1048576)  # a voice note sent for transcription (Opus: about 8 minutes)
_IMAGE_TYPES = const(" image/jpeg image/png image/gif image/webp ")  # what both vision APIs take
# (Every name and short string here costs a qstr, interned for good: docs/heap.md.)


def name(d):
    """A ``User`` or ``Chat`` dict as a short one-line name: "Ann Lee (@ann)", a title."""
    n = ""
    if isinstance(d, dict):
        for k in ("title", "first_name", "last_name"):
            if isinstance(d.get(k), str):
                n = (n + " " + tgformat.fix_surrogates(d[k])).strip()
        if isinstance(d.get("username"), str) and d["username"]:
            n = "%s (@%s)" % (n, d["username"]) if n else "@" + d["username"]
    b = n.replace("\n", " ").replace("\r", " ").encode()
    if len(b) > _TG_NAME_MAX_BYTES:
        from mimi.storage import fs

        b = b[:fs.utf8_end(b, _TG_NAME_MAX_BYTES - 3)] + b"..."
    return str(b, "utf-8") or "someone without a name"


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
            t = tgformat.fix_surrogates(e["url"])
        elif t == "text_mention" and isinstance(e.get("user"), dict):
            t = "%s, user %s" % (name(e["user"]), e["user"].get("id"))
        else:
            continue
        adds.append((e["offset"] + e["length"], t))
    if not adds:
        return text
    adds.sort()
    b = text.encode()
    out = []
    units = last = j = 0
    for i in range(len(b) + 1):
        while j < len(adds) and adds[j][0] <= units and (i == len(b) or b[i] & 0xC0 != 0x80):
            if not b[last:i].decode().rstrip().endswith(adds[j][1]):  # (a link whose text is its URL: once)
                out.append(b[last:i])
                out.append((" (%s)" % adds[j][1]).encode())
                last = i
            j += 1
        if i < len(b) and b[i] & 0xC0 != 0x80:
            units += 2 if b[i] >= 0xF0 else 1
    out.append(b[last:])
    return b"".join(out).decode()


def lead(m, me=None):
    """The lines put before the text of ``m`` for the model: who it was forwarded from,
    what it replies to or quotes (the bot's own user id: ``me``). "" when neither."""
    out = []
    o = m.get("forward_origin")
    if isinstance(o, dict):
        d = o.get("sender_user") or o.get("sender_chat") or o.get("chat")
        out.append("[Forwarded from %s]\n" % (name(d) if d else name({"title": o.get("sender_user_name")})))
    r = m.get("reply_to_message")
    x = m.get("external_reply")
    q = m.get("quote")
    if isinstance(r, dict) or isinstance(x, dict):
        if isinstance(r, dict):  # the bot (user id me) itself, else a channel or anonymous admin, else its user
            d = r.get("from") if isinstance(r.get("from"), dict) else {}
            d = None if me is not None and d.get("id") == me else name(r.get("sender_chat") or d)
        else:
            r = x
            d = name((x.get("origin") or {}).get("sender_user") or (x.get("origin") or {}).get("chat") or x.get("chat"))
        d = "your (the assistant's) message" if d is None else "a message from " + d
        t = q.get("text") if isinstance(q, dict) else None
        if isinstance(t, str) and t:
            how = "quoting the part"
            t = expand(tgformat.fix_surrogates(t), q.get("entities"))
        else:  # its text or caption, else what it holds
            how = "which said,"
            t = r.get("text") if isinstance(r.get("text"), str) else r.get("caption")
            if isinstance(t, str) and t:
                t = expand(tgformat.fix_surrogates(t), r.get("entities") or r.get("caption_entities"))
            else:
                t = ""
                for k in ("photo", "voice", "document", "video", "sticker", "audio", "location", "poll"):
                    if k in r:
                        t = "(a %s, not shown)" % k
                        break
        t = t.strip()
        if len(t) > _TG_QUOTE_MAX_CHARS:
            t = t[:_TG_QUOTE_MAX_CHARS].rstrip() + "..."
        if t:  # (a reply to a message with nothing to show says nothing)
            out.append('[Replying to %s, %s (quoted, not the user\'s words): "%s"]\n' % (d, how, t))
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


def media(m):
    """What of ``m`` the model can be given, or None: ``{"kind": "image"|"voice",
    "file_id", "size" (bytes, or None when Telegram did not say), "mime", "cap"}`` (the
    most bytes it may have), or ``{"kind": "too_big"|"type", "name", "cap"}`` for an image
    or voice note it cannot be given (too large, a file type the vision APIs refuse)."""
    p = m.get("photo")
    d = m.get("document")
    v = m.get("voice")
    cap = _TG_IMAGE_MAX_BYTES
    if isinstance(p, list) and p:
        best = None
        for x in p:  # smallest first, as Telegram lists them; keep the largest that fits
            n = x.get("file_size") if isinstance(x, dict) else 0
            if isinstance(x, dict) and isinstance(x.get("file_id"), str) and (n is None or 0 < n <= cap) and \
                    max(x.get("width") or 0, x.get("height") or 0) <= _TG_IMAGE_MAX_SIDE:
                best = x
        if best is None:
            return {"kind": "too_big", "name": "photo", "cap": cap}
        return {"kind": "image", "file_id": best["file_id"], "size": best.get("file_size"), "mime": "image/jpeg",
                "cap": cap}
    if isinstance(d, dict) and str(d.get("mime_type"))[:5] == "image":
        n = d.get("file_size")
        if " %s " % d["mime_type"] not in _IMAGE_TYPES:
            return {"kind": "type", "name": d["mime_type"], "cap": cap}
        if n is not None and not 0 < n <= cap:
            return {"kind": "too_big", "name": "image", "cap": cap}
        return {"kind": "image", "file_id": d.get("file_id"), "size": n, "mime": d["mime_type"], "cap": cap}
    if isinstance(v, dict) and isinstance(v.get("file_id"), str):
        n = v.get("file_size")
        cap = _TG_VOICE_MAX_BYTES
        if n is not None and not 0 < n <= cap:
            return {"kind": "too_big", "name": "voice note", "cap": cap}
        return {"kind": "voice", "file_id": v["file_id"], "size": n, "mime": str(v.get("mime_type") or "audio/ogg"),
                "cap": cap}
    return None


def migrate(chat_id, new):
    """Move chat ``chat_id`` (a group) to ``new`` (the supergroup it became): its place in
    the allow-list, the ``owner_chat`` setting, its history (when the new chat has none
    yet) and its reminders. Returns True when it was allowed (then nothing of it is left
    under the old id), False when nothing was moved."""
    from mimi import commands

    chat_id, new = str(chat_id), str(new)
    ids = commands.allowed()
    if chat_id not in ids:
        return False
    ids = [new if c == chat_id else c for c in ids]
    config.set("allowed_chats", ",".join([c for i, c in enumerate(ids) if c not in ids[:i]]))
    if config.get("owner_chat") == chat_id:
        config.set("owner_chat", new)
    from mimi.storage import cronjobs, fs, sessions

    a = sessions.path_for(sessions.key_for("telegram", chat_id))
    b = sessions.path_for(sessions.key_for("telegram", new))
    if fs.size(a) is not None and fs.size(b) is None:  # (a group has no topics: one file)
        fs.rename(a, b)
    cronjobs.rechat(chat_id, new)
    return True


# The bytes between values that Pruner follows one by one (" { } [ ] ,), by value: a
# table look-up per byte, not a search of a string (issue 17: bytes parsed per update).
_STRUCT = bytearray(256)
for _b in b'"{}[],':
    _STRUCT[_b] = 1
del _b


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

    def feed(self, data):
        p = bytes(data)
        i, n = 0, len(p)
        st = self.stack
        struct = _STRUCT
        while i < n:
            b = p[i]
            if self.s < 0:  # between values: follow the nesting
                if not struct[b]:  # a run of digits, letters (true, null), colons, spaces: one piece
                    j = i + 1
                    while j < n and not struct[p[j]]:
                        j += 1
                    self._put(p[i:j])
                    i = j
                    continue
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
            j = p.find(b'"', i)
            if j < 0:
                j = n
            k = p.find(b"\\", i, j)  # only up to the quote: not to the piece's end for every string
            if k >= 0:
                j = k  # a run of plain bytes: up to the closing quote or a backslash
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
            if j < n and p[j] == 0x22:  # the closing quote too, in the same step
                if self.drop:
                    self.drop = False
                    self._put(p[j:j + 1])
                else:
                    self._put(p[i:j + 1])
                self.s = -1
                i = j + 1
                continue
            self._put(p[i:j])
            i = j
