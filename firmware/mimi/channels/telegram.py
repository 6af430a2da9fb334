"""The Telegram channel: long polling in, replies out, typing while the agent works.

The I/O thread calls ``tick(now_ms)`` in its loop and ``deliver(msg)`` for outbound bus
messages; nothing here blocks for the long poll (``http.Pending``), so replies go out
while a poll waits.

In (https://core.telegram.org/bots/api#getupdates):
- ``getUpdates`` with a 30 s long poll, the socket timeout above it, ``allowed_updates``
  set, at most ``TG_POLL_LIMIT`` updates per answer (bounds the response buffer).
- No answer twice: updates are acted on only after the next poll, which carries the new
  offset and so confirms them to Telegram, has been sent. Confirmed updates are gone
  from Telegram for good, so a reboot cannot bring them back, and a handling failure
  cannot make a poison update come back forever. The offset is also kept in the
  settings store (NVS, wear-levelled) every ``TG_OFFSET_SAVE_EVERY`` updates or
  ``TG_OFFSET_SAVE_MS``, and at ``stop()``; an older stored offset is harmless
  (confirmed updates are not redelivered). The cost: a crash between the confirming
  poll and the hand-over to the agent loses that message (at most once, never twice).
- Access (``access``): closed by default. A stranger gets one short reply with its chat
  id and how the owner allows it (rate-limited), or pairs by sending the console's
  one-time code; strangers never reach the agent.
- Text and captions of media go to the agent; other kinds (sticker, voice, location, ...)
  get ``TG_MEDIA_REPLY``; service messages, edits and callback queries are ignored
  (a callback query is answered so the client stops its spinner). In groups, only
  messages that mention the bot or reply to it count.
- Commands ``/start /help /new /status /model /provider /memory`` are answered here
  (``mimi.commands``) and registered with ``setMyCommands``; others go to the agent.

Out (``tgout.Outbox``):
- Markdown from the agent is split at 4096 UTF-16 units (``tgformat.split``) and each
  chunk sent as HTML; when Telegram answers "can't parse entities" that chunk is sent
  once more as plain text. "message is too long" splits the chunk in half once.
- ``typing``/``idle`` bus messages: ``sendChatAction`` typing every ~4 s in between.
- 429: wait ``parameters.retry_after``; 409: logged with what to do, backed off;
  401: the token is wrong, long back-off; network errors: back off 1 s doubling to 60 s.
"""
from mimi import config, log, seam
from mimi.channels import access, tgformat
from mimi.channels.tgapi import BotApi, TgError, Truncated
from mimi.channels.tgout import Outbox

TAG = "tg"

# Message kinds that carry media or data but no text (a caption, when present, counts).
_MEDIA = ("photo", "sticker", "voice", "audio", "video", "video_note", "animation", "document",
          "location", "venue", "contact", "poll", "dice", "game", "story", "paid_media")
_DENY = ("This is a private assistant. Your chat id is %s. Its owner can let you in on the "
         "serial console (allow %s), or by sending the console's pairing code from this chat.")
_BUSY = "I am busy with other messages right now; please send that again in a minute."
_PAIRED = "Paired: this chat may talk to me now. /help lists what I understand."


def _media_kind(m):
    for k in _MEDIA:
        if k in m:
            return k
    return None


class Telegram:
    """``Telegram(bus, api=None, pairing=None)``.

    ``api``: a ``tgapi.BotApi`` (default: one with buffers allocated here);
    ``pairing``: an ``access.Pairing`` or None.
    """

    def __init__(self, bus, api=None, pairing=None):
        self.bus = bus
        self.api = api or BotApi(bytearray(config.TG_POLL_BUF_BYTES), bytearray(config.TG_SEND_BUF_BYTES))
        self.pairing = pairing
        self.limiter = access.Limiter(config.TG_DENY_REPLY_MS, config.TG_DENY_CHATS_MAX)
        self.me = None  # getMe result once known
        self.token = None  # the token self.me belongs to
        self.offset = 0
        self.unsaved = 0
        self.saved_ms = seam.ticks_ms()
        self.poll = None  # the long poll under way (http.Pending)
        self.held = None  # updates received, acted on once the next poll confirmed them
        self.limit = config.TG_POLL_LIMIT
        self.poll_at = seam.ticks_ms()  # no poll before this (back-off)
        self.backoff_ms = config.TG_BACKOFF_MIN_MS
        self.stats = {"updates": 0, "sent": 0, "dropped": 0, "poll_errors": 0}
        self.out = Outbox(self.api, self.stats)
        self._no_token_logged = False
        self._conflicts = 0

    # -- life ------------------------------------------------------------------------------

    def _load_offset(self, bot_id):
        v = seam.store_get(config.TG_OFFSET_KEY) or ""
        bid, _, off = v.partition(":")
        if bid == str(bot_id) and off.isdigit():
            return int(off)
        return 0

    def save_offset(self, now_ms=None, force=False):
        """Store the offset when enough updates or time passed (or ``force``)."""
        if not self.unsaved or self.me is None:
            return False
        now_ms = seam.ticks_ms() if now_ms is None else now_ms
        if not force and self.unsaved < config.TG_OFFSET_SAVE_EVERY and \
                seam.ticks_diff(now_ms, self.saved_ms) < config.TG_OFFSET_SAVE_MS:
            return False
        try:
            seam.store_set(config.TG_OFFSET_KEY, "%s:%d" % (self.me["id"], self.offset))
        except (OSError, ValueError) as e:
            log.warn(TAG, "could not keep the offset: %s", e)
            return False
        self.unsaved = 0
        self.saved_ms = now_ms
        return True

    def _hello(self, now):
        """getMe (the bot's id and username, for groups) and setMyCommands, once per token."""
        try:
            me = self.api.call("getMe", want_result=True)
        except TgError as e:
            self._api_error(e, now)
            return False
        except OSError as e:
            self._net_error(e, now, "getMe")
            return False
        self.me = me
        self.token = self.api.token()
        self.offset = max(self.offset, self._load_offset(me.get("id")))
        try:
            self.api.call("setMyCommands", {"commands": [{"command": c, "description": d}
                                                         for c, d in config.TG_COMMANDS]})
        except (TgError, OSError) as e:
            log.warn(TAG, "setMyCommands failed (the command menu may be missing): %s", e)
        log.info(TAG, "polling as @%s", me.get("username"))
        if self.pairing is not None and not access.allowed():
            code = self.pairing.new()
            print("\n[tg] No chat is allowed yet. Send this pairing code to @%s from your Telegram: %s\n"
                  "     (or on this console: from mimi import cli; cli.allow(<chat id>))\n"
                  % (me.get("username"), code))
        return True

    def stop(self):
        """Close the long poll and keep the offset."""
        if self.poll is not None:
            try:
                self.poll.close()
            except OSError:
                pass
            self.poll = None
        if self.held:  # received but not acted on: keep them due for the next start
            ids = [u.get("update_id") for u in self.held if isinstance(u, dict)]
            ids = [i for i in ids if isinstance(i, int)]
            if ids:
                self.offset = min(ids)
                self.unsaved += 1
            self.held = None
        self.save_offset(force=True)

    # -- the I/O thread's step ----------------------------------------------------------

    def tick(self, now_ms):
        """One step: poll, send, typing, offset. Returns True when something was done."""
        token = self.api.token()
        if not token:
            if not self._no_token_logged:
                log.warn(TAG, "no bot token: from mimi import cli; cli.set_tg_token('123:ABC...')")
                self._no_token_logged = True
            return False
        self._no_token_logged = False
        if self.me is None or token != self.token:
            if self.token is not None and token != self.token:
                self._new_token()
            if seam.ticks_diff(now_ms, self.poll_at) < 0 or not self._hello(now_ms):
                return False
        busy = self._poll_step(now_ms)
        busy = self.out.step(now_ms) or busy
        self.out.typing_step(now_ms)
        self.save_offset(now_ms)
        return busy

    def _new_token(self):
        log.info(TAG, "the bot token changed: starting afresh")
        if self.poll is not None:
            self.poll.close()
            self.poll = None
        self.me = None
        self.offset = 0
        self.unsaved = 0
        self.held = None

    # -- polling --------------------------------------------------------------------------

    def _poll_step(self, now):
        if self.poll is None:
            if seam.ticks_diff(now, self.poll_at) < 0:
                return False
            try:
                self.poll = self.api.start_poll(self.offset, config.TG_POLL_TIMEOUT_S, self.limit)
            except OSError as e:
                self._net_error(e, now, "getUpdates")
                return False
            if self.held:  # the poll just sent confirms them: now they may be acted on
                held, self.held = self.held, None
                for u in held:
                    self._handle(u, now)
            return True
        if self.poll.expired():
            self.poll.close()
            self.poll = None
            self._net_error(OSError("no answer to getUpdates in time"), now, "getUpdates")
            return False
        if not self.poll.ready(0):
            return False
        p, self.poll = self.poll, None
        try:
            ups = self.api.updates(p)
        except Truncated as e:
            self._truncated(e.raw, now)
            return self._poll_step(now)
        except TgError as e:
            self._api_error(e, now)
            return False
        except OSError as e:
            self._net_error(e, now, "getUpdates")
            return False
        self.backoff_ms = config.TG_BACKOFF_MIN_MS
        self._conflicts = 0
        self.limit = config.TG_POLL_LIMIT
        if ups:
            top = self.offset - 1
            for u in ups:
                uid = u.get("update_id") if isinstance(u, dict) else None
                if isinstance(uid, int) and uid > top:
                    top = uid
            self.unsaved += len(ups)
            self.offset = top + 1
            self.stats["updates"] += len(ups)
            self.held = ups
        return self._poll_step(now)  # at once: the next poll, which confirms these

    def _truncated(self, raw, now):
        """An answer did not fit the buffer: ask for one update at a time; a single update
        that does not fit is skipped (its sender is told)."""
        if self.limit > 1:
            log.warn(TAG, "updates over %d bytes: polling one at a time", config.TG_POLL_BUF_BYTES)
            self.limit = 1
            return
        uid = _int_after(raw, b'"update_id":')
        if uid is None:
            self._net_error(OSError("an update too large to read"), now, "getUpdates")
            return
        log.warn(TAG, "update %d is over %d bytes: skipped", uid, config.TG_POLL_BUF_BYTES)
        self.offset = max(self.offset, uid + 1)
        self.unsaved += 1
        chat = _int_after(raw, b'"chat":{"id":')
        if chat is not None and access.is_allowed(chat):
            self.queue_text(str(chat), "That message is too long for me to read; please send it in parts.", True)

    def _net_error(self, e, now, what):
        self.stats["poll_errors"] += 1
        log.warn(TAG, "%s failed: %s; retry in %d s", what, e, self.backoff_ms // 1000)
        self.poll_at = seam.ticks_add(now, self.backoff_ms)
        self.backoff_ms = min(self.backoff_ms * 2, config.TG_BACKOFF_MAX_MS)

    def _api_error(self, e, now):
        self.stats["poll_errors"] += 1
        if e.code == 429:
            wait_s = min(int(e.retry_after or 5), config.TG_RETRY_AFTER_MAX_S)
            log.warn(TAG, "Telegram asks to slow down: waiting %d s", wait_s)
            self.poll_at = seam.ticks_add(now, wait_s * 1000)
        elif e.code == 409:
            self._conflicts += 1
            if "webhook" in e.description.lower():
                log.warn(TAG, "409: a webhook is set for this bot, which blocks polling; removing it "
                              "(deleteWebhook)")
                try:
                    self.api.call("deleteWebhook")
                except (TgError, OSError) as e2:
                    log.warn(TAG, "deleteWebhook failed: %s", e2)
                self.poll_at = seam.ticks_add(now, config.TG_BACKOFF_MIN_MS)
            else:
                log.warn(TAG, "409: another program polls this bot's token (only one may). Stop it, or give "
                              "mimi its own bot from @BotFather. Retrying in %d s",
                         config.TG_CONFLICT_BACKOFF_MS // 1000)
                self.poll_at = seam.ticks_add(now, config.TG_CONFLICT_BACKOFF_MS)
        elif e.code in (401, 404):
            log.error(TAG, "%d: Telegram refused the bot token (%s): set it with cli.set_tg_token(...)",
                      e.code, e.description)
            self.poll_at = seam.ticks_add(now, config.TG_AUTH_BACKOFF_MS)
        else:
            log.warn(TAG, "Telegram error %d: %s", e.code, e.description)
            self._net_error(e, now, "getUpdates")

    # -- handling updates -----------------------------------------------------------------

    def _handle(self, u, now):
        """Act on one update; any failure is logged and the update stays confirmed."""
        try:
            if not isinstance(u, dict):
                return
            if "message" in u:
                self._message(u["message"], now)
            elif "edited_message" in u:
                log.info(TAG, "an edited message was ignored (send it again to ask anew)")
            elif "callback_query" in u:
                cq = u["callback_query"] or {}
                self.api.call("answerCallbackQuery", {"callback_query_id": cq.get("id")})
        except Exception as e:  # noqa: BLE001 - a poison update must not stop the channel
            log.exc(TAG, "update %s failed" % (u.get("update_id") if isinstance(u, dict) else "?"), e)

    def _addressed(self, m, text):
        """In a group: (True, text without the mention) when the message is for the bot."""
        me = self.me or {}
        name = "@" + str(me.get("username") or "")
        low = text.lower()
        k = low.find(name.lower()) if len(name) > 1 else -1
        if k >= 0:
            return True, (text[:k] + text[k + len(name):]).strip()
        r = m.get("reply_to_message") or {}
        if (r.get("from") or {}).get("id") == me.get("id") and me.get("id") is not None:
            return True, text
        return False, text

    def _message(self, m, now):
        chat = m.get("chat") or {}
        cid = str(chat.get("id"))
        ctype = chat.get("type")
        if ctype == "channel" or chat.get("id") is None:
            return
        text = m.get("text")
        caption = None
        if text is None and m.get("caption") is not None:
            caption = tgformat.fix_surrogates(m.get("caption"))
        if text is not None:
            text = tgformat.fix_surrogates(text)
        group = ctype in ("group", "supergroup")
        if group:
            if text is None and caption is None:
                return  # media and service messages in groups are not for us
            ok, t = self._addressed(m, text if text is not None else caption)
            if not ok:
                return
            if text is not None:
                text = t
            else:
                caption = t
        if not access.is_allowed(cid):
            self._stranger(cid, text, now)
            return
        kind = _media_kind(m)
        if text is None and caption is None:
            if kind is not None:
                self.queue_text(cid, config.TG_MEDIA_REPLY, True)
            return  # a service message (member joined, title changed, ...)
        if caption is not None:
            text = "(sent a %s I cannot see, with the caption:) %s" % (kind or "file", caption)
        elif text.startswith("/"):
            from mimi import commands  # loaded on the first command only

            reply = commands.run(text, "telegram", cid)
            if reply is not None:
                self.queue_text(cid, reply, True)
                return
        msg = {"channel": "telegram", "chat_id": cid, "text": text, "session": _session(cid),
               "user": (m.get("from") or {}).get("first_name", ""), "message_id": m.get("message_id"),
               "is_group": group}
        if not self.bus.inbound.put(msg):
            log.warn(TAG, "inbound queue full: chat %s told to wait", cid)
            self.queue_text(cid, _BUSY, True)

    def _stranger(self, cid, text, now):
        if text is not None and self.pairing is not None and self.pairing.try_code(cid, text):
            log.info(TAG, "chat %s paired", cid)
            self.queue_text(cid, _PAIRED, True)
            return
        log.info(TAG, "a message from chat %s, which is not allowed, was ignored", cid)
        if self.limiter.ok(cid, now):
            self.queue_text(cid, _DENY % (cid, cid), True)

    # -- sending (tgout.Outbox) ------------------------------------------------------

    @property
    def outq(self):
        return self.out.q

    @property
    def typing(self):
        return self.out.typing

    def queue_text(self, chat_id, text, plain=False):
        """Queue ``text`` for ``chat_id`` (Markdown, or ``plain`` text), split as needed."""
        self.out.text(chat_id, text, plain)

    def deliver(self, msg):
        """Take an outbound bus message. False (nothing taken) while the send queue is full."""
        return self.out.deliver(msg)


def _session(cid):
    from mimi.storage import sessions

    return sessions.key_for("telegram", cid)


def _int_after(raw, key):
    i = raw.find(key)
    if i < 0:
        return None
    i += len(key)
    j = i
    if j < len(raw) and raw[j] == 45:  # '-'
        j += 1
    while j < len(raw) and 48 <= raw[j] <= 57:
        j += 1
    try:
        return int(raw[i:j])
    except ValueError:
        return None
