"""A small HTTP/1.1 client for the device, the unix port and CPython (over ``seam.Conn``).

Why not micropython-lib ``requests``: the 0.10 that firmware 1.24-1.28 freezes rejects
chunked responses, reads ``.content`` unbounded, and turns TLS verification off. Here:
- every request has a connect timeout, a timeout on each read and write, and an overall
  deadline, so a hung or dripping server never hangs a thread;
- TLS verifies the server against ``/data/certs`` (``mimi.net.certs``) and refuses to
  start while the clock is unset (certificates cannot be checked without it);
- the response body goes into a caller's capped, reused ``bytearray``: Content-Length,
  chunked, and read-to-close bodies; ``truncated`` says when it did not fit;
- a request body is bytes/str, or a writer ``fn(write)`` called twice (once to count the
  bytes for Content-Length, once to send them), so large JSON is streamed, never built;
- ``start()`` returns a ``Pending`` whose ``ready(timeout_ms)`` polls the socket, so the
  I/O thread can hold a 30 s Telegram long poll open and still send replies;
- the socket is closed on every path (each request is ``Connection: close``).

Errors: ``OSError`` for connection problems, timeouts and malformed responses (worth a
retry); ``seam.TLSError`` (an ``OSError``) when the server's certificate was refused or the
clock is unset (not worth a retry); ``ValueError`` for a bad URL or header.
Never logs a path or header (Telegram puts its token in the path).
Spec: RFC 9112 (message syntax, chunked coding).
"""
from micropython import const

from mimi import config, seam

# Tunables (config.py holds those shared by several modules and the settings).
_HTTP_TIMEOUT_MS = const(30000)  # each read or write; callers raise it for slow replies
_HTTP_DEADLINE_MS = const(300000)  # a whole exchange, so a dripping server cannot hold a thread

_HEADERS_MAX = const(100)  # header lines per response before we call it malformed
_KEEP = const(" content-length transfer-encoding content-type retry-after retry-after-ms x-should-retry location ")
_BAD_URL = const("the URL is not http[s]://host[:port][/path]")


def parse_url(url):
    """Split ``http[s]://host[:port]/path?q`` into ``(tls, host, port, path)``; ``ValueError`` if bad."""
    tls = url.startswith("https://")
    if not tls and not url.startswith("http://"):
        raise ValueError(_BAD_URL)
    rest = url[8 if tls else 7:]
    i = rest.find("/")
    host, path = (rest, "/") if i < 0 else (rest[:i], rest[i:])
    port = 443 if tls else 80
    i = host.rfind(":")
    if i > host.rfind("]"):  # a port (after an IPv6 literal's bracket, if any)
        p = host[i + 1:]
        port = int(p) if p.isdigit() else 0
        if not 0 < port < 65536:
            raise ValueError(_BAD_URL)
        host = host[:i]
    if host.startswith("["):
        host = host[1:-1]
    if not host or "@" in host:
        raise ValueError(_BAD_URL)
    return tls, host, port, path


def request(*args, **kw):
    """Send a request and read its response: ``start(...).finish()``, the same arguments.

    Returns the finished ``Pending`` (``status``, ``headers``, ``body``, ``truncated``,
    ``json()``). Example::

        buf = bytearray(4096)
        r = http.request("POST", url, {"Content-Type": "application/json"}, b"{}", buf=buf)
        if r.status == 200 and not r.truncated: data = r.json()
    """
    return Pending(*args, **kw).finish()


class Pending:
    """A request: sent when made (``start``), its response read by ``finish()``.

    ``Pending(method, url, headers=None, body=None, timeout_ms=None, buf=None, cap=None,
    want=(), connect_timeout_ms=None, deadline_ms=None)`` connects and sends.
    ``headers``: dict of extra request headers. ``body``: None, bytes-like, str, or a
    writer ``fn(write)`` that calls ``write(bytes or str)`` for each piece, the same way
    both times it is called. ``timeout_ms``: for each read and write (default
    ``_HTTP_TIMEOUT_MS``); ``connect_timeout_ms`` for the TCP connect and the TLS
    handshake; ``deadline_ms``: the whole exchange, from now. ``buf``/``cap``/``want``:
    see ``finish``. Raises as the module says; the socket is closed on failure. No
    ``HEAD`` (its response would be read as having a body).

    After ``finish()`` it is the response: ``status`` (int), ``headers`` (dict, lower-case
    names, only the kept ones), ``body`` (memoryview into the buffer), ``truncated``
    (True when the body did not fit; the rest was not read), ``json()``.
    """

    def __init__(self, method, url, headers=None, body=None, timeout_ms=None, buf=None, cap=None, want=(),
                 connect_timeout_ms=None, deadline_ms=None):
        tls, host, port, path = parse_url(url)
        self._tmo = timeout_ms or _HTTP_TIMEOUT_MS
        self._end = seam.ticks_add(seam.ticks_ms(), deadline_ms or _HTTP_DEADLINE_MS)
        self._opts = buf, cap, want
        self._rb = bytearray(config.HTTP_LINE_BYTES)  # request gathering, then status/header/chunk lines
        self._rs = self._re = self._sent = 0
        ctx = None
        if tls:
            if not seam.clock_synced():
                raise seam.TLSError("the clock is not set: cannot check %s's certificate" % host)
            from mimi.net import certs

            ctx = certs.context()
        self._conn = conn = seam.Conn(host, port, connect_timeout_ms or config.HTTP_CONNECT_TIMEOUT_MS, ctx)
        try:
            if ":" in host:  # an IPv6 literal
                host = "[%s]" % host
            if port != (443 if tls else 80):
                host += ":%d" % port
            hd = headers or {}
            head = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: %s\r\nUser-Agent: mimi\r\n" % (
                method, path, host, hd.get("Connection", "close"))  # "Upgrade" for a WebSocket (mimi.net.ws)
            for k in hd:
                if k != "Connection":
                    head += "%s: %s\r\n" % (k, hd[k])
            w = self._write
            count = None
            if callable(body):
                self._conn = None  # the counting pass: _write only counts
                body(w)
                self._conn, count, self._sent = conn, self._sent, 0
            elif body is not None:
                body = seam.as_bytes(body)
                count = len(body)
            if count is not None:
                head += "Content-Length: %d\r\n" % count
            n = 4 + len(hd) - ("Connection" in hd) + (count is not None)  # lines; a line break in a value would add one
            if head.count("\n") != n or head.count("\r") != n:
                raise ValueError("line break in a header")
            w(head)
            w("\r\n")
            if callable(body):
                n = self._sent
                body(w)
                if self._sent - n != count:
                    raise ValueError("the body writer changed after counting")
            elif body is not None:
                w(body)
            if self._re:
                conn.write(memoryview(self._rb)[:self._re], self._tmo)
            self._re = 0
        except BaseException:
            conn.close()
            raise

    def _write(self, x):
        """Gather request bytes into the line buffer and send it whenever it is full: a few
        full-sized writes, not one per piece (small ones stall behind delayed ACKs)."""
        b = memoryview(seam.as_bytes(x))
        k = len(b)
        self._sent += k
        if self._conn is None:  # counting
            return
        rb = self._rb
        if k >= len(rb):  # a large piece (a body built in a buffer): straight to the socket
            if self._re:
                self._conn.write(memoryview(rb)[:self._re], self._tmo)
                self._re = 0
            self._conn.write(b, self._tmo)
            return
        i = 0
        while i < k:
            n = min(k - i, len(rb) - self._re)
            rb[self._re:self._re + n] = b[i:i + n]
            self._re += n
            i += n
            if self._re == len(rb):
                self._conn.write(rb, self._tmo)
                self._re = 0

    def ready(self, timeout_ms=0):
        """True once the response has begun (or the connection ended or failed), so
        ``finish()`` will not wait for the server to think. Waits at most ``timeout_ms``."""
        if self._conn is None:
            return False
        if self._rs < self._re:
            return True
        try:
            n = self._conn.readinto(memoryview(self._rb), timeout_ms)
        except OSError:
            return True  # finish() meets the error
        if n is None:
            return False
        self._rs, self._re = 0, n
        return True

    def expired(self):
        """True when the overall deadline has passed (the caller should ``close()``)."""
        return seam.ticks_diff(self._end, seam.ticks_ms()) <= 0

    def close(self):
        """Drop the request and close the socket (safe to call twice)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def json(self):
        """Parse the body as JSON (in place on MicroPython). ``ValueError`` if it is not."""
        return seam.loads_view(self.body)

    def finish(self, buf=None, cap=None, want=None, sink=None):
        """Read the response and close the socket; returns this object, now the response.

        ``buf``: the bytearray the body goes into (reused by the caller); without one a
        buffer of ``cap`` bytes (default ``HTTP_BODY_MAX_BYTES``) is allocated, or of the
        Content-Length when smaller. ``cap``: at most this many body bytes are kept (default
        ``len(buf)``). ``want``: extra response header names to keep (lower case) besides
        the framing ones and ``retry-after``. ``sink``: ``fn(memoryview)`` given the body
        piece by piece as it arrives, each piece valid during the call only (a body larger
        than any buffer: a file download, a filtered answer); ``buf`` is then only what the
        pieces pass through, ``cap`` bounds the whole body (default: none), and ``body`` is
        empty. Raises ``OSError`` on a timeout, a connection closed early, or a malformed
        response (and whatever ``sink`` raises).
        """
        b, c, wt = self._opts
        buf = b if buf is None else buf
        cap = c if cap is None else cap
        want = wt if want is None else want
        try:
            try:
                while True:  # 1xx interim responses (100 Continue, 103 Early Hints): the real one follows
                    line = self._line()
                    if not line.startswith(b"HTTP/"):
                        raise ValueError
                    status = int(line.split(None, 2)[1])
                    h = {}
                    for _ in range(_HEADERS_MAX):
                        line = self._line()
                        if line is None:
                            continue  # an oversized header we do not keep
                        if not line:
                            break
                        i = line.find(b":")
                        name = line[:i].strip().lower().decode()
                        if i > 0 and (" %s " % name in _KEEP or name in want):
                            h[name] = line[i + 1:].strip().decode()
                    else:
                        raise ValueError  # too many header lines
                    if status >= 200 or status == 101:
                        break
                chunked = "chunked" in h.get("transfer-encoding", "").lower()
                cl = h.get("content-length")
                if cl is not None:
                    cl = int(cl)
                if buf is None:
                    cap = cap or config.HTTP_BODY_MAX_BYTES
                    buf = bytearray(cl if cl is not None and cl < cap and not chunked else cap)
                cap = (len(buf) if cap is None else min(cap, len(buf))) if sink is None else cap or 1 << 62
                mv = memoryview(buf)
                n, cut = 0, False
                if status in (204, 304) or status < 200:
                    pass
                elif chunked:
                    while True:
                        size = int(self._line().split(b";", 1)[0].strip(), 16)  # None: an oversized line
                        if not size:
                            while self._line():  # trailer fields, then the empty line
                                pass
                            break
                        take = min(size, cap - n)
                        self._body(mv, n, take, True, sink)
                        n += take
                        if take < size:
                            cut = True
                            break
                        self._line()  # the CRLF after the chunk data
                elif cl is not None:
                    n = min(cl, cap)
                    self._body(mv, 0, n, True, sink)
                    cut = cl > cap
                else:
                    n = self._body(mv, 0, cap, False, sink)
                    cut = n == cap and self._read(memoryview(bytearray(1)), False) > 0
            except (AttributeError, IndexError, ValueError):
                raise OSError("malformed response")
            self.status, self.headers, self.body, self.truncated = status, h, mv[:0 if sink else n], cut
            if status == 101:  # Switching Protocols: the caller (mimi.net.ws) takes the connection
                # (``link``), and the body is what the server sent after the head (the new
                # protocol's start). "link", not a new name: the interned-name pool (docs/heap.md)
                self.link, self.body = self._conn, memoryview(bytes(memoryview(self._rb)[self._rs:self._re]))
                self._conn = None
            return self
        finally:
            self.close()
            self._rb = None

    def _line(self):
        """The next line without its CRLF, as bytes; None when it was longer than the
        buffer (the rest of it is skipped). ``OSError`` if the stream ends first."""
        rb = self._rb
        skip = False
        while True:
            i = rb.find(b"\n", self._rs, self._re)
            if i >= 0:
                line = None if skip else bytes(memoryview(rb)[self._rs:i]).rstrip(b"\r")
                self._rs = i + 1
                return line
            k = self._re - self._rs
            if k == len(rb):  # no line break in a full buffer: skip this line
                skip, k = True, 0
            else:
                rb[:k] = rb[self._rs:self._re]  # the partial line to the front
            self._rs = self._re = 0
            self._re = k + self._read(memoryview(rb)[k:], True, True)

    def _read(self, mv, exact, once=False):
        """Read into ``mv`` what is buffered, then from the socket; the count. ``exact``: all
        of ``mv`` (else up to the end of the stream), or ``OSError``; ``once``: one read."""
        got = 0
        while got < len(mv):
            k = self._re - self._rs
            if k:
                k = min(k, len(mv) - got)
                mv[got:got + k] = memoryview(self._rb)[self._rs:self._rs + k]
                self._rs += k
            else:
                left = seam.ticks_diff(self._end, seam.ticks_ms())  # the deadline
                k = self._conn.readinto(mv[got:], min(self._tmo, left)) if left > 0 else None
                if k is None:
                    raise OSError(110, "timed out")
                if not k:
                    if exact:
                        raise OSError("connection closed early")
                    break
            got += k
            if once:
                break
        return got


    def _body(self, mv, at, k, exact, sink):
        """Read ``k`` body bytes into ``mv[at:]``, or with a ``sink`` through ``mv`` in
        pieces handed to it; the count (``exact``: all ``k`` or ``OSError``)."""
        if sink is None:
            return self._read(mv[at:at + k], exact)
        got = 0
        while got < k:
            r = self._read(mv[:min(len(mv), k - got)], exact, True)
            if not r:
                break
            sink(mv[:r])
            got += r
        return got


start = Pending  # start(...) -> Pending: connect and send now, read the response later
