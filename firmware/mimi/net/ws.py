"""A small WebSocket client (RFC 6455) for the device, the unix port and CPython.

``connect(url)`` does the opening handshake as an HTTP request through ``mimi.net.http``
(so whatever reaches a server there, TLS against ``/data/certs`` and any proxy, reaches
it here) and takes over its connection once the server answers 101. Then:
- ``recv(timeout_ms)`` returns one whole message ``(opcode, memoryview)``, or None when
  none arrived in time: it never blocks longer, so the I/O thread polls it each pass.
  Fragments are joined in the one buffer given at ``connect`` (no copy per frame); pings
  are answered with pongs; a close frame is answered and ends the connection
  (``WsClosed`` with the server's code). A message longer than the buffer is read and
  dropped: ``(opcode, None)`` says one was lost, the connection stays up.
- ``send(data, opcode)``, ``ping(data)``: frames from the client are masked with a fresh
  random key each (RFC 6455 5.3).
- ``close(code, reason)``: sends a close frame, waits briefly for the server's, closes.
Protocol errors by the server (a masked frame, reserved bits, a bad opcode, a control
frame over 125 bytes or fragmented, a continuation out of place, text that is not UTF-8)
close the connection with 1002 or 1007 and raise ``WsClosed``.

The framing (``header``, ``mask``) is plain functions so the board's web server can share
it. Spec: https://www.rfc-editor.org/rfc/rfc6455 (sections 4, 5, 7).
"""
import binascii
import hashlib
import os

from micropython import const

from mimi import seam

OP_CONT = const(0)
OP_TEXT = const(1)
OP_BINARY = const(2)
OP_CLOSE = const(8)
OP_PING = const(9)
OP_PONG = const(10)

_WS_GUID = const("258EAFA5-E914-47DA-95CA-C5AB0DC85B11")  # RFC 6455 1.3
_WS_CLOSE_WAIT_MS = const(1000)  # how long close() waits for the server's close frame
_WS_WRITE_TIMEOUT_MS = const(10000)


class WsClosed(OSError):
    """The connection ended. ``args``: (close code, reason str). 1006: it ended without a
    close frame (the network, or the server vanished); 1002 protocol error, 1007 bad text,
    both sent by us; other codes are the server's."""


class WsRefused(OSError):
    """The server did not switch to WebSocket. ``args``: (HTTP status, headers dict with
    the names asked for in ``want``)."""


def accept_key(key):
    """``Sec-WebSocket-Accept`` for ``Sec-WebSocket-Key`` ``key`` (str): base64 of the SHA-1
    of the key and the RFC's GUID (RFC 6455 4.2.2)."""
    return binascii.b2a_base64(hashlib.sha1((key + _WS_GUID).encode()).digest()).strip().decode()


def header(opcode, n, fin=True, mask_key=None):
    """A frame header (bytes) for a payload of ``n`` bytes: FIN, opcode, the length in 1, 3
    or 9 bytes, then the 4-byte ``mask_key`` when given (clients must mask; servers must not)."""
    b0 = (0x80 if fin else 0) | opcode
    m = 0x80 if mask_key else 0
    if n < 126:
        h = bytes((b0, m | n))
    elif n < 65536:
        h = bytes((b0, m | 126)) + n.to_bytes(2, "big")
    else:
        h = bytes((b0, m | 127)) + n.to_bytes(8, "big")
    return h + mask_key if mask_key else h


def mask(buf, start, end, key):
    """XOR ``buf[start:end]`` in place with the 4-byte ``key`` (masking and unmasking are
    the same operation, RFC 6455 5.3)."""
    for i in range(start, end):
        buf[i] ^= key[(i - start) & 3]


def connect(url, buf, headers=None, want=(), timeout_ms=15000, connect_timeout_ms=None):
    """Open a WebSocket to ``url`` (``ws://`` or ``wss://``); returns a ``WebSocket``.

    ``buf``: the bytearray messages are read into (its size is the longest message kept).
    ``headers``: extra request headers. ``want``: response header names (lower case) kept
    in ``WsRefused`` when the server refuses. Raises ``WsRefused`` (not 101, or a wrong
    ``Sec-WebSocket-Accept``), ``OSError``/``seam.TLSError`` as ``mimi.net.http`` does,
    ``ValueError`` for a bad URL.
    """
    from mimi.net import http

    if url.startswith("wss://"):
        url = "https://" + url[6:]
    elif url.startswith("ws://"):
        url = "http://" + url[5:]
    else:
        raise ValueError("the URL is not ws[s]://host[:port][/path]")
    key = binascii.b2a_base64(os.urandom(16)).strip().decode()
    h = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
    for k in headers or ():
        h[k] = headers[k]
    r = http.start("GET", url, h, timeout_ms=timeout_ms, connect_timeout_ms=connect_timeout_ms,
                   deadline_ms=timeout_ms + (connect_timeout_ms or 10000)).finish(
        buf=buf, want=("upgrade", "sec-websocket-accept") + tuple(want))
    if r.status != 101:
        raise WsRefused(r.status, r.headers)
    conn, rest = r.link, bytes(r.body)
    if r.headers.get("upgrade", "").lower() != "websocket" or r.headers.get("sec-websocket-accept") != accept_key(key):
        conn.close()
        raise WsRefused(101, r.headers)
    return WebSocket(conn, buf, rest)


class WebSocket:
    """An open WebSocket over ``conn`` (a ``seam.Conn``): ``recv``, ``send``, ``ping``,
    ``close``. ``buf``: the receive buffer; ``rest``: bytes already read past the
    handshake. ``closed``: the close code once closed, else None; ``last_ms``: ticks_ms
    of the last bytes received (a silent peer is a dead one, for the caller to judge)."""

    def __init__(self, conn, buf, rest=b""):
        self.conn = conn
        self.buf = buf
        self.n = 0  # bytes in buf
        self.rest = rest  # read with the handshake, taken before the socket's
        self.msg = 0  # bytes of the message being joined, at buf[0:msg]
        self.op = None  # its opcode while fragments come
        self.drop = 0  # bytes of the last returned message, removed at the next recv
        self.skip = 0  # payload bytes still to discard (a message over the buffer)
        self.big = None  # opcode of a message being discarded
        self.fin = False  # the frame being discarded is the message's last
        self.closed = None
        self.last_ms = seam.ticks_ms()

    def _cut(self, start, k):
        """Remove ``buf[start:start + k]``, moving what follows down (memmove)."""
        mv = memoryview(self.buf)
        mv[start:self.n - k] = mv[start + k:self.n]
        self.n -= k

    def recv(self, timeout_ms=0):
        """The next whole message as ``(opcode, memoryview)`` (``OP_TEXT`` or ``OP_BINARY``;
        the view is valid until the next call), ``(opcode, None)`` for one that was longer
        than the buffer and was dropped, or None when none came within ``timeout_ms``.
        Raises ``WsClosed`` when the connection ends."""
        if self.closed is not None:
            raise WsClosed(self.closed, "closed")
        if self.drop:
            self._cut(0, self.drop)
            self.drop = 0
        end = seam.ticks_add(seam.ticks_ms(), timeout_ms)
        while True:
            r = self._parse()
            if r is not None:
                return r
            if self.n == len(self.buf):  # cannot happen: _parse discards what does not fit
                self._fail(1009, "full")
            left = max(0, seam.ticks_diff(end, seam.ticks_ms()))
            mv = memoryview(self.buf)[self.n:]
            try:
                if self.rest:
                    k = min(len(mv), len(self.rest))
                    mv[:k] = self.rest[:k]
                    self.rest = self.rest[k:]
                else:
                    k = self.conn.readinto(mv, left)
            except OSError as e:
                self._gone()
                raise WsClosed(1006, str(e))
            if k is None:
                return None
            if not k:
                self._gone()
                raise WsClosed(1006, "connection closed")
            self.n += k
            self.last_ms = seam.ticks_ms()

    def _parse(self):
        """Act on the frames now in the buffer; a whole message when one is complete."""
        buf = self.buf
        while True:
            s = self.msg
            if self.skip:  # discarding a message over the buffer
                k = min(self.skip, self.n - s)
                self._cut(s, k)
                self.skip -= k
                if self.skip:
                    return None
                if self.fin:
                    op, self.big = self.big, None
                    return op, None
            avail = self.n - s
            if avail < 2:
                return None
            b0, b1 = buf[s], buf[s + 1]
            op, fin, n, h = b0 & 0x0F, b0 & 0x80, b1 & 0x7F, 2
            if b0 & 0x70 or b1 & 0x80:
                self._fail(1002, "reserved bits or a masked frame")
            if n == 126:
                n, h = int.from_bytes(bytes(buf[s + 2:s + 4]), "big"), 4
            elif n == 127:
                n, h = int.from_bytes(bytes(buf[s + 2:s + 10]), "big"), 10
            if avail < h:
                return None
            if op >= OP_CLOSE:
                if op > OP_PONG or not fin or n > 125:
                    self._fail(1002, "bad control frame")
            elif op > OP_BINARY or (op == OP_CONT) != (self.op is not None or self.big is not None):
                self._fail(1002, "bad opcode %d" % op)
            if op < OP_CLOSE and (self.big is not None or h + n > len(buf) - s):  # does not fit: discard
                self.big = self.big if self.big is not None else self.op if self.op is not None else op
                self.op = None
                self._cut(0, s + h)  # the fragments joined so far and this header go
                self.msg = 0
                self.skip, self.fin = n, bool(fin)
                if not n and fin:
                    op, self.big = self.big, None
                    return op, None
                continue
            if avail < h + n:
                return None
            mv = memoryview(buf)
            if op >= OP_CLOSE:
                payload = bytes(mv[s + h:s + h + n])
                self._cut(s, h + n)
                if op == OP_PING:
                    self.send(payload, OP_PONG)
                elif op == OP_CLOSE:
                    code = int.from_bytes(payload[:2], "big") if n >= 2 else 1005
                    if n == 1 or n >= 2 and not _code_ok(code):
                        self._fail(1002, "bad close code")
                    try:
                        self.send(payload[:2], OP_CLOSE)  # echo the code (RFC 6455 5.5.1)
                    except OSError:
                        pass
                    self._gone(code)
                    raise WsClosed(code, _text(payload[2:]) or "")
                continue
            self._cut(s, h)  # the payload joins the message at buf[0:msg]
            self.msg += n
            if op != OP_CONT:
                self.op = op
            if fin:
                op, k = self.op, self.msg
                self.op, self.msg, self.drop = None, 0, k
                if op == OP_TEXT and _text(mv[:k]) is None:
                    self._fail(1007, "text is not UTF-8")
                return op, mv[:k]

    def send(self, data, opcode=OP_BINARY):
        """Send one frame of ``data`` (bytes-like, or str as UTF-8), masked. ``OSError`` when
        the connection is gone."""
        if self.closed is not None:
            raise WsClosed(self.closed, "closed")
        data = seam.as_bytes(data)
        key = os.urandom(4)
        hd = header(opcode, len(data), True, key)
        out = bytearray(len(hd) + len(data))
        out[:len(hd)] = hd
        out[len(hd):] = data
        mask(out, len(hd), len(out), key)
        try:
            self.conn.write(out, _WS_WRITE_TIMEOUT_MS)
        except OSError as e:
            self._gone()
            raise WsClosed(1006, str(e))

    def ping(self, data=b""):
        """Send a ping (at most 125 bytes); the pong comes back through ``recv`` unseen."""
        self.send(data, OP_PING)

    def close(self, code=1000, reason=""):
        """Send a close frame, wait up to ``_WS_CLOSE_WAIT_MS`` for the server's, close the
        socket. Never raises; safe to call twice."""
        if self.closed is None:
            try:
                self.send(code.to_bytes(2, "big") + seam.as_bytes(reason)[:120], OP_CLOSE)
                end = seam.ticks_add(seam.ticks_ms(), _WS_CLOSE_WAIT_MS)
                while seam.ticks_diff(end, seam.ticks_ms()) > 0:
                    self.recv(max(0, seam.ticks_diff(end, seam.ticks_ms())))
            except OSError:  # WsClosed: the server's close came (or the connection went)
                pass
        self._gone(self.closed or code)

    def _gone(self, code=1006):
        if self.closed is None:
            self.closed = code
        self.conn.close()

    def _fail(self, code, why):
        """Close with ``code`` after a protocol error of the server's; raises ``WsClosed``."""
        try:
            self.send(code.to_bytes(2, "big"), OP_CLOSE)
        except OSError:
            pass
        self._gone(code)
        raise WsClosed(code, why)


def _code_ok(code):
    """A close code a peer may send (RFC 6455 7.4.1, 7.4.2)."""
    return 1000 <= code <= 1003 or 1007 <= code <= 1011 or 3000 <= code <= 4999


def _text(b):
    """``b`` as str, or None when it is not UTF-8."""
    try:
        return str(bytes(b), "utf-8")
    except UnicodeError:
        return None
