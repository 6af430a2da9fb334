"""A local fake of Feishu (Lark) for a bot: its open API over HTTP and its long connection.

    fs = FakeFeishu().start()            # HTTP and WebSocket servers on 127.0.0.1, free ports
    fs.url                               # "http://127.0.0.1:PORT": the feishu_domain setting
    fs.app_id, fs.app_secret             # the app's made-up credentials
    fs.wait_connected()                  # a client holds the long connection
    mid = fs.inject_text("hello")        # a user writes to the bot (p2p); returns the message_id
    fs.wait_sent()                       # the bot's messages, as recorded
    fs.texts("ou_...")                   # what the bot said to that user or chat, as plain text
    fs.stop()

HTTP (https://open.feishu.cn/document/server-docs/...; JSON bodies, ``{"code": 0, "msg", ...}``,
errors with HTTP 400 and a non-zero ``code``):
- ``POST /open-apis/auth/v3/tenant_access_token/internal`` ``{"app_id", "app_secret"}`` ->
  ``{"code": 0, "tenant_access_token": "t-...", "expire": seconds}`` (10014 for a wrong
  secret, 10003 for a wrong app id). ``token_ttl_s`` sets the expiry; tokens expire then.
- ``GET /open-apis/bot/v3/info`` -> ``{"code": 0, "bot": {"app_name", "open_id", ...}}``.
- ``POST /open-apis/im/v1/messages?receive_id_type=open_id|chat_id`` (``Authorization:
  Bearer <tenant token>``; 99991663 for a bad or expired token, 99991661 for none)
  ``{"receive_id", "msg_type", "content"}``, ``content`` a JSON string: ``text``
  ``{"text"}``, ``post`` ``{locale: {"title", "content": [[element]]}}`` with the tags
  the docs list (text with style, a, at, img, media, emotion, code_block, hr, md) and
  ``interactive`` (a card object). Wrong shapes get 230001; a body over the limit (text
  150 KB, post and card 30 KB) gets 230025; an unknown receiver 230013. The answer is the
  created message (``data.message_id`` ...).
- ``POST /callback/ws/endpoint`` ``{"AppID", "AppSecret"}`` (as the lark-oapi SDK sends it)
  -> ``{"code": 0, "data": {"URL": "ws://.../ws/v2?device_id=..&service_id=..&ticket=..",
  "ClientConfig": {"PingInterval", "ReconnectCount", "ReconnectInterval", "ReconnectNonce"}}}``.
The long connection (the SDK's ``lark_oapi/ws/client.py`` is the reference): binary
WebSocket messages, each a protobuf ``pbbp2.Frame``. A ping (method 0, header
``type: ping``) gets a pong carrying the ``ClientConfig`` JSON; an event is a data frame
(method 1, headers ``type: event``, ``message_id``, ``sum``, ``seq``, ``trace_id``) whose
payload is the event JSON, split into ``sum`` parts when asked; the client acknowledges
it by sending the frame back with payload ``{"code": 200}`` (and a ``biz_rt`` header).
An event not acknowledged within ``redeliver_s`` is sent again (Feishu retries), so
de-duplication can be tested. A ticket is good for one connection.

Faults: ``fail(path, code, msg, status=400, times=1)``; ``kick(code)`` closes the long
connection from the server side.
Control over HTTP (``/_fake/...``, not recorded), for a client in another process (the
firmware under ``micropython``): ``POST /_fake/inject`` ``{"message_type", "content" |
"text", "parts", and ``event``'s keywords; "mention_bot": true adds the bot's mention}``
-> ``{"message_id"}``; ``POST /_fake/fail`` ``{"path", "code", "msg", "status", "times"}``;
``POST /_fake/kick``; ``POST /_fake/expire`` (every token expires now);
``GET /_fake/state`` -> ``{"acks", "pings", "connections", "sent", "token_calls"}``.
Reading: ``requests`` (HTTP, as ``FakeServer`` records them), ``sent`` (messages accepted:
dicts with ``receive_id``, ``receive_id_type``, ``msg_type``, ``content`` parsed),
``acks`` (frames acknowledged, as dicts), ``pings``, ``connections``.
"""
import json
import threading
import time
import uuid

from websockets.sync.server import serve

from host_sim.fakes import FakeServer, Out

# Frames through the lark-oapi SDK's own protobuf, not the firmware's codec, so the two
# meet only on the wire.
from lark_oapi.ws.pb.pbbp2_pb2 import Frame

POST_TAGS = ("text", "a", "at", "img", "media", "emotion", "code_block", "hr", "md")
STYLES = ("bold", "italic", "underline", "lineThrough")
TEXT_MAX_BYTES = 150 * 1024
POST_MAX_BYTES = 30 * 1024


def _err(code, msg, status=400):
    return Out(status, {"code": code, "msg": msg, "error": {"log_id": uuid.uuid4().hex}})


class FakeFeishu(FakeServer):
    def __init__(self, app_id="cli_fake0123456789", app_secret="FAKEsecret0123456789abcdef",
                 bot_open_id="ou_bot00000000000000000000000000000", ping_s=120, reconnect_s=2,
                 reconnect_nonce_s=0, reconnect_count=-1, token_ttl_s=7200, redeliver_s=None):
        super().__init__()
        self.app_id, self.app_secret, self.bot_open_id = app_id, app_secret, bot_open_id
        self.config = {"PingInterval": ping_s, "ReconnectCount": reconnect_count,
                       "ReconnectInterval": reconnect_s, "ReconnectNonce": reconnect_nonce_s}
        self.token_ttl_s = token_ttl_s
        self.redeliver_s = redeliver_s
        self.tokens = {}  # token -> expiry (time.time())
        self.tickets = set()
        self.service_id = 73
        self.sent, self.acks, self.pings, self.connections = [], [], [], 0
        self.faults = {}
        self.ws = None  # the client's connection
        self.users = {"ou_user0000000000000000000000000001"}
        self.chats = {"oc_group000000000000000000000000001"}
        self._cond = threading.Condition()
        self._unacked = {}  # frame message_id -> (frames, time sent)
        self._seq = 0

    # -- lifecycle -------------------------------------------------------------------

    def start(self):
        super().start()
        self._ws_server = serve(self._serve_ws, "127.0.0.1", 0, ping_interval=None, max_size=2 ** 20)
        self.ws_port = self._ws_server.socket.getsockname()[1]
        threading.Thread(target=self._ws_server.serve_forever, daemon=True).start()
        if self.redeliver_s:
            threading.Thread(target=self._redeliver, daemon=True).start()
        return self

    def stop(self):
        self._ws_server.shutdown()
        super().stop()

    def fail(self, path, code, msg, status=400, times=1):
        self.faults[path] = [code, msg, status, times]

    # -- HTTP ------------------------------------------------------------------------

    def handle(self, req):
        p = req["path"]
        if p.startswith("/_fake/"):
            return self._control(p[7:], req["json"] if isinstance(req["json"], dict) else {})
        f = self.faults.get(p)
        if f and f[3] > 0:
            f[3] -= 1
            return _err(f[0], f[1], f[2])
        body = req["json"] if isinstance(req["json"], dict) else {}
        if p == "/open-apis/auth/v3/tenant_access_token/internal" and req["method"] == "POST":
            if body.get("app_id") != self.app_id:
                return _err(10003, "invalid param")
            if body.get("app_secret") != self.app_secret:
                return _err(10014, "app secret invalid")
            t = "t-" + uuid.uuid4().hex
            self.tokens[t] = time.time() + self.token_ttl_s
            return Out(200, {"code": 0, "msg": "ok", "tenant_access_token": t, "expire": self.token_ttl_s})
        if p == "/callback/ws/endpoint" and req["method"] == "POST":
            if body.get("AppID") != self.app_id or body.get("AppSecret") != self.app_secret:
                return Out(200, {"code": 1000040351, "msg": "incorrect app id or secret", "data": None})
            ticket = uuid.uuid4().hex
            self.tickets.add(ticket)
            url = "ws://127.0.0.1:%d/ws/v2?fpid=493&aid=552564&device_id=%s&access_key=%s&service_id=%d&ticket=%s" % (
                self.ws_port, uuid.uuid4().hex[:16], uuid.uuid4().hex, self.service_id, ticket)
            return Out(200, {"code": 0, "msg": "ok", "data": {"URL": url, "ClientConfig": self.config}})
        auth = req["headers"].get("authorization", "")
        if not auth.startswith("Bearer "):
            return _err(99991661, "Missing access token for authorization.")
        exp = self.tokens.get(auth[7:])
        if exp is None or exp < time.time():
            return _err(99991663, "Invalid access token for authorization.")
        if p == "/open-apis/bot/v3/info" and req["method"] == "GET":
            return Out(200, {"code": 0, "msg": "ok", "bot": {"activate_status": 2, "app_name": "mimi",
                                                            "avatar_url": "", "ip_white_list": [],
                                                            "open_id": self.bot_open_id}})
        if p == "/open-apis/im/v1/messages" and req["method"] == "POST":
            return self._create(req["query"].get("receive_id_type"), body, len(req["body"]))
        return Out(404, b"404 page not found", {"Content-Type": "text/plain"})

    def _control(self, what, b):
        if what == "inject":
            mt = b.pop("message_type", "text")
            content = b.pop("content", None) or {"text": b.pop("text", "")}
            b.pop("text", None)
            parts = b.pop("parts", 1)
            if b.pop("mention_bot", False):
                b["mentions"] = [("@_user_1", self.bot_open_id, "mimi")] + [tuple(m) for m in b.get("mentions", ())]
            elif "mentions" in b:
                b["mentions"] = [tuple(m) for m in b["mentions"]]
            ev = self.event(mt, content, **b)
            self.push(ev, parts)
            return Out(200, {"message_id": ev["event"]["message"]["message_id"]})
        if what == "fail":
            self.fail(b["path"], b["code"], b.get("msg", "refused"), b.get("status", 400), b.get("times", 1))
        elif what == "kick":
            self.kick(b.get("code", 1000))
        elif what == "expire":
            for t in self.tokens:
                self.tokens[t] = 0
        elif what == "state":
            with self._cond:
                return Out(200, {"acks": [{"headers": a["headers"], "payload": a["payload"]} for a in self.acks],
                                 "pings": len(self.pings), "connections": self.connections, "sent": self.sent,
                                 "token_calls": sum(1 for q in self.requests if q["path"].endswith("/internal"))})
        return Out(200, {"ok": True})

    def _create(self, id_type, body, size):
        rid, mt, content = body.get("receive_id"), body.get("msg_type"), body.get("content")
        if id_type not in ("open_id", "user_id", "union_id", "email", "chat_id"):
            return _err(99992402, "field validation failed: receive_id_type")
        if not isinstance(rid, str) or not isinstance(mt, str) or not isinstance(content, str):
            return _err(99992402, "field validation failed")
        known = self.users if id_type == "open_id" else self.chats if id_type == "chat_id" else ()
        if rid not in known:
            return _err(230013, "Bot has NO availability to this user.")
        if size > (TEXT_MAX_BYTES if mt == "text" else POST_MAX_BYTES):
            return _err(230025, "The length of the message content reaches its limit.")
        try:
            c = json.loads(content)
            why = _check(mt, c)
        except ValueError:
            why = "content is not JSON"
        if why:
            return _err(230001, "Your request contains an invalid request parameter, ext=%s" % why)
        now = str(int(time.time() * 1000))
        mid = "om_" + uuid.uuid4().hex
        with self._cond:
            self.sent.append({"receive_id": rid, "receive_id_type": id_type, "msg_type": mt, "content": c,
                              "message_id": mid})
            self._cond.notify_all()
        chat = rid if id_type == "chat_id" else "oc_p2p" + rid[3:]
        return Out(200, {"code": 0, "msg": "success", "data": {
            "message_id": mid, "root_id": "", "parent_id": "", "thread_id": "", "msg_type": mt,
            "create_time": now, "update_time": now, "deleted": False, "updated": False, "chat_id": chat,
            "sender": {"id": self.app_id, "id_type": "app_id", "sender_type": "app", "tenant_key": "fake_tenant"},
            "body": {"content": content}, "mentions": [], "upper_message_id": ""}})

    # -- reading what the bot sent -------------------------------------------------------

    def wait_sent(self, pred=None, timeout=10.0, count=1):
        pred = pred or (lambda m: True)
        end = time.time() + timeout
        with self._cond:
            while True:
                got = [m for m in self.sent if pred(m)]
                if len(got) >= count:
                    return got
                if time.time() > end:
                    raise AssertionError("fake Feishu: wanted %d messages, got %d: %r" % (count, len(got), self.sent[-10:]))
                self._cond.wait(0.05)

    def texts(self, receive_id):
        """What the bot sent to ``receive_id``, each message as plain text (a post flattened)."""
        return [plain(m["msg_type"], m["content"]) for m in self.sent if m["receive_id"] == receive_id]

    def wait_connected(self, timeout=10.0, count=1):
        end = time.time() + timeout
        with self._cond:
            while self.connections < count or self.ws is None:
                if time.time() > end:
                    raise AssertionError("fake Feishu: no long connection (%d)" % self.connections)
                self._cond.wait(0.05)

    def wait_acks(self, count=1, timeout=10.0):
        end = time.time() + timeout
        with self._cond:
            while len(self.acks) < count:
                if time.time() > end:
                    raise AssertionError("fake Feishu: %d acks, wanted %d" % (len(self.acks), count))
                self._cond.wait(0.05)
            return list(self.acks)

    # -- the long connection ---------------------------------------------------------------

    def _serve_ws(self, ws):
        q = dict(kv.split("=", 1) for kv in ws.request.path.partition("?")[2].split("&") if "=" in kv)
        if q.get("ticket") not in self.tickets:
            ws.close(1008, "bad ticket")
            return
        self.tickets.discard(q["ticket"])
        with self._cond:
            self.connections += 1
            self.ws = ws
            self._cond.notify_all()
        try:
            for m in ws:
                if not isinstance(m, bytes):
                    continue
                f = _decode(m)
                kind = _header(f, "type")
                if f["method"] == 0 and kind == "ping":
                    with self._cond:
                        self.pings.append(time.time())
                    pong = {"SeqID": 0, "LogID": 0, "service": f["service"], "method": 0,
                            "headers": [["type", "pong"]], "payload": json.dumps(self.config).encode()}
                    ws.send(_encode(pong))
                elif f["method"] == 1:
                    f["payload"] = json.loads(bytes(f.get("payload") or b"null"))
                    with self._cond:
                        self.acks.append(f)
                        self._unacked.pop(_header(f, "message_id"), None)
                        self._cond.notify_all()
        except Exception:  # noqa: BLE001 - the client went away
            pass
        finally:
            with self._cond:
                if self.ws is ws:
                    self.ws = None

    def kick(self, code=1000):
        """Close the long connection from the server's side."""
        ws = self.ws
        if ws is not None:
            ws.close(code)

    def push(self, event, parts=1):
        """Send ``event`` (a dict, the event JSON) as ``parts`` data frames; returns the
        frame message_id."""
        data = json.dumps(event, ensure_ascii=False).encode()
        fid = uuid.uuid4().hex
        step = -(-len(data) // parts)
        frames = []
        for i in range(parts):
            self._seq += 1
            frames.append(_encode({
                "SeqID": self._seq, "LogID": 7000000000000000000 + self._seq, "service": self.service_id,
                "method": 1, "headers": [["type", "event"], ["message_id", fid], ["sum", str(parts)],
                                         ["seq", str(i)], ["trace_id", uuid.uuid4().hex]],
                "payload": data[i * step:(i + 1) * step]}))
        with self._cond:
            self._unacked[fid] = (frames, time.time())
        self._send_frames(frames)
        return fid

    def _send_frames(self, frames, wait_s=2.0):
        end = time.time() + wait_s  # a client that just connected may not be registered yet
        with self._cond:
            while self.ws is None and time.time() < end:
                self._cond.wait(0.05)
            ws = self.ws
        if ws is None:
            raise AssertionError("fake Feishu: no client connected")
        for fr in frames:
            ws.send(fr)

    def _redeliver(self):
        while not self._stop.wait(0.2):
            with self._cond:
                due = [(k, v) for k, v in self._unacked.items() if time.time() - v[1] > self.redeliver_s]
                for k, v in due:
                    self._unacked[k] = (v[0], time.time())
            for k, v in due:
                try:
                    self._send_frames(v[0], 0)
                except Exception:  # noqa: BLE001 - not connected now: later
                    pass

    def event(self, message_type, content, chat_type="p2p", sender="ou_user0000000000000000000000000001",
              chat_id=None, mentions=(), message_id=None, sender_type="user"):
        """An ``im.message.receive_v1`` event as Feishu writes it (``content`` a dict;
        ``mentions``: [(key, open_id, name)])."""
        now = str(int(time.time() * 1000))
        chat_id = chat_id or ("oc_p2p" + sender[3:] if chat_type == "p2p" else "oc_group000000000000000000000000001")
        self.users.add(sender)  # the bot may write to whoever wrote to it, and to its groups
        if chat_type != "p2p":
            self.chats.add(chat_id)
        return {"schema": "2.0",
                "header": {"event_id": uuid.uuid4().hex, "event_type": "im.message.receive_v1", "create_time": now,
                           "token": "", "app_id": self.app_id, "tenant_key": "fake_tenant"},
                "event": {"sender": {"sender_id": {"union_id": "on_" + sender[3:], "user_id": "u" + sender[-6:],
                                                   "open_id": sender},
                                     "sender_type": sender_type, "tenant_key": "fake_tenant"},
                          "message": {"message_id": message_id or "om_" + uuid.uuid4().hex, "root_id": "",
                                      "parent_id": "", "create_time": now, "update_time": now, "chat_id": chat_id,
                                      "thread_id": "", "chat_type": chat_type, "message_type": message_type,
                                      "content": json.dumps(content, ensure_ascii=False),
                                      "mentions": [{"key": k, "id": {"union_id": "on_" + o[3:], "user_id": "",
                                                                     "open_id": o}, "name": n,
                                                    "tenant_key": "fake_tenant"} for k, o, n in mentions],
                                      "user_agent": "fake"}}}

    def inject_text(self, text, parts=1, **kw):
        """A text message from a user (``kw`` as ``event``); returns its message_id."""
        ev = self.event("text", {"text": text}, **kw)
        self.push(ev, parts)
        return ev["event"]["message"]["message_id"]


def _decode(b):
    """A frame's bytes as a dict with the proto's field names (headers as [key, value])."""
    f = Frame()
    f.ParseFromString(b)
    d = {"SeqID": f.SeqID, "LogID": f.LogID, "service": f.service, "method": f.method,
         "headers": [[h.key, h.value] for h in f.headers]}
    if f.HasField("payload"):
        d["payload"] = f.payload
    return d


def _encode(d):
    f = Frame()
    f.SeqID, f.LogID, f.service, f.method = d["SeqID"], d["LogID"], d["service"], d["method"]
    for k, v in d["headers"]:
        h = f.headers.add()
        h.key, h.value = k, v
    if "payload" in d:
        f.payload = d["payload"]
    return f.SerializeToString()


def _header(d, key):
    for k, v in d["headers"]:
        if k == key:
            return v
    return None


def _check(mt, c):
    """Why content ``c`` is not a valid ``mt`` message, or None."""
    if mt == "text":
        return None if isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"] else "text"
    if mt == "interactive":
        return None if isinstance(c, dict) and (c.get("elements") or c.get("body")) else "card"
    if mt != "post":
        return "msg_type"
    if not isinstance(c, dict) or not c:
        return "post"
    for lang, doc in c.items():
        if not isinstance(doc, dict) or not isinstance(doc.get("content"), list):
            return "post " + lang
        for para in doc["content"]:
            if not isinstance(para, list):
                return "paragraph"
            for el in para:
                if not isinstance(el, dict) or el.get("tag") not in POST_TAGS:
                    return "tag %r" % (el.get("tag") if isinstance(el, dict) else el)
                t = el["tag"]
                if t in ("text", "md", "code_block") and not isinstance(el.get("text"), str):
                    return t + " text"
                if t == "a" and not (isinstance(el.get("href"), str) and isinstance(el.get("text"), str)):
                    return "a"
                for s in el.get("style") or ():
                    if s not in STYLES:
                        return "style %r" % s
    return None


def plain(mt, c):
    """A sent message as the reader sees its words: a text's text, a post's paragraphs
    (title first), one per line."""
    if mt == "text":
        return c["text"]
    if mt != "post":
        return json.dumps(c)
    doc = next(iter(c.values()))
    lines = [doc["title"]] if doc.get("title") else []
    for para in doc["content"]:
        lines.append("".join(el.get("text", "") if el["tag"] != "hr" else "---" for el in para))
    return "\n".join(lines)
