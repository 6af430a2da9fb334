"""WebSocket servers for the client's live tests (host only).

- ``RealWs``: the ``websockets`` package's own server (sync API) in a thread, optionally
  over TLS: the interop proof. Paths: ``/echo`` (every message back), ``/frag`` (a text
  and a binary message sent in fragments), ``/ping`` (pings the client, reports when the
  pong came), ``/close`` (closes with 4001 "bye"), ``/big?n=`` (one binary message of n
  bytes, then the text "after"), ``/headers`` (sends back the X-Test request header).
- ``RawWs``: a socket server that answers the handshake and then sends exact bytes, for
  what ``websockets`` would never send: a ping between fragments, a masked frame, text
  that is not UTF-8, a bad close code, a wrong ``Sec-WebSocket-Accept``. It records the
  frames the client sent back (unmasked) in ``got``.
"""
import base64
import hashlib
import socket
import ssl
import threading
import time

from websockets.sync.server import serve

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class RealWs:
    def __init__(self, tls=None):
        self.tls = tls
        self.server = None

    def _handler(self, ws):
        path = ws.request.path
        p, _, q = path.partition("?")
        if p == "/echo":
            for m in ws:
                ws.send(m)
        elif p == "/frag":
            ws.send(["he", "llo ", "wörld"])
            ws.send([b"\x00\x01", b"", b"\x02"])
            ws.recv()
        elif p == "/ping":
            pong = ws.ping(b"are you there")
            ws.send("pong came" if pong.wait(5) else "no pong")
            ws.recv()
        elif p == "/close":
            ws.close(4001, "bye")
        elif p == "/big":
            n = int(q.split("=")[1])
            ws.send(b"x" * n)
            ws.send("after")
            ws.recv()
        elif p == "/headers":
            ws.send(ws.request.headers.get("X-Test", "none"))
            ws.recv()

    def start(self):
        ctx = None
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls["cert"], self.tls["key"])
        self.server = serve(self._handler, "127.0.0.1", 0, ssl=ctx, ping_interval=None)
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return "%s://%s:%d" % ("wss" if self.tls else "ws", "localhost" if self.tls else "127.0.0.1", self.port)

    def stop(self):
        self.server.shutdown()


def frame(op, payload=b"", fin=True, mask=None, rsv=0):
    """A frame as a server (no mask) or a rude server (``mask``) would send it."""
    b0 = (0x80 if fin else 0) | rsv | op
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        h = bytes((b0, m | n))
    elif n < 65536:
        h = bytes((b0, m | 126)) + n.to_bytes(2, "big")
    else:
        h = bytes((b0, m | 127)) + n.to_bytes(8, "big")
    if mask:
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        h += mask
    return h + payload


def read_frames(data):
    """Parse client frames (masked) from ``data``: [(fin, op, payload)]."""
    out = []
    i = 0
    while i + 2 <= len(data):
        b0, b1 = data[i], data[i + 1]
        n, j = b1 & 0x7F, i + 2
        if n == 126:
            n, j = int.from_bytes(data[j:j + 2], "big"), j + 2
        elif n == 127:
            n, j = int.from_bytes(data[j:j + 8], "big"), j + 8
        key = data[j:j + 4] if b1 & 0x80 else None
        j += 4 if key else 0
        p = data[j:j + n]
        if key:
            p = bytes(c ^ key[k % 4] for k, c in enumerate(p))
        out.append((bool(b0 & 0x80), b0 & 0x0F, p, key is not None))
        i = j + n
    return out


class RawWs:
    """``RawWs(script)``: ``script[path]`` is the bytes sent after the 101 (or a function
    of the request head returning the whole answer, handshake included)."""

    def __init__(self, script):
        self.script = script
        self.got = {}
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    @property
    def url(self):
        return "ws://127.0.0.1:%d" % self.port

    def start(self):
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def stop(self):
        self.sock.close()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(c,), daemon=True).start()

    def _one(self, c):
        head = b""
        while b"\r\n\r\n" not in head:
            b = c.recv(4096)
            if not b:
                return
            head += b
        path = head.split(b" ")[1].decode()
        key = b""
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"sec-websocket-key:"):
                key = line.split(b":", 1)[1].strip()
        acc = base64.b64encode(hashlib.sha1(key + GUID).digest())
        s = self.script[path]
        if callable(s):
            c.sendall(s(acc))
        else:
            c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Accept: " + acc + b"\r\n\r\n" + s)
        if path == "/vanish":  # gone without a close frame
            c.close()
            return
        got = b""
        c.settimeout(3)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3:
            try:
                b = c.recv(4096)
            except OSError:
                break
            if not b:
                break
            got += b
            self.got[path] = read_frames(got)
        self.got[path] = read_frames(got)
        c.close()
