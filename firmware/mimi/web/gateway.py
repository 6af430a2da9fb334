"""The chat gateway: a channel whose chats are WebSocket connections on the LAN (issue 16).

It speaks MimiClaw's protocol (``main/gateway/ws_server.c``), so MimiClaw's clients work:
    in   {"type": "message", "content": "...", "chat_id": "..."}   (chat_id optional)
    out  {"type": "response", "content": "...", "chat_id": "..."}
    in   {"type": "ping"}  ->  out {"type": "pong"}
and adds what the agent tells a chat meanwhile (clients that do not know them skip them):
    {"type": "typing", "chat_id": ...}  the agent works on it
    {"type": "progress", "content": ..., "chat_id": ...}  a step (tools ran)
    {"type": "done", "chat_id": ...}  the turn is over
    {"type": "error", "content": ...}  a message was refused (malformed, too long, too fast, busy)
A connection without a ``chat_id`` is the chat ``ws_<n>`` (as MimiClaw's ``ws_<fd>``). One
that names a chat takes it (``[A-Za-z0-9_-]``, ``_GW_CHAT_ID_MAX`` characters); the web
app's chat page is the chat ``web``. On the bus a gateway chat is ``ws_<chat_id>`` (the
id as sent when it starts with ``ws_``), channel ``gateway``, and its history the session
``ws_<chat_id>``: no gateway chat can name a Telegram or Feishu chat's history. Its role
is the owner's (``mimi.policy``): only the owner's password, or a token made at the
console, opens a connection (``mimi.web.auth.ws_ok``).

Limits: ``_GW_CLIENTS_MAX`` connections (both ports together; one more is refused with
503 before the handshake), messages up to ``_GW_MESSAGE_MAX_BYTES`` (a longer one gets an
error and the connection closes: its rest cannot be skipped), ``_GW_RATE_MAX`` messages
per ``_GW_RATE_MS`` per connection, and the bus's fair share of the inbound queue
(``guard.admit``). A reply for a chat with no connection is dropped (it is in the
history; the web app's chat page shows it on load).

Threads: ``deliver`` runs in the I/O thread (``mimi.app.route``) and only queues; the
web thread's loop (``mimi.web.server``) calls ``pump`` to send what is queued, and runs
one ``serve`` task per connection.
"""
import json

from micropython import const

from mimi import log, seam

_GW_CLIENTS_MAX = const(4)
_GW_MESSAGE_MAX_BYTES = const(4096)  # a received WebSocket message; its text is the chat message
_GW_CHAT_ID_MAX = const(32)
_GW_RATE_MAX = const(10)  # messages a connection may send per _GW_RATE_MS
_GW_RATE_MS = const(60000)
_GW_OUTQ_MAX = const(16)
_GW_SEND_TIMEOUT_S = const(5)  # a client that takes longer to take a message is dropped


def bus_id(chat_id):
    """The bus's id of the client's ``chat_id``: ``ws_<chat_id>`` (kept as it is when it
    starts with ``ws_`` already). ``ValueError`` for an id a client may not use."""
    c = str(chat_id)
    if not 0 < len(c) <= _GW_CHAT_ID_MAX:
        raise ValueError("chat_id: 1 to %d characters" % _GW_CHAT_ID_MAX)
    for ch in c:
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch == "_" or ch == "-"):
            raise ValueError("chat_id: letters, digits, _ and - only")
    return c if c[:3] == "ws_" else "ws_" + c


async def _refuse(request, status, text):
    """Answer a handshake with ``status`` ("401 Unauthorized") in HTTP/1.1, which WebSocket
    clients require (RFC 6455 4.1; microdot's own responses say HTTP/1.0)."""
    from microdot import Response

    body = text.encode()
    await request.sock[1].awrite(b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                                 b"Connection: close\r\n\r\n%s" % (status.encode(), len(body), body))
    return Response.already_handled


class Client:
    """One connection: its WebSocket, its default chat, the chats it used (bus id -> the
    id the client sent), the times of its last messages, a lock over its sends."""

    def __init__(self, ws, n):
        import asyncio

        self.ws = ws
        self.default = "ws_%d" % n
        self.chats = {}
        self.times = []
        self.lock = asyncio.Lock()

    async def send(self, obj):
        """Send ``obj`` as a JSON text message (one at a time: the pump and the reader share it)."""
        async with self.lock:
            await self.ws.send(json.dumps(obj))


class Gateway:
    """The channel: ``deliver`` (I/O thread), ``serve`` and ``pump`` (web thread)."""

    def __init__(self, bus):
        self.bus = bus
        self.clients = []
        self.outq = []
        self.lock = seam.allocate_lock()
        self.count = 0  # connections made: the next default chat's number
        self.dropped = 0

    def full(self):
        return len(self.clients) >= _GW_CLIENTS_MAX

    def describe(self):
        return "%d of %d connected" % (len(self.clients), _GW_CLIENTS_MAX)

    # -- out (the agent's messages) -------------------------------------------------------

    def deliver(self, msg):
        """Take an outbound bus message (I/O thread). False (nothing taken) while full."""
        with self.lock:
            if len(self.outq) >= _GW_OUTQ_MAX:
                return False
            self.outq.append(msg)
        return True

    async def pump(self):
        """Send the queued messages to the connections of their chats (web thread)."""
        import asyncio

        while self.outq:
            with self.lock:
                msg = self.outq.pop(0)
            cid = str(msg.get("chat_id"))
            kind = msg.get("kind", "text")
            for c in self.clients[:]:
                name = c.chats.get(cid)
                if name is None:
                    continue
                out = {"type": "response", "chat_id": name}
                if kind == "text":
                    out["content"] = msg.get("text") or "(no reply)"
                elif kind == "note":
                    out["type"] = "progress"
                    out["content"] = msg.get("text") or ""
                elif kind == "typing":
                    out["type"] = "typing"
                elif kind == "idle":
                    out["type"] = "done"
                else:
                    continue
                try:
                    await asyncio.wait_for(c.send(out), _GW_SEND_TIMEOUT_S)
                except Exception as e:  # noqa: BLE001 - timeout, a closed socket: that client goes
                    log.warn("gw", "send %s: %r", name, e)
                    self._drop(c)

    def _drop(self, c):
        if c in self.clients:
            self.clients.remove(c)
            try:
                c.ws.request.sock[1].close()  # its serve task ends on the closed stream
            except Exception:  # noqa: BLE001 - already closed
                pass

    # -- in (one connection) -------------------------------------------------------------

    async def route(self, request):
        """The WebSocket route (``/`` on the gateway's port, ``/ws`` on the web app's): 401
        without the password, a token or the session; 503 when ``_GW_CLIENTS_MAX`` are in;
        400 for a request that is no WebSocket handshake."""
        from microdot import Response
        from microdot.websocket import WebSocket, websocket_upgrade

        from mimi.web import auth

        if not auth.ws_ok(request):
            return await _refuse(request, "401 Unauthorized", "log in, or add ?token=")
        if self.full():
            return await _refuse(request, "503 Service Unavailable", "too many connections")
        WebSocket.max_message_length = _GW_MESSAGE_MAX_BYTES
        ws = await websocket_upgrade(request)
        try:
            await self.serve(ws)
        finally:
            try:
                await ws.close()
            except Exception:  # noqa: BLE001 - the client has gone already
                pass
        return Response.already_handled

    async def serve(self, ws):
        """Read one connection's messages until it closes (web thread)."""
        self.count += 1
        c = Client(ws, self.count)
        self.clients.append(c)
        log.info("gw", "connected (%d)", len(self.clients))
        try:
            while True:
                try:
                    data = await ws.receive()
                except Exception as e:  # noqa: BLE001 - WebSocketError (closed, too long), OSError
                    if "too large" in str(e):
                        await c.send({"type": "error", "content": "message over %d bytes: closing" %
                                      _GW_MESSAGE_MAX_BYTES})
                    break
                await self._message(c, data)
        finally:
            self._drop(c)
            log.info("gw", "closed (%d)", len(self.clients))

    async def _message(self, c, data):
        """One message from client ``c``: to the agent, or an error back."""
        from mimi import commands, guard

        try:
            m = json.loads(data)
            if not isinstance(m, dict):
                raise ValueError("not an object")
        except Exception:  # noqa: BLE001 - ValueError; a nesting too deep for the parser is RecursionError/RuntimeError
            return await c.send({"type": "error", "content": "not a JSON object"})
        kind = m.get("type")
        if kind == "ping":
            return await c.send({"type": "pong", "ts": m.get("ts")})
        text = m.get("content")
        if isinstance(text, str):
            try:
                text.encode()
            except UnicodeError:  # a lone surrogate (\ud800): no text the chat's file could keep
                text = None
        if kind != "message" or not isinstance(text, str):
            return await c.send({"type": "error", "content": 'expected {"type":"message","content":"..."}'})
        name = m.get("chat_id")
        name = c.default if name is None else str(name)
        try:
            cid = bus_id(name)
        except ValueError as e:
            return await c.send({"type": "error", "content": str(e)})
        c.chats[cid] = name
        now = seam.ticks_ms()
        while c.times and seam.ticks_diff(now, c.times[0]) >= _GW_RATE_MS:
            c.times.pop(0)
        if len(c.times) >= _GW_RATE_MAX:
            return await c.send({"type": "error", "chat_id": name,
                                 "content": "too many messages: at most %d a minute" % _GW_RATE_MAX})
        c.times.append(now)
        text = text.strip()
        if not text:
            return await c.send({"type": "error", "chat_id": name, "content": "empty message"})
        if text[:1] == "/":
            r = commands.run(text, "gateway", cid)
            if r is not None:
                return await c.send({"type": "response", "chat_id": name, "content": r})
        ok, _ = guard.admit(self.bus.inbound, {
            "channel": "gateway", "chat_id": cid, "text": text, "session": cid, "user": ""}, commands.owner())
        if not ok:
            log.warn("gw", "busy %s", cid)
            await c.send({"type": "error", "chat_id": name, "content": commands.text("busy")})
