"""The Feishu (Lark) channel: the long connection in, the open API out.

The long connection needs no public URL (a board behind a home router has none). The
lark-oapi Python SDK's ``lark_oapi/ws/client.py`` is the reference for the protocol:
- ``POST <feishu_domain>/callback/ws/endpoint`` ``{"AppID", "AppSecret"}`` gives a
  ``wss`` URL (with ``service_id`` in its query) and ``ClientConfig``: ``PingInterval``,
  ``ReconnectCount``, ``ReconnectInterval``, ``ReconnectNonce`` (seconds).
- Over the WebSocket (``mimi.net.ws``) each binary message is a ``pbbp2.Frame``
  (``mimi.net.pbbp2``). Every ``PingInterval`` a ping frame goes out (method 0, header
  ``type: ping``); the pong may carry a new ``ClientConfig``. An event is a data frame
  (method 1, ``type: event``), in ``sum`` parts joined by their ``message_id`` header;
  each is acknowledged by sending the frame back with a ``biz_rt`` header (ms taken) and
  the payload ``{"code": 200}`` (500 when handling it failed). Card callbacks are not
  acknowledged (the SDK does not either).
- A lost connection is tried again after a random wait up to ``ReconnectNonce``, then
  every ``ReconnectInterval``; after ``ReconnectCount`` tries (when not -1, "for ever")
  every ``_FS_GIVEUP_BACKOFF_MS``. A wrong app id or secret waits ``_FS_AUTH_BACKOFF_MS``.
  A connection silent for ``_FS_SILENT_PINGS`` ping intervals is taken for dead.
Everything runs in the I/O thread's ``tick``; what blocks is one network exchange per
tick at most (a step of the set-up: token, bot info, endpoint, the WebSocket handshake;
or one reply), each bounded by its deadline, so a pass stays under the watchdog. One TLS
session stays open (the long connection) and one more opens for each API call (README
"Feishu").

In (``im.message.receive_v1``; https://open.feishu.cn/document/server-docs/im-v1/message/events/receive):
text and rich-text (``post``) messages from users; in a group only those that mention
the bot (its ``open_id`` from ``GET /open-apis/bot/v3/info``), the bot's mention removed,
others' shown as ``@name``. Other message types get the "text only" reply. Events seen
before (the last ``_FS_SEEN_MAX`` ``message_id``s: Feishu sends an event again when it
missed the acknowledgement) are dropped. Chat ids name the channel: ``fs_<open_id>`` for
a private chat (the person), ``fs_<chat_id>`` (``fs_oc_...``) for a group; access, the
owner, pairing and the commands are ``mimi.commands``' as for Telegram.

Out (https://open.feishu.cn/document/server-docs/im-v1/message/create): a
``tenant_access_token`` (``/open-apis/auth/v3/tenant_access_token/internal``), renewed
``_FS_TOKEN_EARLY_MS`` before it expires; ``POST /open-apis/im/v1/messages`` to the
person (``receive_id_type=open_id``) or the group (``chat_id``). Replies are split at
``_FS_CHUNK_UNITS`` characters and sent as ``post`` (``fsformat.post``); one Feishu
refuses as content (230001) or whose body would pass the 30 KB post limit goes as
``text``; "too long" (230025) splits it in half once. An expired token is fetched again;
rate limits and network errors back off 1 s doubling; a chunk is tried
``TG_SEND_TRIES`` times. Feishu has no typing indicator for bots: typing is ignored.
"""
import json
import os

from micropython import const

from mimi import commands, config, log, seam
from mimi.channels import fsformat, tgformat
from mimi.net import pbbp2, ws

# Tunables (config.py holds those shared by several modules and the settings); it shares
# Telegram's call deadlines, send tries, back-off and stranger limits (TG_*).
_FS_WS_BUF_BYTES = const(16384)  # the long connection's receive buffer: the longest event frame kept
_FS_SEND_BUF_BYTES = const(2048)  # open API answers (the endpoint's, with its long URL, is the largest)
_FS_OUTQ_MAX = const(24)
_FS_TOKEN_EARLY_MS = const(600000)  # as the SDK: a token is renewed 10 minutes before it expires
_FS_SEEN_MAX = const(32)
_FS_PARTS_MS = const(10000)  # parts of a split event older than this are dropped
_FS_SILENT_PINGS = const(3)
_FS_CHUNK_UNITS = const(4000)  # a post of this many characters stays under 30 KB in any script
_FS_POST_MAX_BYTES = const(30720)  # Feishu's limit on a post or card request body
_FS_AUTH_BACKOFF_MS = const(300000)
_FS_GIVEUP_BACKOFF_MS = const(600000)
_FS_CLOCK_WAIT_MS = const(5000)
_FS_WS_TIMEOUT_MS = const(15000)

# Open API codes (https://open.feishu.cn/document/server-docs/api-call-guide/generic-error-code)
_TOKEN_BAD = (99991661, 99991663, 99991668)  # missing, invalid, expired
_LIMITED = (99991400, 230020)  # request rate, the chat's message rate
_SERVER_BUSY = (1, 1000040343)  # the endpoint's "system busy", "internal error": retry as usual


class FsError(Exception):
    """The open API said no. ``args``: (code, msg, HTTP status)."""


def init(bus):
    """The channel, its buffers allocated: what ``mimi.app.init`` calls while
    ``feishu_app_id`` is set (a function of a name the package has already, not the class:
    one interned name less in every build, docs/heap.md)."""
    return Feishu(bus)


def _rand_ms(top_ms):
    return int.from_bytes(os.urandom(2), "big") * top_ms // 65536


class Feishu:
    """``Feishu(bus, bufs=None)``: the channel for the app in the settings
    (``feishu_app_id``, ``feishu_app_secret``, ``feishu_domain``), read at every tick so a
    change applies at once. ``bufs``: (WebSocket receive, API answer) bytearrays, allocated
    here when None (``_FS_WS_BUF_BYTES``, ``_FS_SEND_BUF_BYTES``).

    State tests look at: ``ws`` (the long connection or None), ``me`` (the bot's info),
    ``conf`` (the server's ClientConfig), ``outq`` (``[chat_id, markdown, tries, mode]``,
    mode 0 post, 1 text, 2 text after a split), ``seen``, ``errors``, ``dropped``, ``acked``.
    """

    def __init__(self, bus, bufs=None):
        self.bus = bus
        self.bufs = bufs or (bytearray(_FS_WS_BUF_BYTES), bytearray(_FS_SEND_BUF_BYTES))
        self.key = None  # (app id, secret, domain) the state belongs to
        self.outq = []
        self.told = {}
        self.seen = []
        self.errors = self.dropped = self.acked = 0
        self.why = ""
        self._reset()

    def _reset(self):
        self.token = None
        self.token_end = 0
        self.me = None
        self.url = None  # the endpoint's answer, for the next step
        self.ws = None
        self.service = 0
        self.conf = {"PingInterval": 120, "ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": 30}
        self.connect_at = self.send_at = self.ping_at = seam.ticks_ms()
        self.tries = 0
        self.parts = {}
        self.banner = False

    # -- the open API ----------------------------------------------------------------

    def _api(self, method, path, body=None, auth=True, headers=None):
        """One call: the answer's JSON dict (``code`` 0). ``FsError`` when Feishu refused,
        ``OSError`` for the network or an answer that is not Feishu's JSON."""
        from mimi.net import http

        h = {"Content-Type": "application/json; charset=utf-8"}
        if auth:
            h["Authorization"] = "Bearer " + self._token()
        for k in headers or ():
            h[k] = headers[k]
        if body is not None and not isinstance(body, str):
            body = json.dumps(body)
        r = http.request(method, config.get("feishu_domain").rstrip("/") + path, h, body,
                         timeout_ms=config.TG_SEND_TIMEOUT_MS, buf=self.bufs[1], deadline_ms=config.TG_CALL_DEADLINE_MS)
        if r.truncated and r.status == 200:  # a created message's echo: only its code matters
            b = bytes(r.body[:64])
            i = b.find(b'"code"')
            if i >= 0 and b[i + 6:i + 9].replace(b" ", b"")[:2] == b":0":
                return {"code": 0}
            raise OSError("bad answer")
        try:
            d = r.json()
            code = d.get("code")
        except Exception:  # noqa: BLE001 - not JSON, not a dict: a proxy's page, a cut answer
            if r.status != 200:
                raise FsError(r.status, "HTTP %d" % r.status, r.status)
            raise OSError("bad answer")
        if r.status != 200 or code != 0:
            msg = d.get("msg")
            raise FsError(code if type(code) is int else r.status, msg if isinstance(msg, str) else "", r.status)
        return d

    def _token(self):
        """The tenant access token, fetched when there is none or it ends within
        ``_FS_TOKEN_EARLY_MS``."""
        now = seam.ticks_ms()
        if self.token is None or seam.ticks_diff(self.token_end, now) < _FS_TOKEN_EARLY_MS:
            d = self._api("POST", "/open-apis/auth/v3/tenant_access_token/internal",
                          {"app_id": config.get("feishu_app_id"), "app_secret": config.get("feishu_app_secret")},
                          False)
            t, exp = d.get("tenant_access_token"), d.get("expire")
            if not isinstance(t, str) or type(exp) is not int or not commands.plain(t):
                raise OSError("bad answer")
            self.token = t
            self.token_end = seam.ticks_add(now, min(exp, 86400) * 1000)
        return self.token

    # -- the long connection --------------------------------------------------------------

    def _configure(self, c):
        """Take the server's ``ClientConfig`` (dict; unknown or malformed values ignored)."""
        if isinstance(c, dict):
            for k in self.conf:
                v = c.get(k)
                if type(v) is int and -1 <= v <= 86400:
                    self.conf[k] = v

    def _connect(self, now):
        """One step towards the long connection per call (the token, the bot's info, the
        endpoint, the WebSocket), so one tick blocks for one network exchange at most."""
        if self.token is None:
            self._token()
            return
        if self.me is None:
            b = self._api("GET", "/open-apis/bot/v3/info").get("bot")
            if not isinstance(b, dict) or not isinstance(b.get("open_id"), str):
                raise OSError("bad answer")
            self.me = {"open_id": b["open_id"], "app_name": str(b.get("app_name") or "")}
            log.info("fs", "bot %s", self.me["app_name"])
            return
        if self.url is None:
            d = self._api("POST", "/callback/ws/endpoint", {"AppID": config.get("feishu_app_id"),
                                                            "AppSecret": config.get("feishu_app_secret")},
                          False, {"locale": "zh"})
            data = d.get("data") if isinstance(d.get("data"), dict) else {}
            url = data.get("URL")
            if not isinstance(url, str):
                raise OSError("bad answer")
            self._configure(data.get("ClientConfig"))
            self.url = url
            return
        url, self.url = self.url, None  # its ticket is good for one connection
        q = url.partition("?")[2]
        self.service = 0
        for kv in q.split("&"):
            k, _, v = kv.partition("=")
            if k == "service_id" and v.isdigit():
                self.service = int(v)
        self.ws = ws.connect(url, self.bufs[0], want=("handshake-status", "handshake-msg", "handshake-autherrcode"),
                             timeout_ms=_FS_WS_TIMEOUT_MS)
        self.tries = 0
        self.ping_at = now  # as the SDK: the first ping at once
        log.info("fs", "connected")
        if not self.banner and not commands.allowed():
            self.banner = True
            print("\n" + commands.text("fs_banner", self.me["app_name"], commands.code()))

    def _lost(self, now, e):
        """The connection failed or ended: close it and schedule the next try."""
        self.errors += 1
        self.why = str(e)[:80]
        self.url = None
        if self.ws is not None:
            self.ws.close()
            self.ws = None
        c = self.conf
        code = e.args[0] if isinstance(e, (FsError, ws.WsRefused)) and e.args else None
        st = e.args[1].get("handshake-status") if isinstance(e, ws.WsRefused) and isinstance(e.args[1], dict) else None
        if isinstance(e, seam.TLSError) and not seam.clock_synced():
            wait = _FS_CLOCK_WAIT_MS  # not a try: the clock comes with NTP
        elif isinstance(e, FsError) and e.args[2] < 500 and code not in _SERVER_BUSY and code not in _LIMITED \
                or st in ("403", "514"):
            wait = _FS_AUTH_BACKOFF_MS  # the app id or secret is wrong, or too many connections
            log.error("fs", commands.text("fs_auth"), e)
        else:
            wait = _rand_ms(c["ReconnectNonce"] * 1000) if not self.tries else c["ReconnectInterval"] * 1000
            if 0 <= c["ReconnectCount"] <= self.tries:
                wait = _FS_GIVEUP_BACKOFF_MS
            self.tries += 1
        log.warn("fs", "%s, %d s", e, wait // 1000)
        self.connect_at = seam.ticks_add(now, wait)

    def _frame(self, m, now):
        """Act on one WebSocket message ``(opcode, data)`` from the long connection."""
        op, data = m
        if data is None:
            log.warn("fs", "a frame over %d bytes was dropped", len(self.bufs[0]))
            return
        f = pbbp2.decode(data)
        kind = pbbp2.header(f, "type")
        pl = f.get("payload")
        if f["method"] == 0:  # control: a pong may bring new settings
            if kind == "pong" and pl:
                try:
                    self._configure(seam.loads_view(pl))
                except ValueError:
                    pass
            return
        if kind != "event":
            return
        n = pbbp2.header(f, "sum", "1")
        if n != "1":  # one part of several: kept until all are here
            mid, i = pbbp2.header(f, "message_id"), pbbp2.header(f, "seq", "")
            n = int(n) if n.isdigit() else 0
            if not 1 < n <= 16 or not i.isdigit() or int(i) >= n:
                raise ValueError("bad parts")
            for k in list(self.parts):
                if seam.ticks_diff(now, self.parts[k][0]) > _FS_PARTS_MS:
                    del self.parts[k]
            ent = self.parts.setdefault(mid, [now, [None] * n])
            ent[1][int(i)] = bytes(pl or b"")
            if None in ent[1]:
                return
            del self.parts[mid]
            pl = b"".join(ent[1])
        t0 = seam.ticks_ms()
        code = 200
        try:
            self._event(seam.loads_view(memoryview(pl or b"null")), now)
        except Exception as e:  # noqa: BLE001 - a poison event must not stop the channel
            log.exc("fs", "event", e)
            code = 500
        f["headers"].append(["biz_rt", str(seam.ticks_diff(seam.ticks_ms(), t0))])
        f["payload"] = ('{"code":%d}' % code).encode()
        self.ws.send(pbbp2.encode(f))
        self.acked += 1

    def _event(self, d, now):
        """An event's JSON (dict): a message from a person goes to the agent."""
        from mimi.storage import sessions

        if (d.get("header") or {}).get("event_type") != "im.message.receive_v1":
            return
        ev = d.get("event") or {}
        m = ev.get("message") or {}
        snd = ev.get("sender") or {}
        if snd.get("sender_type") != "user":  # an app or a bot: never answered (no loops)
            return
        mid = m.get("message_id")
        if mid in self.seen:
            log.info("fs", "again %s", mid)
            return
        self.seen.append(mid)
        del self.seen[:-_FS_SEEN_MAX]
        group = m.get("chat_type") != "p2p"
        who = m.get("chat_id") if group else (snd.get("sender_id") or {}).get("open_id")
        if not isinstance(who, str) or not who:
            return
        cid = "fs_" + who
        names = {}  # mention key -> what stands for it; the bot's own is removed
        hit = False
        for x in m.get("mentions") or ():
            if (x.get("id") or {}).get("open_id") == (self.me or {}).get("open_id"):
                names[x.get("key")] = ""
                hit = True
            else:
                names[x.get("key")] = "@" + str(x.get("name") or "")
        kind = m.get("message_type")
        t = None
        if kind in ("text", "post"):
            c = json.loads(m.get("content") or "{}")
            if kind == "post":
                t = fsformat.post_text(c, names)
            else:
                t = str(c.get("text") or "")
                for k in sorted(names, key=len, reverse=True):  # @_user_10 before @_user_1
                    t = t.replace(k, names[k])
            t = t.strip()
        if group and not hit:
            return
        if not commands.is_allowed(cid):
            if t and commands.try_code(cid, t):
                log.info("fs", "paired %s", cid)
                self.queue_text(cid, commands.text("paired"), True)
                return
            log.info("fs", "denied %s", cid)
            last = self.told.get(cid)
            if last is None or seam.elapsed_ms(last, now) >= config.TG_DENY_REPLY_MS:
                if last is None and len(self.told) >= config.TG_DENY_CHATS_MAX:
                    del self.told[min(self.told, key=self.told.get)]
                self.told[cid] = seam.moment()  # a moment: weeks may pass
                self.queue_text(cid, commands.text("deny", cid, cid), True)
            return
        if not t:
            self.queue_text(cid, config.TG_MEDIA_REPLY, True)
            return
        if t[:1] == "/":
            r = commands.run(t, "feishu", cid)
            if r is not None:
                self.queue_text(cid, r, True)
                return
        from mimi import guard

        ok, pushed = guard.admit(self.bus.inbound, {  # room kept for the owner, as Telegram's
            "channel": "feishu", "chat_id": cid, "text": t, "session": sessions.key_for("feishu", cid), "user": "",
            "message_id": mid, "is_group": group}, commands.owner())
        guard.tell_busy("feishu", self.queue_text, self.bus, None if ok else cid, pushed, commands.text("busy"))

    # -- the channel -----------------------------------------------------------------------

    def tick(self, now):
        """One step: connect when due, read frames, ping, send one reply chunk. Returns True
        when something was done."""
        t0 = seam.ticks_ms()
        app_id, secret = config.get("feishu_app_id"), config.get("feishu_app_secret")
        if not app_id or not secret:
            return False
        key = (app_id, secret, config.get("feishu_domain"))
        if key != self.key:  # the first tick, or the app changed: start afresh
            self.stop()
            self._reset()
            self.key = key
        busy = False
        try:
            if self.ws is None:
                if seam.ticks_diff(now, self.connect_at) >= 0:
                    busy = True
                    self._connect(now)
            else:
                for _ in range(8):
                    m = self.ws.recv(0)
                    if m is None:
                        break
                    busy = True
                    try:
                        self._frame(m, now)
                    except ValueError as e:  # a malformed frame: logged, the connection kept
                        log.warn("fs", "frame: %s", e)
                ping_ms = max(self.conf["PingInterval"], 1) * 1000
                if seam.ticks_diff(now, self.ping_at) >= 0:
                    self.ping_at = seam.ticks_add(now, ping_ms)
                    self.ws.send(pbbp2.encode({"SeqID": 0, "LogID": 0, "service": self.service, "method": 0,
                                               "headers": [["type", "ping"]]}))
                if seam.ticks_diff(seam.ticks_ms(), self.ws.last_ms) > _FS_SILENT_PINGS * ping_ms:
                    raise OSError("silent for %d s" % (_FS_SILENT_PINGS * ping_ms // 1000))
        except Exception as e:  # noqa: BLE001 - OSError, WsClosed, FsError, ValueError: try again later
            self._lost(now, e)
        q = self.outq
        if q and seam.ticks_diff(now, self.send_at) >= 0 and \
                seam.ticks_diff(seam.ticks_ms(), t0) < config.TG_CALL_DEADLINE_MS:
            busy = True
            self._send(q, now)
        return busy

    def _send(self, q, now):
        """Send the oldest chunk of ``q``; on failure change its form, split it, retry or drop it."""
        item = q[0]
        cid, md, count, mode = item
        rid = cid[3:]
        body = None
        if not mode:
            body = json.dumps({"receive_id": rid, "msg_type": "post", "content": json.dumps(fsformat.post(md))})
            if len(seam.as_bytes(body)) > _FS_POST_MAX_BYTES:
                body = None
                item[3] = mode = 1
        if body is None:
            body = json.dumps({"receive_id": rid, "msg_type": "text", "content": json.dumps({"text": md})})
        try:
            self._api("POST", "/open-apis/im/v1/messages?receive_id_type=" + ("chat_id" if rid[:3] == "oc_" else "open_id"),
                      body)
            q.pop(0)
            return
        except Exception as e:  # noqa: BLE001 - FsError, OSError, ValueError: never the thread
            code, status = (e.args[0], e.args[2]) if isinstance(e, FsError) else (0, 0)
            why = e
        item[2] = count = count + 1
        if code in _TOKEN_BAD:
            self.token = None  # fetched again for the next try
        elif code == 230001 and not mode:  # the post was refused: as text, at once
            item[3] = 1
            return
        elif code == 230025 and mode < 2:  # too long: in halves, as text
            q.pop(0)
            for c in reversed(tgformat.split(md, max(len(md) // 2, 1))):
                q.insert(0, [cid, c, count, 2])
            return
        if count >= config.TG_SEND_TRIES or 400 <= status < 500 and status != 429 and code not in _TOKEN_BAD \
                and code not in _LIMITED:  # for good
            q.pop(0)
            self.dropped += 1
            log.error("fs", "lost %s %s", cid, why)
        else:  # rate limits, 5xx, the network, a stale token: 1 s doubling
            self.send_at = seam.ticks_add(now, min(config.TG_BACKOFF_MIN_MS << count, config.TG_BACKOFF_MAX_MS))

    def stop(self):
        """Close the long connection (unacknowledged events come again after a reconnect)."""
        if self.ws is not None:
            self.ws.close()
            self.ws = None

    def describe(self):
        """The link in words, for /status."""
        if not config.get("feishu_app_id"):
            return "not set up"
        if self.ws is None:
            return "not connected (%s)" % (self.why or "trying")
        return "%s, connected" % (self.me or {}).get("app_name", "?")

    # -- out -----------------------------------------------------------------------------

    def queue_text(self, chat_id, text, plain=False):
        """Queue ``text`` for ``chat_id`` (Markdown, or ``plain`` text), split as needed."""
        for c in tgformat.split(text, _FS_CHUNK_UNITS):
            if plain or not tgformat.blank(c):
                self.outq.append([chat_id, c, 0, 1 if plain else 0])

    def deliver(self, msg):
        """Take an outbound bus message. False (nothing taken) while the send queue is full."""
        kind = msg.get("kind", "text")
        if kind in ("typing", "idle"):
            return True
        t = msg.get("text") or ""
        if not t.strip():
            if kind != "text":
                return True
            t = "(no reply)"
        if len(self.outq) >= _FS_OUTQ_MAX:
            return False
        self.queue_text(str(msg.get("chat_id")), t)
        return True
