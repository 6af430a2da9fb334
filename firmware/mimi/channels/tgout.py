"""Telegram's outgoing side: reply parts waiting to be sent, and typing indicators.

``text()`` splits a reply (``tgformat.split``) and queues its parts; ``step(now_ms)``
sends the oldest part when due: as HTML, or once more as plain text when Telegram
answers "can't parse entities"; "message is too long" splits it in half once; 429 waits
``retry_after``; network errors back off and a part is dropped (logged) after
``TG_SEND_TRIES``. ``typing_step(now_ms)`` sends ``sendChatAction`` typing every ~4 s for
each chat between the agent's ``typing`` and ``idle``.
Source: https://core.telegram.org/bots/api#sendmessage, #sendchataction.
"""
from mimi import config, log, seam
from mimi.channels import tgformat
from mimi.channels.tgapi import TgError

TAG = "tg"


class Outbox:
    """``Outbox(api, stats)``: ``api`` a ``tgapi.BotApi``; ``stats`` a dict it counts into
    (``sent``, ``dropped``)."""

    def __init__(self, api, stats):
        self.api = api
        self.stats = stats
        self.q = []  # [chat_id, markdown chunk, network failures, plain, resplit]
        self.send_at = seam.ticks_ms()
        self.typing = {}  # chat id -> [next sendChatAction ticks, since ticks]

    def text(self, chat_id, text, plain=False):
        """Queue ``text`` for ``chat_id`` (Markdown, or ``plain`` text), split as needed."""
        for c in tgformat.split(text):
            self.q.append([chat_id, c, 0, plain, False])

    def deliver(self, msg):
        """Take an outbound bus message. False (nothing taken) while the send queue is full."""
        cid = str(msg.get("chat_id"))
        kind = msg.get("kind", "text")
        now = seam.ticks_ms()
        if kind == "typing":
            if cid not in self.typing:
                self.typing[cid] = [now, now]
            return True
        if kind == "idle":
            self.typing.pop(cid, None)
            return True
        text = msg.get("text") or ""
        if not text.strip():
            return True
        if self.q and len(self.q) >= config.TG_OUTQ_MAX:
            return False
        self.text(cid, text)
        return True

    def step(self, now):
        """Send the oldest queued part when due. Returns True when it tried."""
        if not self.q or seam.ticks_diff(now, self.send_at) < 0:
            return False
        item = self.q[0]
        cid, md, fails, plain, resplit = item
        if plain:
            params = {"chat_id": cid, "text": md}
        else:
            params = {"chat_id": cid, "text": tgformat.md_to_html(md), "parse_mode": "HTML"}
        try:
            self.api.call("sendMessage", params)
        except TgError as e:
            self._error(e, item, now)
            return True
        except OSError as e:
            item[2] = fails + 1
            if item[2] >= config.TG_SEND_TRIES:
                self.q.pop(0)
                self.stats["dropped"] += 1
                log.error(TAG, "a reply to chat %s was lost after %d tries: %s", cid, item[2], e)
            else:
                wait = min(config.TG_BACKOFF_MIN_MS << item[2], config.TG_BACKOFF_MAX_MS)
                log.warn(TAG, "sending to %s failed: %s; retry in %d s", cid, e, wait // 1000)
                self.send_at = seam.ticks_add(now, wait)
            return True
        self.q.pop(0)
        self.stats["sent"] += 1
        if cid in self.typing:  # a message ends Telegram's indicator; renew it in 4 s
            self.typing[cid][0] = seam.ticks_add(now, config.TG_TYPING_EVERY_MS)
        return True

    def _error(self, e, item, now):
        cid, md, fails, plain, resplit = item
        desc = e.description.lower()
        if e.code == 429:
            wait_s = min(int(e.retry_after or 5), config.TG_RETRY_AFTER_MAX_S)
            log.warn(TAG, "Telegram asks to slow down: sending again in %d s", wait_s)
            self.send_at = seam.ticks_add(now, wait_s * 1000)
            return
        self.q.pop(0)
        if e.code == 400 and "parse entities" in desc and not plain:
            log.warn(TAG, "Telegram refused the formatting (%s): sending that part as plain text", e.description)
            self.q.insert(0, [cid, md, fails, True, resplit])
            return
        if e.code == 400 and "too long" in desc and not resplit:
            log.warn(TAG, "Telegram says a part is too long: splitting it further")
            parts = tgformat.split(md, tgformat.TEXT_MAX_UNITS // 2)
            for c in reversed(parts):
                self.q.insert(0, [cid, c, fails, True, True])
            return
        self.stats["dropped"] += 1
        log.error(TAG, "Telegram refused a reply to chat %s: %d %s", cid, e.code, e.description)

    def typing_step(self, now):
        """Renew each chat's typing indicator every ``TG_TYPING_EVERY_MS``."""
        if not self.typing:
            return
        for cid in list(self.typing):
            t = self.typing[cid]
            if seam.ticks_diff(now, t[1]) > config.TG_TYPING_MAX_MS:
                del self.typing[cid]
                continue
            if seam.ticks_diff(now, t[0]) < 0 or seam.ticks_diff(now, self.send_at) < 0:
                continue
            t[0] = seam.ticks_add(now, config.TG_TYPING_EVERY_MS)
            try:
                self.api.call("sendChatAction", {"chat_id": cid, "action": "typing"})
            except TgError as e:
                if e.code == 429:
                    self.send_at = seam.ticks_add(now, min(int(e.retry_after or 5), config.TG_RETRY_AFTER_MAX_S) * 1000)
                else:
                    log.warn(TAG, "typing for %s refused: %s", cid, e.description)
                    del self.typing[cid]
            except OSError as e:
                log.debug(TAG, "typing for %s failed: %s", cid, e)
