"""A local fake of the Telegram Bot API, speaking its real wire format.

    tg = FakeTelegram().start()          # 127.0.0.1, a free port, a thread per request
    tg.url                               # "http://127.0.0.1:PORT": the tg_api_base setting
    tg.inject_text(42, "hello")          # a user writes to the bot
    tg.wait_sent(lambda c: c.method == "sendMessage")
    tg.texts(42)                         # what the bot said there (as the user sees it)
    tg.stop()

What it does, as https://core.telegram.org/bots/api describes:
- ``POST|GET /bot<token>/<method>`` with parameters in the query string, a JSON body, a
  form-urlencoded body (values JSON-encoded, as python-telegram-bot sends them) or
  multipart; replies ``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code",
  "description", "parameters"}``. A wrong token gets 401, an unknown method 404.
- ``getUpdates``: long polling (``timeout`` seconds), ``offset`` confirms every update
  below it (confirmed updates are forgotten, as on Telegram), ``limit``,
  ``allowed_updates`` (remembered between calls). A second poller ends the first with
  409 "terminated by other getUpdates request"; an active webhook gives 409 too.
- ``sendMessage``: ``parse_mode`` HTML parsed like tdlib's ``parse_html`` (same errors:
  "Bad Request: can't parse entities: Unsupported start tag ..."), the 4096 limit counted
  in UTF-16 units after parsing ("Bad Request: message is too long"), empty text refused.
  The result is a Message with ``text`` and ``entities``. ``parse_mode`` Markdown and
  MarkdownV2 are not parsed here (the text is kept as it is).
- ``sendChatAction``, ``getMe``, ``setMyCommands``/``getMyCommands``, ``deleteWebhook``,
  ``setWebhook``, ``getWebhookInfo``, ``answerCallbackQuery``.
- ``getFile`` (``add_file(data)`` makes a file; an unknown id is "Bad Request: invalid
  file_id", over 20 MB "Bad Request: file is too big") and the download, ``GET
  /file/bot<token>/<file_path>`` (404 for an unknown path).
- Forum topics: ``add_topic(chat_id)``; ``message_thread_id`` on sendMessage and
  sendChatAction must name a topic of that chat ("Bad Request: message thread not
  found", also for the General topic and chats without topics); the sent message carries
  ``message_thread_id`` and ``is_topic_message``. ``inject_topic_text`` writes in a topic
  as a client does (``reply_to_message`` is the topic's ``forum_topic_created`` message).
- ``migrate(old, new)``: the group became a supergroup: the two service messages
  (``migrate_to_chat_id``, ``migrate_from_chat_id``) arrive, and sending to the old id is
  "Bad Request: group chat was upgraded to a supergroup chat" with
  ``parameters.migrate_to_chat_id``.
- ``block(chat_id)``: the user blocked the bot: "Forbidden: bot was blocked by the user" (403).
- ``inject_album(chat_id, captions)``: photos sharing one ``media_group_id``;
  ``inject_reply(chat_id, text, to, quote=None)``: a reply, with the quoted part.
- JSON is written with non-ASCII escaped (``\\ud83d\\ude00``), as Telegram does.

Faults: ``fail(method, code, description, retry_after=None, times=1)`` answers the next
calls with an error (429 carries ``parameters.retry_after``); ``drop(method)`` closes the
connection without an answer; ``answer_raw(method, status, body, ...)`` answers with these
exact body bytes (a proxy's HTML page, JSON of the wrong shape), optionally one byte every
``gap_s`` seconds (a server that trickles); ``set_webhook(url)`` makes ``getUpdates``
answer 409. Updates are written with ``update_id`` first, as Telegram writes them.

Reading: ``calls`` (every request, as ``Call(method, params, status, result)``), ``sent``
(the successful ones other than getUpdates), ``texts(chat_id)``, ``commands``,
``wait_sent(pred, timeout)``.
"""
import json
import threading
import time
import urllib.parse
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler

from host_sim.fakes import _Server

from host_sim.fakes.tghtml import HtmlError, parse_html, utf16_len  # noqa: F401 - re-exported

TEXT_MAX_UNITS = 4096
UPDATE_TYPES = ("message", "edited_message", "channel_post", "edited_channel_post",
                "business_connection", "business_message", "edited_business_message",
                "deleted_business_messages", "message_reaction", "message_reaction_count",
                "inline_query", "chosen_inline_result", "callback_query", "shipping_query",
                "pre_checkout_query", "purchased_paid_media", "poll", "poll_answer",
                "my_chat_member", "chat_member", "chat_join_request", "chat_boost",
                "removed_chat_boost")
# Without allowed_updates Telegram sends every type except these (getUpdates docs).
_NOT_BY_DEFAULT = ("chat_member", "message_reaction", "message_reaction_count")
CHAT_ACTIONS = ("typing", "upload_photo", "record_video", "upload_video", "record_voice",
                "upload_voice", "upload_document", "choose_sticker", "find_location",
                "record_video_note", "upload_video_note")
_INT_PARAMS = ("chat_id", "offset", "limit", "timeout", "message_id", "reply_to_message_id",
               "message_thread_id", "cache_time")
_JSON_PARAMS = ("allowed_updates", "commands", "reply_parameters", "reply_markup", "entities",
                "link_preview_options", "scope")


def _trim(text, ents):
    """Strip leading and trailing whitespace as Telegram does, moving the entities."""
    lead = len(text) - len(text.lstrip())
    lead_u = utf16_len(text[:lead])
    text = text.strip()
    total = utf16_len(text)
    kept = []
    for e in ents:
        start = max(0, e["offset"] - lead_u)
        end = min(total, e["offset"] + e["length"] - lead_u)
        if end > start:
            e = dict(e, offset=start, length=end - start)
            kept.append(e)
    return text, kept


def _auto_entities(text):
    """bot_command and mention entities Telegram adds to an incoming text."""
    ents = []
    u = 0
    i = 0
    while i < len(text):
        ch = text[i]
        prev = text[i - 1] if i else " "
        if ch in "/@" and not (prev.isalnum() or prev == "_"):
            j = i + 1
            while j < len(text) and (text[j].isascii() and (text[j].isalnum() or text[j] == "_")):
                j += 1
            if ch == "/" and j < len(text) and text[j] == "@":
                k = j + 1
                while k < len(text) and text[k].isascii() and (text[k].isalnum() or text[k] == "_"):
                    k += 1
                if k - j - 1 >= 3:
                    j = k
            size = j - i - 1
            if (ch == "/" and 1 <= size) or (ch == "@" and 2 <= size <= 32):
                ents.append({"type": "bot_command" if ch == "/" else "mention", "offset": u,
                             "length": utf16_len(text[i:j])})
                u += utf16_len(text[i:j])
                i = j
                continue
        u += utf16_len(ch)
        i += 1
    return ents


class Call:
    """One request the fake answered: method, params (decoded), HTTP status, result or error."""

    def __init__(self, method, params, status, result):
        self.method = method
        self.params = params
        self.status = status
        self.result = result

    @property
    def ok(self):
        return self.status == 200

    def __repr__(self):
        return "Call(%s, %s, %s)" % (self.method, self.status, self.params)


class _Fault:
    def __init__(self, code, description, retry_after=None, drop=False, times=1, raw=None,
                 content_type="application/json", gap_s=0.0):
        self.code = code
        self.description = description
        self.retry_after = retry_after
        self.drop = drop
        self.times = times
        self.raw = raw  # bytes: the answer's body as it is
        self.content_type = content_type
        self.gap_s = gap_s


class FakeTelegram:
    """The fake Bot API server. See the module docstring."""

    def __init__(self, token="123456:FAKE-token", username="mimi_test_bot", bot_id=123456,
                 first_name="mimi"):
        self.token = token
        self.me = {"id": bot_id, "is_bot": True, "first_name": first_name, "username": username,
                   "can_join_groups": True, "can_read_all_group_messages": False,
                   "supports_inline_queries": False, "can_connect_to_business": False,
                   "has_main_web_app": False}
        self.calls = []
        self.commands = []
        self.webhook_url = ""
        self.allowed_updates = None
        self._updates = []  # pending (unconfirmed) updates, oldest first
        self._next_update_id = 100000
        self._next_message_id = {}
        self._faults = {}
        self._cond = threading.Condition()
        self._poll_gen = 0
        self.files = {}  # file_id -> (file_path, bytes)
        self.topics = {}  # chat_id -> [message_thread_id of each topic]
        self.migrated = {}  # old chat id -> new
        self.blocked = set()
        self._server = None
        self._thread = None

    # -- life ----------------------------------------------------------------------------

    def start(self):
        """Listen on 127.0.0.1 (a free port) in a background thread; return self."""
        fake = self

        class Handler(_Handler):
            pass

        Handler.fake = fake
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-telegram",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop listening and end waiting long polls."""
        with self._cond:
            self._poll_gen += 1
            self._cond.notify_all()
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def url(self):
        """The Bot API base URL (what ``tg_api_base`` holds): ``http://127.0.0.1:PORT``."""
        return "http://127.0.0.1:%d" % self.port

    @property
    def accepted(self):
        """TCP connections accepted so far (each would be a TLS handshake on the board)."""
        return self._server.accepted if self._server else 0

    @property
    def api_url(self):
        """``<url>/bot<token>``: append ``/<method>``."""
        return "%s/bot%s" % (self.url, self.token)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- faults --------------------------------------------------------------------------

    def fail(self, method, code, description, retry_after=None, times=1):
        """Answer the next ``times`` calls of ``method`` with this error."""
        with self._cond:
            self._faults.setdefault(method, []).append(_Fault(code, description, retry_after, times=times))

    def fail_429(self, method, retry_after=1, times=1):
        self.fail(method, 429, "Too Many Requests: retry after %d" % retry_after, retry_after, times)

    def drop(self, method, times=1):
        """Close the connection of the next ``times`` calls of ``method`` without answering."""
        with self._cond:
            self._faults.setdefault(method, []).append(_Fault(0, "", drop=True, times=times))

    def answer_raw(self, method, status=200, body=b"", content_type="application/json", times=1,
                   gap_s=0.0):
        """Answer the next ``times`` calls of ``method`` with ``status`` and exactly ``body``
        (bytes, or str encoded as UTF-8), sent one byte every ``gap_s`` seconds when given."""
        if isinstance(body, str):
            body = body.encode()
        with self._cond:
            self._faults.setdefault(method, []).append(
                _Fault(status, "", times=times, raw=body, content_type=content_type, gap_s=gap_s))

    def set_webhook(self, url="https://example.org/hook"):
        """Make a webhook active: getUpdates answers 409 until deleteWebhook."""
        self.webhook_url = url

    def _take_fault(self, method):
        with self._cond:
            lst = self._faults.get(method)
            if not lst:
                return None
            f = lst[0]
            f.times -= 1
            if f.times <= 0:
                lst.pop(0)
            return f

    # -- updates ---------------------------------------------------------------------------

    def inject_update(self, update):
        """Queue an update (a dict with one update kind); its ``update_id`` is assigned here."""
        with self._cond:
            self._next_update_id += 1
            u = {"update_id": self._next_update_id}  # first, as Telegram writes it
            u.update(update)
            u["update_id"] = self._next_update_id
            update = u
            self._updates.append(update)
            self._cond.notify_all()
        return update

    def pending(self):
        """Update ids not confirmed yet."""
        with self._cond:
            return [u["update_id"] for u in self._updates]

    def _mid(self, chat_id):
        with self._cond:
            n = self._next_message_id.get(chat_id, 0) + 1
            self._next_message_id[chat_id] = n
            return n

    @staticmethod
    def user(user_id, first_name="Ann", username=None):
        u = {"id": user_id, "is_bot": False, "first_name": first_name, "language_code": "en"}
        if username:
            u["username"] = username
        return u

    def _chat(self, chat_id, chat_type, first_name, title):
        if chat_type == "private":
            return {"id": chat_id, "first_name": first_name, "type": "private"}
        return {"id": chat_id, "title": title or "a group", "type": chat_type}

    def message(self, chat_id, user_id=None, chat_type="private", first_name="Ann", title=None,
                reply_to=None, **fields):
        """A Message dict from a user in ``chat_id`` (``fields`` add text, photo, ...)."""
        user_id = chat_id if user_id is None else user_id
        m = {"message_id": self._mid(chat_id), "from": self.user(user_id, first_name),
             "chat": self._chat(chat_id, chat_type, first_name, title), "date": int(time.time())}
        if reply_to is not None:
            m["reply_to_message"] = reply_to
        m.update(fields)
        return m

    def inject_message(self, chat_id, **kw):
        return self.inject_update({"message": self.message(chat_id, **kw)})

    def inject_text(self, chat_id, text, **kw):
        """A text message (with bot_command and mention entities as Telegram adds them)."""
        ents = _auto_entities(text)
        if ents:
            kw["entities"] = ents
        return self.inject_message(chat_id, text=text, **kw)

    def inject_group_text(self, chat_id, text, user_id=7, reply_to_bot=False, **kw):
        """A message in a supergroup ``chat_id`` (negative); ``reply_to_bot`` answers the bot."""
        if reply_to_bot:
            kw["reply_to"] = {"message_id": 1, "from": dict(self.me), "date": int(time.time()),
                              "chat": self._chat(chat_id, "supergroup", "", kw.get("title")),
                              "text": "earlier reply"}
        return self.inject_text(chat_id, text, user_id=user_id, chat_type="supergroup", **kw)

    def inject_edited(self, chat_id, text, message_id=1):
        m = self.message(chat_id, text=text)
        m["message_id"] = message_id
        m["edit_date"] = int(time.time())
        return self.inject_update({"edited_message": m})

    def inject_photo(self, chat_id, caption=None, **kw):
        sizes = [{"file_id": "AgAC-fake-small", "file_unique_id": "AQAD-s", "width": 90, "height": 67,
                  "file_size": 1200},
                 {"file_id": "AgAC-fake-big", "file_unique_id": "AQAD-b", "width": 800, "height": 600,
                  "file_size": 54000}]
        if caption is not None:
            kw["caption"] = caption
        return self.inject_message(chat_id, photo=sizes, **kw)

    def inject_sticker(self, chat_id, emoji="\U0001F600", **kw):
        st = {"file_id": "CAAC-fake", "file_unique_id": "AgAD-st", "type": "regular", "width": 512,
              "height": 512, "is_animated": False, "is_video": False, "emoji": emoji}
        return self.inject_message(chat_id, sticker=st, **kw)

    def inject_voice(self, chat_id, **kw):
        v = {"file_id": "AwAC-fake", "file_unique_id": "AgAD-vo", "duration": 3, "mime_type": "audio/ogg"}
        return self.inject_message(chat_id, voice=v, **kw)

    def inject_location(self, chat_id, **kw):
        return self.inject_message(chat_id, location={"latitude": 52.52, "longitude": 13.405}, **kw)

    def inject_service(self, chat_id, kind="new_chat_members", **kw):
        """A service message: ``new_chat_members``, ``left_chat_member``, ``new_chat_title``."""
        if kind == "new_chat_members":
            kw["new_chat_members"] = [self.user(99, "Bob")]
        elif kind == "left_chat_member":
            kw["left_chat_member"] = self.user(99, "Bob")
        elif kind == "new_chat_title":
            kw["new_chat_title"] = "renamed"
        kw.setdefault("chat_type", "supergroup")
        return self.inject_message(chat_id, **kw)

    def add_file(self, data, file_id=None, path=None):
        """Store ``data`` (bytes) as a file the bot can fetch; return its ``file_id``."""
        with self._cond:
            n = len(self.files) + 1
            file_id = file_id or "BQAC-fake-file-%d" % n
            self.files[file_id] = (path or "documents/file_%d.bin" % n, bytes(data))
        return file_id

    def inject_photo_file(self, chat_id, data, caption=None, width=800, height=600, **kw):
        """A photo whose largest size is ``data`` (stored with ``add_file``): sizes smallest first."""
        big = self.add_file(data, path="photos/file_%d.jpg" % (len(self.files) + 1))
        small = self.add_file(data[:max(1, len(data) // 10)], path="photos/file_%d.jpg" % (len(self.files) + 1))
        sizes = [{"file_id": small, "file_unique_id": "AQAD-s" + small[-3:], "width": 90, "height": 67,
                  "file_size": max(1, len(data) // 10)},
                 {"file_id": big, "file_unique_id": "AQAD-b" + big[-3:], "width": width, "height": height,
                  "file_size": len(data)}]
        if caption is not None:
            kw["caption"] = caption
        return self.inject_message(chat_id, photo=sizes, **kw)

    def inject_voice_file(self, chat_id, data, duration=3, **kw):
        fid = self.add_file(data, path="voice/file_%d.oga" % (len(self.files) + 1))
        v = {"file_id": fid, "file_unique_id": "AgAD-v" + fid[-3:], "duration": duration, "mime_type": "audio/ogg",
             "file_size": len(data)}
        return self.inject_message(chat_id, voice=v, **kw)

    def inject_album(self, chat_id, captions, data=b"\xff\xd8\xff\xe0fake-jpeg", **kw):
        """One photo per caption (None: no caption), sharing one ``media_group_id``."""
        group = "1357%d" % (self._next_update_id + 1)
        return [self.inject_photo_file(chat_id, data + b"-%d" % i, caption=c, media_group_id=group, **kw)
                for i, c in enumerate(captions)]

    def inject_reply(self, chat_id, text, to, quote=None, **kw):
        """A reply to message ``to`` (a Message dict, e.g. one the bot sent); ``quote``: the
        part of it the user picked (a TextQuote)."""
        if quote is not None:
            kw["quote"] = {"text": quote, "position": max(0, (to.get("text") or "").find(quote)),
                           "is_manual": True}
        return self.inject_text(chat_id, text, reply_to=to, **kw)

    def add_topic(self, chat_id, name="topic"):
        """Make a forum topic in supergroup ``chat_id``; return its ``message_thread_id``."""
        with self._cond:
            lst = self.topics.setdefault(int(chat_id), [])
            tid = 100 + len(lst) * 7
            lst.append(tid)
        return tid

    def inject_topic_text(self, chat_id, thread_id, text, user_id=7, **kw):
        """A message in topic ``thread_id`` of forum ``chat_id``, as clients send it."""
        created = {"message_id": thread_id, "from": self.user(user_id), "date": int(time.time()),
                   "chat": self._forum(chat_id), "message_thread_id": thread_id,
                   "forum_topic_created": {"name": "topic", "icon_color": 7322096}, "is_topic_message": True}
        m = self.message(chat_id, user_id=user_id, chat_type="supergroup", reply_to=created,
                         message_thread_id=thread_id, is_topic_message=True, **kw)
        m["chat"] = self._forum(chat_id)
        ents = _auto_entities(text)
        m["text"] = text
        if ents:
            m["entities"] = ents
        return self.inject_update({"message": m})

    def _forum(self, chat_id):
        return {"id": int(chat_id), "title": "a forum", "type": "supergroup", "is_forum": True}

    def migrate(self, old, new, user_id=7):
        """Group ``old`` became supergroup ``new``: both service messages arrive, and the old
        id is refused from now on."""
        self.migrated[int(old)] = int(new)
        a = self.message(old, user_id=user_id, chat_type="group", migrate_to_chat_id=int(new))
        b = self.message(new, user_id=user_id, chat_type="supergroup", migrate_from_chat_id=int(old))
        return [self.inject_update({"message": a}), self.inject_update({"message": b})]

    def block(self, chat_id):
        """The user of private chat ``chat_id`` blocks the bot."""
        self.blocked.add(int(chat_id))

    def inject_callback_query(self, chat_id, data="btn", user_id=None):
        user_id = chat_id if user_id is None else user_id
        msg = {"message_id": 1, "from": dict(self.me), "chat": self._chat(chat_id, "private", "Ann", None),
               "date": int(time.time()), "text": "pick one"}
        cq = {"id": "cbq-%d" % (self._next_update_id + 1), "from": self.user(user_id), "message": msg,
              "chat_instance": "ci-1", "data": data}
        return self.inject_update({"callback_query": cq})

    # -- reading ------------------------------------------------------------------------

    @property
    def sent(self):
        """Successful calls other than getUpdates, in order (not those ``answer_raw`` answered)."""
        with self._cond:
            return [c for c in self.calls if c.ok and c.result is not None and c.method != "getUpdates"]

    def texts(self, chat_id=None):
        """Texts of the messages the bot sent (to ``chat_id``), as the user sees them."""
        return [c.result["text"] for c in self.sent
                if c.method == "sendMessage" and (chat_id is None or c.result["chat"]["id"] == int(chat_id))]

    def wait_sent(self, pred=None, timeout=5.0, count=1):
        """Wait until ``count`` calls match ``pred`` (any call when None); return them.

        Raises ``AssertionError`` on timeout, listing what was called.
        """
        pred = pred or (lambda c: True)
        deadline = time.time() + timeout
        with self._cond:
            while True:
                got = [c for c in self.calls if pred(c)]
                if len(got) >= count:
                    return got
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError("fake Telegram: wanted %d matching calls, got %d; calls: %r"
                                         % (count, len(got), self.calls[-20:]))
                self._cond.wait(min(left, 0.05))

    # -- methods ---------------------------------------------------------------------------

    def handle(self, method, params):
        """Answer one call: (status, body dict) or None to drop the connection."""
        f = self._take_fault(method)
        if f is not None:
            if f.drop:
                return None
            if f.raw is not None:
                return f
            body = {"ok": False, "error_code": f.code, "description": f.description}
            if f.retry_after is not None:
                body["parameters"] = {"retry_after": f.retry_after}
            return f.code, body
        fn = getattr(self, "_m_" + method, None)
        if fn is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        try:
            return 200, {"ok": True, "result": fn(params)}
        except _ApiError as e:
            body = {"ok": False, "error_code": e.code, "description": e.description}
            if e.parameters:
                body["parameters"] = e.parameters
            return e.code, body

    def _m_getMe(self, p):
        return dict(self.me)

    def _m_getUpdates(self, p):
        if self.webhook_url:
            raise _ApiError(409, "Conflict: can't use getUpdates method while webhook is active; "
                                 "use deleteWebhook to delete the webhook first")
        offset = int(p.get("offset", 0) or 0)
        limit = max(1, min(100, int(p.get("limit", 100) or 100)))
        timeout = max(0, int(p.get("timeout", 0) or 0))
        deadline = time.time() + timeout
        with self._cond:
            if "allowed_updates" in p and p["allowed_updates"] is not None:
                au = list(p["allowed_updates"])
                self.allowed_updates = au or None
            if offset > 0:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            elif offset < 0:
                self._updates = self._updates[offset:]
            self._poll_gen += 1
            gen = self._poll_gen
            while True:
                ready = [u for u in self._updates if self._allowed(u)][:limit]
                if ready or time.time() >= deadline:
                    return ready
                if gen != self._poll_gen:
                    raise _ApiError(409, "Conflict: terminated by other getUpdates request; make sure "
                                         "that only one bot instance is running")
                self._cond.wait(min(0.05, max(0.0, deadline - time.time())))

    def _allowed(self, update):
        kind = [k for k in update if k != "update_id"][0]
        if self.allowed_updates is None:
            return kind not in _NOT_BY_DEFAULT
        return kind in self.allowed_updates

    def _check_chat(self, p):
        """The errors Telegram gives for the chat and topic of a send."""
        chat_id = p.get("chat_id")
        if chat_id in (None, ""):
            raise _ApiError(400, "Bad Request: chat_id is empty")
        cid = int(chat_id)
        if cid in self.migrated:
            raise _ApiError(400, "Bad Request: group chat was upgraded to a supergroup chat",
                            {"migrate_to_chat_id": self.migrated[cid]})
        if cid in self.blocked:
            raise _ApiError(403, "Forbidden: bot was blocked by the user")
        t = p.get("message_thread_id")
        if t not in (None, "") and int(t) not in self.topics.get(cid, ()):
            raise _ApiError(400, "Bad Request: message thread not found")
        return cid

    def _m_getFile(self, p):
        f = self.files.get(p.get("file_id") or "")
        if f is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        if len(f[1]) > 20 * 1024 * 1024:
            raise _ApiError(400, "Bad Request: file is too big")
        return {"file_id": p["file_id"], "file_unique_id": "AgAD" + p["file_id"][-6:], "file_size": len(f[1]),
                "file_path": f[0]}

    def _m_sendMessage(self, p):
        chat_id = p.get("chat_id")
        self._check_chat(p)
        text = p.get("text")
        if text is None or text == "":
            raise _ApiError(400, "Bad Request: message text is empty")
        mode = (p.get("parse_mode") or "").lower()
        ents = []
        if mode == "html":
            try:
                text, ents = parse_html(text)
            except HtmlError as e:
                raise _ApiError(400, "Bad Request: can't parse entities: %s" % e)
        text, ents = _trim(text, ents)
        if not text:
            raise _ApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > TEXT_MAX_UNITS:
            raise _ApiError(400, "Bad Request: message is too long")
        cid = int(chat_id)
        m = {"message_id": self._mid(cid), "from": dict(self.me),
             "chat": self._chat(cid, "private" if cid > 0 else "supergroup", "Ann", None),
             "date": int(time.time()), "text": text}
        if ents:
            m["entities"] = ents
        if p.get("message_thread_id") not in (None, ""):
            m["chat"] = self._forum(cid)
            m["message_thread_id"] = int(p["message_thread_id"])
            m["is_topic_message"] = True
        return m

    def _m_sendChatAction(self, p):
        self._check_chat(p)
        if p.get("action") not in CHAT_ACTIONS:
            raise _ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    def _m_setMyCommands(self, p):
        cmds = p.get("commands")
        if not isinstance(cmds, list):
            raise _ApiError(400, "Bad Request: parameter \"commands\" is required")
        for c in cmds:
            name = c.get("command", "")
            if not (1 <= len(name) <= 32) or any(not (ch.islower() or ch.isdigit() or ch == "_") for ch in name):
                raise _ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not (1 <= len(c.get("description", "")) <= 256):
                raise _ApiError(400, "Bad Request: command description must be non-empty")
        self.commands = [{"command": c["command"], "description": c["description"]} for c in cmds]
        return True

    def _m_getMyCommands(self, p):
        return list(self.commands)

    def _m_deleteWebhook(self, p):
        self.webhook_url = ""
        if str(p.get("drop_pending_updates", "")).lower() in ("true", "1"):
            with self._cond:
                self._updates = []
        return True

    def _m_setWebhook(self, p):
        self.webhook_url = p.get("url", "")
        return True

    def _m_getWebhookInfo(self, p):
        return {"url": self.webhook_url, "has_custom_certificate": False,
                "pending_update_count": len(self._updates)}

    def _m_answerCallbackQuery(self, p):
        if not p.get("callback_query_id"):
            raise _ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        return True


class _ApiError(Exception):
    def __init__(self, code, description, parameters=None):
        Exception.__init__(self, description)
        self.code = code
        self.description = description
        self.parameters = parameters


def _decode_params(query, ctype, body):
    params = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        params[k] = v
    ctype = (ctype or "").lower()
    if body:
        if ctype.startswith("application/json"):
            try:
                params.update(json.loads(body.decode("utf-8")))
            except ValueError:
                raise _ApiError(400, "Bad Request: can't parse JSON object")
        elif ctype.startswith("application/x-www-form-urlencoded"):
            for k, v in urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True):
                params[k] = v
        elif ctype.startswith("multipart/form-data"):
            msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name and part.get_filename() is None:
                    params[name] = part.get_payload(decode=True).decode("utf-8")
    for k in _INT_PARAMS:
        if isinstance(params.get(k), str) and params[k].lstrip("-").isdigit():
            params[k] = int(params[k])
    for k in _JSON_PARAMS:
        if isinstance(params.get(k), str):
            try:
                params[k] = json.loads(params[k])
            except ValueError:
                raise _ApiError(400, "Bad Request: can't parse %s JSON object" % k)
    return params


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers: the head and body writes go out at once
    fake = None

    def log_message(self, fmt, *args):  # quiet
        pass

    def _answer(self):
        fake = self.fake
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        method = parts[1] if len(parts) == 2 else ""
        if len(parts) > 2 and parts[0] == "file" and self.command == "GET":  # a file download
            self._file(parts)
            return
        if len(parts) != 2 or not parts[0].startswith("bot"):
            status, out = 404, {"ok": False, "error_code": 404, "description": "Not Found"}
            params = {}
        elif parts[0][3:] != fake.token:
            status, out = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
            params = {}
        else:
            try:
                params = _decode_params(url.query, self.headers.get("Content-Type"), body)
                res = fake.handle(method, params)
            except _ApiError as e:
                params = {}
                res = (e.code, {"ok": False, "error_code": e.code, "description": e.description})
            if isinstance(res, _Fault):  # answer_raw: these bytes, maybe trickling
                self._raw(method, params, res)
                return
            if res is None:  # drop the connection without an answer
                with fake._cond:
                    fake.calls.append(Call(method, params, 0, None))
                    fake._cond.notify_all()
                self.close_connection = True
                try:
                    self.connection.shutdown(2)
                except OSError:
                    pass
                return
            status, out = res
        data = json.dumps(out, ensure_ascii=True, separators=(",", ":")).encode()
        with fake._cond:
            fake.calls.append(Call(method, params, status, out.get("result") if status == 200 else out))
            fake._cond.notify_all()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _file(self, parts):
        fake = self.fake
        path = "/".join(parts[2:])
        data = None
        if urllib.parse.unquote(parts[1]) == "bot" + fake.token:  # (clients may escape the colon)
            for fp, d in list(fake.files.values()):
                if fp == path:
                    data = d
        with fake._cond:
            fake.calls.append(Call("file", {"path": path}, 200 if data is not None else 404, None))
            fake._cond.notify_all()
        body = data if data is not None else b'{"ok":false,"error_code":404,"description":"Not Found"}'
        self.send_response(200 if data is not None else 404)
        self.send_header("Content-Type", "application/octet-stream" if data is not None else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _raw(self, method, params, f):
        fake = self.fake
        with fake._cond:
            fake.calls.append(Call(method, params, f.code, None))
            fake._cond.notify_all()
        self.close_connection = True
        try:
            self.send_response(f.code)
            self.send_header("Content-Type", f.content_type)
            self.send_header("Content-Length", str(len(f.raw)))
            self.end_headers()
            if not f.gap_s:
                self.wfile.write(f.raw)
                return
            self.wfile.flush()
            for i in range(len(f.raw)):
                if fake._server is None:  # stopped
                    return
                self.wfile.write(f.raw[i:i + 1])
                self.wfile.flush()
                time.sleep(f.gap_s)
        except OSError:  # the client gave up
            pass

    do_GET = _answer
    do_POST = _answer
