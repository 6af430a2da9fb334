"""The Telegram channel: long polling in, replies out, typing while the agent works.

The I/O thread calls ``tick(now_ms)`` in its loop and ``deliver(msg)`` for outbound bus
messages; nothing here blocks for the long poll (``http.Pending``), so replies go out
while a poll waits. The Bot API wire (``call``) is one HTTP request per call, JSON bodies, URL
``<tg_api_base>/bot<token>/<method>`` (https://core.telegram.org/bots/api#making-
requests; the base is a setting, so a self-hosted Bot API server or a test fake works).
The token is part of the path: nothing here logs a URL.

In (https://core.telegram.org/bots/api#getupdates):
- ``getUpdates`` with a 30 s long poll (its answer due within ``TG_POLL_DEADLINE_MS``), ``allowed_updates``
  set, at most ``TG_POLL_LIMIT`` updates per answer (bounds the response buffer; an
  answer over it is asked for again one update at a time, and a single update over it is
  skipped, its sender told: its id is looked for anywhere in the kept part, however the
  JSON is spaced (``number_after``); so is one that cannot be parsed: not UTF-8, nested
  too deep).
- No answer twice: updates are acted on only after the next poll, which carries the new
  offset and so confirms them to Telegram, has been sent. Confirmed updates are gone
  from Telegram for good, so a reboot cannot bring them back, and a handling failure
  cannot make a poison update come back forever. The offset is also kept in the
  settings store (NVS, wear-levelled) every ``TG_OFFSET_SAVE_EVERY`` updates or
  ``_TG_OFFSET_SAVE_MS``, and at ``stop()``; an older stored offset is harmless
  (confirmed updates are not redelivered). The cost: a crash between the confirming
  poll and the hand-over to the agent loses that message (at most once, never twice).
  An update taken before (one of the last 8 ids, or twice in one answer) is ignored; an
  answer that starts below the offset is Telegram numbering afresh (after a week without
  updates the next id is random) and is taken.
- Access (``mimi.commands``): closed by default. A stranger gets one short reply with its chat
  id and how the owner allows it (at most one per ``TG_DENY_REPLY_MS``, for at most
  ``TG_DENY_CHATS_MAX`` chats in that time: more wait, none is pushed out to be answered
  again), or pairs by sending the console's one-time code; strangers never reach the
  agent. The inbound queue keeps room for the owner (``guard.admit``): a message refused,
  or set aside for the owner's, is answered "busy". Every text sent has what looks like a
  key or token redacted (``guard.redact``).
- Text and captions of media go to the agent, as ``tgupdate`` reads them (replies and
  quotes, forwards, hidden links, names); photos, image files and voice notes go as the
  message's ``media`` (fetched by ``mimi.agent.media`` on the agent thread); other kinds
  (sticker, location, ...) get ``TG_MEDIA_REPLY``; service messages, edits (answered
  once, not again) and callback queries are ignored (a callback query is answered so the
  client stops its spinner). In groups, only messages that mention the bot (its own
  ``@name``, not a longer name: no name character right after it or before the ``@``) or
  reply to it count. The poll answer is read through ``tgupdate.Pruner`` (a replied-to
  message's text capped), so a short reply to a long message fits the poll buffer.
- A forum topic's messages are answered in the topic: the chat id is
  ``"<chat_id>:<message_thread_id>"`` from here on (``tgupdate.dest``), its own session.
  An album (``media_group_id``) is held until ``_TG_ALBUM_WAIT_MS`` passed without a
  part, then goes as one message. A group upgraded to a supergroup (the service
  messages, or a send answered with ``parameters.migrate_to_chat_id``) moves to the new
  id with its settings, history, reminders and queued replies (``_move``).
- Commands ``/start /help /new /status /model /provider /memory`` are answered here
  (``mimi.commands``) and registered with ``setMyCommands``; others go to the agent.

Out (https://core.telegram.org/bots/api#sendmessage, #sendchataction):
- Markdown from the agent is split at 4096 UTF-16 units (``tgformat.split``) and each
  chunk sent as HTML; when Telegram answers "can't parse entities" that chunk is sent
  once more as plain text. "message is too long" splits the chunk in half once. "message
  text is empty" (an empty code block; only spaces Telegram trims, which MicroPython's
  ``str.strip`` does not know) sends it as plain text, then as "(no reply)".
- ``typing``/``idle`` bus messages: ``sendChatAction`` typing every ~4 s in between.
- 429: wait ``parameters.retry_after``; 409: logged with what to do, backed off (a
  webhook is removed); 401: the token is wrong, long back-off; network errors, 5xx and
  answers that are not the Bot API's JSON (a proxy's HTML page, a list, cut JSON, fields
  of the wrong type): back off 1 s doubling to 60 s. None of them ends the I/O thread.
  A reply chunk is tried at most ``TG_SEND_TRIES`` times (any failure counts; a 4xx other
  than 429 drops it at once), then dropped, logged. 403 (the user blocked the bot, or it
  left the group) drops everything queued for that chat, and nothing more is sent there
  until it writes again (``blocked``); "message thread not found" (a deleted topic)
  sends it to the chat instead.
- Deadlines: every call is over within ``TG_CALL_DEADLINE_MS`` (connection included), the
  long poll within ``TG_POLL_DEADLINE_MS``, however slowly the server trickles; and a
  ``tick`` that has spent ``TG_CALL_DEADLINE_MS`` leaves the rest (next poll, sends,
  typing) to the next pass. So one pass of the I/O loop stays well under the watchdog's
  ``APP_WDT_TIMEOUT_MS`` (connection set-up is bounded by ``HTTP_CONNECT_TIMEOUT_MS``).
"""
import json

from micropython import const

from mimi import commands, config, guard, log, seam
from mimi.channels import tgformat, tgupdate

# Tunables (config.py holds those shared by several modules and the settings).
_TG_OUTQ_MAX = const(24)  # message chunks waiting to be sent
_TG_OFFSET_SAVE_MS = const(300000)
_TG_TYPING_MAX_MS = const(600000)  # a typing indicator nobody ends stops after this
_TG_ALBUM_WAIT_MS = const(1500)  # an album is complete when no part of it came for this long
_TG_ALBUM_MEDIA_MAX = const(4)  # images of one album given to the model

# Texts (the missing token, the media kinds) live in texts.md: a string constant costs
# heap for as long as the module is loaded (docs/heap.md).


def number_after(buf, path):
    """The integer that follows ``path`` in the bytes ``buf``, or None: ``path`` is JSON
    tokens split by spaces (``b'"chat" : { "id" :'``), and any JSON white space may stand
    between them in ``buf`` (an answer that could not be parsed is searched so). The first
    place ``path`` matches in full counts."""
    parts = path.split()
    n = len(buf)
    at = buf.find(parts[0])
    while at >= 0:
        k = at + len(parts[0])
        for p in parts[1:]:
            while k < n and buf[k] in b" \t\r\n":
                k += 1
            if buf[k:k + len(p)] != p:
                break
            k += len(p)
        else:
            while k < n and buf[k] in b" \t\r\n":
                k += 1
            j = k
            while k < n and buf[k] in b"-0123456789":
                k += 1
            try:
                return int(buf[j:k])
            except ValueError:
                return None
        at = buf.find(parts[0], at + 1)
    return None


def _to(chat_id):
    """The ``chat_id`` (and ``message_thread_id`` of a forum topic) a call for ``chat_id`` carries."""
    c, t = tgupdate.split_dest(chat_id)
    p = {"chat_id": c}
    if t is not None:
        p["message_thread_id"] = t
    return p


class TgError(Exception):
    """The Bot API said no. ``args``: (code (HTTP status or error_code), description,
    retry_after in seconds for 429, else None)."""


class Telegram:
    """``Telegram(bus, api=None, bufs=None)``: the channel, and the Bot API wire it uses
    (``token``, ``call``, ``start_poll``, ``updates``) for the token and base URL in the
    settings, read at every call so a new token applies at once. ``api``: a stand-in
    with those four methods (tests); ``bufs``: the (poll, send) bytearrays, allocated
    once (default: allocated here).

    ``outq``: reply chunks waiting, ``[chat_id, markdown, network failures, mode]`` (mode
    0 HTML, 1 plain, 2 plain after a split for "too long"); ``typing``: chat id -> ticks
    since when it shows typing (renewed for all every ``TG_TYPING_EVERY_MS``); ``told``:
    stranger chat id -> ticks of the last reply.
    """

    def __init__(self, bus, api=None, bufs=None):
        self.bus = bus
        self.api = api or self
        self.bufs = None if api else bufs or (bytearray(config.TG_POLL_BUF_BYTES), bytearray(config.TG_SEND_BUF_BYTES))
        self.me = None  # getMe result once known
        self.key = None  # the token self.me belongs to
        self.offset = 0
        self.unsaved = 0
        self.poll = None  # the long poll under way (http.Pending)
        self.keeps = None  # (poll, other calls): their kept connections (http.Keep), made on first use
        self.held = None  # updates received, acted on once the next poll confirmed them
        self.limit = config.TG_POLL_LIMIT
        self.poll_at = self.send_at = self.typing_at = seam.ticks_ms()  # *_at: when due
        self.saved = seam.moment()  # when the offset was last stored (maybe days ago)
        self.backoff_ms = config.TG_BACKOFF_MIN_MS
        self.errors = self.dropped = 0  # failed polls, replies given up
        self.why = ""  # the last failure, for describe()
        self.seen = []  # the last update ids taken (at most 8)
        self.outq = []
        self.typing = {}
        self.told = {}
        self.quiet = False  # the missing token was logged
        self.blocked = set()  # chats whose user blocked the bot (403): nothing is sent there until they write
        self.albums = {}  # media_group_id -> [inbound message, ticks of its last part]
        self.t0 = 0  # ticks_ms when the tick under way began

    # -- the wire (https://core.telegram.org/bots/api#making-requests) ----------------

    def token(self):
        return config.get("tg_token")

    def _post(self, method, params, buf, deadline_ms):
        from mimi.net import http

        if self.keeps is None:  # the long poll on one connection, the other calls on another
            self.keeps = (http.Keep(), http.Keep())
        return http.start("POST", "%s/bot%s/%s" % (config.get("tg_api_base").rstrip("/"), self.token(), method),
                          {"Content-Type": "application/json"}, json.dumps(params or {}),
                          timeout_ms=config.TG_SEND_TIMEOUT_MS, buf=buf, deadline_ms=deadline_ms,
                          keep=self.keeps[method != "getUpdates"])

    def call(self, method, params=None, want_result=False):
        """POST ``method`` with ``params`` (dict) as JSON. Returns the ``result`` when
        ``want_result`` (it must fit the send buffer), else True: a 200 answer is success
        whatever its size (sendMessage echoes the whole message, which need not be read).
        Raises ``TgError`` (not 200), ``OSError`` (network, or an answer that is not the
        Bot API's JSON), ``ValueError`` (a malformed ``tg_api_base``)."""
        return self._done(self._post(method, params, self.bufs[1], config.TG_CALL_DEADLINE_MS).finish(),
                          1 if want_result else 0)

    def start_poll(self, offset, timeout_s, limit):
        """Send a getUpdates long poll; return its ``http.Pending``. Sending it confirms
        every update below ``offset`` to Telegram."""
        return self._post("getUpdates", {"offset": offset, "timeout": timeout_s, "limit": limit,
                                         "allowed_updates": "message edited_message callback_query".split()},
                          self.bufs[0], config.TG_POLL_DEADLINE_MS)

    def updates(self, p):
        """A poll's answer: the list of updates, or the start of the answer (the poll
        buffer, a bytearray; read it before the next poll) when it did not fit. Raises ``TgError``, ``OSError`` (also for an answer
        whose ``result`` is not a list)."""
        # Read through tgupdate.Pruner into the poll buffer, the pieces passing through the
        # send buffer: texts of replied-to messages are capped, so a short reply to a long one fits.
        pr = tgupdate.Pruner(self.bufs[0])
        p.finish(buf=self.bufs[1], sink=pr.feed)
        p.body = memoryview(self.bufs[0])[:pr.n]
        p.truncated = pr.full
        return self._done(p, 2)

    def _done(self, r, want):
        """A finished call's answer: ``want`` 0 True, 1 the ``result``, 2 a poll's list of
        updates (or the kept start of an answer over the poll buffer).

        Not 200: a ``TgError``. Fields of the wrong type, or an answer that is not the Bot
        API's JSON (a proxy's page, a cut answer), fall back to the HTTP status;
        ``retry_after`` is kept only as a number from 0 to ``TG_RETRY_AFTER_MAX_S``. A 200
        answer that is not the Bot API's JSON object (HTML from a proxy, a list, ``null``,
        cut JSON, a poll's ``result`` that is not a list) is an ``OSError``."""
        if r.status != 200:
            code, msg, after = r.status, "HTTP %d" % r.status, None
            try:
                d = r.json()
                c, t, p = d.get("error_code"), d.get("description"), d.get("parameters")
                if type(c) is int:
                    code = c
                if isinstance(t, str):
                    msg = t
                a = p.get("retry_after") if isinstance(p, dict) else None
                if type(a) in (int, float) and a >= 0:  # not NaN; inf becomes the cap
                    after = int(min(a, config.TG_RETRY_AFTER_MAX_S))
                new = p.get("migrate_to_chat_id") if isinstance(p, dict) else None
            except Exception:  # noqa: BLE001 - not a dict, not JSON: the status says it
                new = None
            e = TgError(code, msg, after)
            e.migrate_to = new if type(new) is int else None  # the group became this supergroup
            raise e
        if not want:
            return True
        if r.truncated:
            if want > 1:
                return self.bufs[0]  # full: the kept start of the answer
            raise OSError("too big")
        try:
            d = r.json()["result"]
            if want < 2 or isinstance(d, list):
                return d
        except Exception:  # noqa: BLE001 - ValueError, TypeError, KeyError: all a failed call
            # An update that cannot be parsed (not UTF-8, nested too deep): skipped by its
            # update_id as one over the buffer is, or it would be asked for again for ever.
            if want > 1:
                raw = bytes(r.body)
                if number_after(raw, b'"update_id" :') is not None:
                    return raw
        raise OSError("bad answer")

    # -- the channel -------------------------------------------------------------------

    def save_offset(self, force=False):
        """Store the offset when enough updates or time passed (or ``force``)."""
        now = seam.ticks_ms()
        if not self.unsaved or self.me is None or not force and self.unsaved < config.TG_OFFSET_SAVE_EVERY \
                and seam.elapsed_ms(self.saved, now) < _TG_OFFSET_SAVE_MS:
            return
        try:
            seam.store_set(config.TG_OFFSET_KEY, "%s:%d" % (self.me["id"], self.offset))
            self.unsaved = 0
            self.saved = seam.moment()
        except (OSError, ValueError) as e:
            log.warn("tg", "offset: %s", e)

    def stop(self):
        """Close the long poll and keep the offset (updates received but not acted on stay due)."""
        if self.poll is not None:
            self.poll.close()  # never raises (seam.Conn.close)
            self.poll = None
        for k in self.keeps or ():
            k.close()
        for u in self.held or ():
            i = u.get("update_id") if isinstance(u, dict) else None
            if isinstance(i, int) and i < self.offset:
                self.offset = i
                self.unsaved += 1
        self.held = None
        self.save_offset(force=True)

    def _late(self):
        """True once this tick has spent ``TG_CALL_DEADLINE_MS``: the rest waits a pass."""
        return seam.ticks_diff(seam.ticks_ms(), self.t0) > config.TG_CALL_DEADLINE_MS

    def tick(self, now):
        """One step: poll, send, typing, offset. Returns True when something was done."""
        self.t0 = seam.ticks_ms()
        token = self.api.token()
        if not token:
            if not self.quiet and not config.get("feishu_app_id"):  # Feishu alone is fine
                log.warn("tg", commands.text("no_token_h" if seam.on_host() else "no_token"))
                self.quiet = True
            return False
        self.quiet = False
        if token != self.key:  # the first tick, or the token changed: start afresh
            self.stop()
            self.me = None
            self.offset = 0
            self.key = token
        if self.me is None:  # getMe (id and username, for groups), the kept offset, the menu
            if seam.ticks_diff(now, self.poll_at) < 0:
                return False
            try:
                me = self.api.call("getMe", want_result=True)
                if not isinstance(me, dict):
                    raise OSError("bad answer")
            except Exception as e:  # noqa: BLE001 - TgError, OSError, ValueError: a failed call
                self._fail(e, now)
                return False
            self.me = me
            key, _, value = (seam.store_get(config.TG_OFFSET_KEY) or "").partition(":")
            if key == str(me.get("id")) and value.isdigit():
                self.offset = max(self.offset, int(value))
            menu = []
            for c, d in commands.menu():
                menu.append({"command": c, "description": d})
            try:
                self.api.call("setMyCommands", {"commands": menu})
            except Exception as e:  # noqa: BLE001 - the menu is a nicety
                log.warn("tg", "%s", e)
            log.info("tg", "bot @%s", me.get("username"))
            if not commands.allowed():
                print("\n" + commands.text("banner", me.get("username"), commands.code()))  # Feishu may show it too
        busy = self._poll(now)
        q = self.outq
        if q and seam.ticks_diff(now, self.send_at) >= 0 and not self._late():  # the oldest chunk
            busy = True
            item = q[0]
            cid, md, count, mode = item
            try:
                p = _to(cid)
                p["text"] = md if mode else tgformat.md_to_html(md)
                if not mode:
                    p["parse_mode"] = "HTML"
                self.api.call("sendMessage", p)
                q.pop(0)
            except Exception as e:  # noqa: BLE001 - TgError, OSError, ValueError: never the thread
                code, msg, after = e.args if isinstance(e, TgError) else (0, "", None)
                msg = msg.lower()
                item[2] = count = count + 1
                if code == 400 and getattr(e, "migrate_to", None):  # the group is a supergroup now
                    self._move(tgupdate.split_dest(cid)[0], str(e.migrate_to))
                    item[2] = count - 1
                elif code == 403:  # blocked by the user, removed from the group: stop sending there
                    self._blocked(cid, msg)
                elif code == 400 and "thread not found" in msg and ":" in cid:  # the topic is gone: the chat
                    item[0] = tgupdate.split_dest(cid)[0]
                elif code == 400 and "parse" in msg and not mode:  # "can't parse entities"
                    item[3] = 1
                elif code == 400 and "empty" in msg and mode < 2:  # "message text is empty": as typed,
                    if mode:  # then a line that says so (an empty code block, only Unicode spaces)
                        item[1] = "(no reply)"
                    item[3] = mode + 1
                elif code == 400 and "too long" in msg and mode < 2:
                    q.pop(0)
                    for c in reversed(tgformat.split(md, tgformat.TEXT_MAX_UNITS // 2)):
                        q.insert(0, [cid, c, count, 2])
                elif count >= config.TG_SEND_TRIES or 400 <= code < 500 and code != 429:  # for good
                    q.pop(0)
                    self.dropped += 1
                    log.error("tg", "lost %s %s", cid, e)
                else:  # 429 as told; 5xx and the network: 1 s doubling
                    self.send_at = seam.ticks_add(now, 1000 * min(after or 5, config.TG_RETRY_AFTER_MAX_S)
                                                  if code == 429 else
                                                  min(config.TG_BACKOFF_MIN_MS << count, config.TG_BACKOFF_MAX_MS))
        if self.typing and seam.ticks_diff(now, self.typing_at) >= 0 <= seam.ticks_diff(now, self.send_at) \
                and not self._late():
            self.typing_at = seam.ticks_add(now, config.TG_TYPING_EVERY_MS)  # Telegram shows it 5 s
            for cid in list(self.typing):
                if seam.ticks_diff(now, self.typing[cid]) > _TG_TYPING_MAX_MS:
                    del self.typing[cid]  # nobody ended it
                    continue
                if self._late():
                    break
                try:
                    p = _to(cid)
                    p["action"] = "typing"
                    self.api.call("sendChatAction", p)
                except Exception as e:  # noqa: BLE001 - refused: no more typing for that chat
                    if isinstance(e, TgError):
                        del self.typing[cid]
        while self.albums:  # albums whose last part came a while ago: one message each, oldest first
            due = None
            for k in self.albums:
                at = self.albums[k][1]
                if seam.ticks_diff(now, at) >= _TG_ALBUM_WAIT_MS and (
                        due is None or seam.ticks_diff(at, self.albums[due][1]) < 0):
                    due = k
            if due is None:
                break
            msg = self.albums.pop(due)[0]
            ok, pushed = guard.admit(self.bus.inbound, msg, commands.owner())  # room kept for the owner
            guard.tell_busy("telegram", self.queue_text, self.bus, None if ok else msg["chat_id"], pushed,
                            commands.text("busy"))
        self.save_offset()
        return busy

    def _album(self, key, msg, now):
        """Hold part ``msg`` of album ``key`` (``media_group_id``): the parts arrive as
        separate messages, maybe over several polls; ``tick`` sends one message with every
        caption and the media of the first ``_TG_ALBUM_MEDIA_MAX`` parts once none has come
        for ``_TG_ALBUM_WAIT_MS``."""
        a = self.albums.get(key)
        if a is None:
            for x in self.albums.values() if len(self.albums) >= 4 else ():  # at most 4 at once:
                x[1] = seam.ticks_add(now, -_TG_ALBUM_WAIT_MS)  # the others go at the next tick
            self.albums[key] = [msg, now]
            return
        first = a[0]
        a[1] = now
        t = msg["text"].strip()
        if t:
            first["text"] = (first["text"].rstrip() + "\n" + t).strip()
        for x in msg.get("media") or ():
            media = first.setdefault("media", [])
            if len(media) < _TG_ALBUM_MEDIA_MAX:
                media.append(x)

    def _move(self, chat_id, new):
        """Chat ``chat_id`` is ``new`` now (a group became a supergroup): its settings,
        history and reminders move (``tgupdate.migrate``), and what waits to be sent there
        goes to the new id."""
        try:
            if tgupdate.migrate(chat_id, new):
                log.info("tg", "%s is %s now", chat_id, new)
        except (OSError, ValueError) as e:
            log.warn("tg", "migrate %s: %s", chat_id, e)
        for item in self.outq:
            c, t = tgupdate.split_dest(item[0])
            if c == chat_id:
                item[0] = tgupdate.dest(new, t)

    def _blocked(self, chat_id, why):
        """403 from chat ``chat_id``: drop what waits for it, and send nothing more there
        until it writes again."""
        base = tgupdate.split_dest(chat_id)[0]
        if base not in self.blocked:
            log.warn("tg", "%s: %s; not sending there", base, why[:60])
        self.blocked.add(base)
        self.outq[:] = [i for i in self.outq if tgupdate.split_dest(i[0])[0] != base]
        for c in list(self.typing):
            if tgupdate.split_dest(c)[0] == base:
                del self.typing[c]

    def describe(self):
        """The link in words, for /status: the bot's name, or why there is none yet."""
        if not self.api.token():
            return "no bot token"
        if self.me is None:
            return "not reached yet (%s)" % (self.why or "trying")
        return "@%s" % self.me.get("username")

    def _fail(self, e, now):
        """A failed getMe or poll: wait as the error asks, or back off (1 s doubling)."""
        self.errors += 1
        self.why = str(e)[:80]
        wait = None
        if isinstance(e, TgError):
            code, msg, after = e.args
            if code == 429:
                wait = 1000 * min(int(after or 5), config.TG_RETRY_AFTER_MAX_S)
            elif code == 409 and "webhook" in msg.lower():
                msg = "deleteWebhook"  # one string, logged and called
                log.warn("tg", msg)
                try:
                    self._late() or self.api.call(msg)
                except Exception:  # noqa: BLE001 - the next poll tells
                    pass
                wait = config.TG_BACKOFF_MIN_MS
            elif code == 409:
                wait = config.TG_CONFLICT_BACKOFF_MS
                log.warn("tg", commands.text("tg_409"), wait // 1000)
            elif code in (401, 404):
                wait = config.TG_AUTH_BACKOFF_MS
                log.error("tg", commands.text("no_token_h" if seam.on_host() else "no_token"))
        if wait is None:
            wait = self.backoff_ms
            self.backoff_ms = min(wait * 2, config.TG_BACKOFF_MAX_MS)
        log.warn("tg", "%s, %d s", e, wait // 1000)
        self.poll_at = seam.ticks_add(now, wait)

    def _poll(self, now):
        if self.poll is None:
            if seam.ticks_diff(now, self.poll_at) < 0 or self._late():
                return False
            try:
                self.poll = self.api.start_poll(self.offset, config.TG_POLL_TIMEOUT_S, self.limit)
            except Exception as e:  # noqa: BLE001 - OSError, ValueError (a bad tg_api_base)
                self._fail(e, now)
                return False
            held, self.held = self.held, None  # the poll just sent confirms them: act on them now
            for u in held or ():  # act on one update; a failure is logged, the update stays confirmed
                try:
                    m = u.get("message")
                    if m is None:  # edits are ignored; a callback query is answered (stops its spinner)
                        t = "callback_query"
                        if t in u:
                            self.api.call("answerCallbackQuery", {t + "_id": u[t].get("id")})
                        continue
                    chat = m.get("chat") or {}
                    cid = str(chat.get("id"))
                    kind = chat.get("type")
                    if kind == "channel" or cid == "None":
                        continue
                    t = m.get("migrate_to_chat_id")  # a group became a supergroup: the old chat says so...
                    if type(t) is int:
                        self._move(cid, str(t))
                        continue
                    t = m.get("migrate_from_chat_id")  # ...and so does the new one
                    if type(t) is int:
                        self._move(str(t), cid)
                        continue
                    t = m.get("text")
                    cap = t is None  # media (with a caption, or none), or a service message
                    if cap:
                        t = m.get("caption")
                    if t is not None:  # links and mentions keep what formatting hides
                        t = tgupdate.expand(tgformat.fix_surrogates(t),
                                            m.get("caption_entities" if cap else "entities"))
                    group = kind in ("group", "supergroup")
                    if group:  # only when mentioned or replied to
                        if t is None:
                            continue
                        me = self.me
                        name = "@%s" % me.get("username")
                        low = t.lower()
                        k = low.find(name.lower())
                        while k >= 0:  # its own @name: no name character right after it, or before the @
                            for j in (k + len(name), k - 1):
                                if 0 <= j < len(low) and ("a" <= low[j] <= "z" or "0" <= low[j] <= "9" or low[j] == "_"):
                                    break
                            else:
                                break
                            k = low.find(name.lower(), k + 1)
                        if k >= 0:
                            t = (t[:k] + t[k + len(name):]).strip()
                        elif ((m.get("reply_to_message") or {}).get("from") or {}).get("id") != me.get("id"):
                            continue
                    base, cid = cid, tgupdate.dest(cid, tgupdate.thread(m))  # a forum topic: "chat:thread"
                    if not commands.is_allowed(base):
                        if t is not None and commands.try_code(base, t):
                            log.info("tg", "paired %s", cid)
                            self.queue_text(cid, commands.text("paired"), True)
                            continue
                        log.info("tg", "denied %s", cid)
                        # Fair by time: once per period each; while TG_DENY_CHATS_MAX were answered
                        # within it a new one waits (none is pushed out to be answered again).
                        told = self.told
                        last = told.get(cid)
                        if last is None and len(told) >= config.TG_DENY_CHATS_MAX:
                            for c in list(told):
                                if seam.elapsed_ms(told[c], now) >= config.TG_DENY_REPLY_MS:
                                    del told[c]
                        if (len(told) < config.TG_DENY_CHATS_MAX if last is None else
                                seam.elapsed_ms(last, now) >= config.TG_DENY_REPLY_MS):
                            told[cid] = seam.moment()  # a moment: weeks may pass
                            self.queue_text(cid, commands.text("deny", base, base), True)
                        continue
                    self.blocked.discard(base)  # it writes again: it has unblocked the bot
                    media = tgupdate.media(m) if cap else None
                    if media is not None and media["kind"] not in ("image", "voice"):  # too big, or a type refused
                        say = "media_too_big" if media["kind"] == "too_big" else "media_refused_type"
                        self.queue_text(cid, commands.text(say, media["name"], media["cap"] // 1024), True)
                        if t is None:
                            continue
                        media = None
                    if media is not None:
                        t = t or ""
                    elif cap:
                        kind = None
                        for k in commands.text("media").split():
                            if k in m:
                                kind = k
                                break
                        if t is None and kind and isinstance(m.get("media_group_id"), str):
                            t = ""  # a part of an album: the album gets one answer, not one per part
                        elif t is None:  # media without a caption, or a service message (member joined, ...)
                            if kind:
                                self.queue_text(cid, config.TG_MEDIA_REPLY, True)
                            continue
                        else:
                            t = commands.text("caption", kind or "file", t)
                    elif t[:1] == "/":
                        r = commands.run(t, "telegram", cid)
                        if r is not None:
                            self.queue_text(cid, r, True)
                            continue
                    from mimi.storage import sessions

                    msg = {"channel": "telegram", "chat_id": cid, "text": tgupdate.lead(m, self.me.get("id")) + t,
                           "session": sessions.key_for("telegram", cid),
                           "user": tgupdate.name(m.get("sender_chat") or m.get("from")),
                           "message_id": m.get("message_id"), "is_group": group}
                    if media is not None:
                        msg["media"] = [media]
                    if isinstance(m.get("media_group_id"), str):  # an album: one message once all of it is here
                        self._album(m["media_group_id"], msg, now)
                    else:  # room kept for the owner (mimi.guard)
                        ok, pushed = guard.admit(self.bus.inbound, msg, commands.owner())
                        guard.tell_busy("telegram", self.queue_text, self.bus, None if ok else cid, pushed,
                                        commands.text("busy"))
                except Exception as e:  # noqa: BLE001 - a poison update must not stop the channel
                    log.exc("tg", "update", e)
            return True
        if self.poll.expired():
            self.poll.close()
            self.poll = None
            self._fail(OSError("timeout"), now)
            return False
        if not self.poll.ready(0):
            return False
        p, self.poll = self.poll, None
        try:
            r = self.api.updates(p)
        except Exception as e:  # noqa: BLE001 - TgError, OSError: back off, never end the thread
            self._fail(e, now)
            return False
        if not isinstance(r, list):  # over the poll buffer: one at a time, then skip it
            if self.limit > 1:
                self.limit = 1
            else:
                # the update's id, then its chat's: the number after each key, anywhere in what was kept
                i, chat = number_after(r, b'"update_id" :'), number_after(r, b'"chat" : { "id" :')
                if i is None and chat is not None and self.offset:
                    # An update whose id comes after the cut (not Telegram's order): confirm
                    # one id at a time; no update is pending below it, so none is lost.
                    i = self.offset
                if i is None:
                    self._fail(OSError("too big"), now)
                    return False
                log.warn("tg", "skip %d", i)
                self.offset = max(self.offset, i + 1)
                self.unsaved += 1
                if chat is not None and commands.is_allowed(chat):
                    self.queue_text(str(chat), commands.text("too_big"), True)
            return self._poll(now)
        self.backoff_ms = config.TG_BACKOFF_MIN_MS
        self.limit = config.TG_POLL_LIMIT
        if r:
            keep = []
            seen = self.seen  # the last ids taken: one sent again is not answered twice
            for u in r:
                i = u.get("update_id") if isinstance(u, dict) else None
                if not isinstance(i, int) or i < 0 or i in seen or keep and i < self.offset:
                    log.warn("tg", "ignored %s", i)  # no id, a repeat, or out of order in one answer
                    continue
                if i < self.offset:  # after a week without updates Telegram numbers them afresh
                    log.warn("tg", "update ids start again at %d", i)  # from a random id (getUpdates)
                self.offset = i + 1
                seen.append(i)
                keep.append(u)
            del seen[:-8]
            self.unsaved += len(keep)
            self.held = keep
        return self._poll(now)  # at once: the next poll, which confirms these

    # -- out ---------------------------------------------------------------------------

    def queue_text(self, chat_id, text, plain=False):
        """Queue ``text`` for ``chat_id`` (Markdown, or ``plain`` text), split as needed. A
        chunk with nothing but spaces and fence lines (a cut right after a ``` line, a run
        of blank lines longer than a message) is not sent: Telegram would refuse it as
        empty, and its stand-in would be a false "(no reply)"."""
        chunks = tgformat.split(guard.redact(text))  # nothing shaped like a key leaves the board
        for c in chunks:
            if len(chunks) == 1 or plain or not tgformat.blank(c):
                self.outq.append([chat_id, c, 0, 1 if plain else 0])

    def deliver(self, msg):
        """Take an outbound bus message. False (nothing taken) while the send queue is full."""
        cid = str(msg.get("chat_id"))
        kind = msg.get("kind", "text")
        if tgupdate.split_dest(cid)[0] in self.blocked:  # 403 before: nothing goes there
            return True
        if kind == "typing":
            if cid not in self.typing:
                self.typing[cid] = now = seam.ticks_ms()
                self.typing_at = seam.ticks_add(now, -1000)  # due now
        elif kind == "idle":
            self.typing.pop(cid, None)
        else:
            t = msg.get("text") or ""
            if not t.strip():  # a blank note is nothing; a blank reply says so
                if kind != "text":
                    return True
                t = "(no reply)"
            if len(self.outq) >= _TG_OUTQ_MAX:
                return False
            self.queue_text(cid, t)
        return True
