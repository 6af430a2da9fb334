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

TAG = "http"
_HEADERS_MAX = const(100)  # header lines per response before we call it malformed
_KEEP = ("content-length", "transfer-encoding", "content-type", "retry-after",
         "retry-after-ms", "x-should-retry", "location")


class Response:
    """``status`` (int), ``headers`` (dict, lower-case names, only the kept ones),
    ``body`` (memoryview into the caller's buffer), ``truncated`` (True when the body did
    not fit; the rest was not read)."""

    def __init__(self, status, headers, body, truncated):
        self.status = status
        self.headers = headers
        self.body = body
        self.truncated = truncated

    def json(self):
        """Parse the body as JSON (in place on MicroPython). ``ValueError`` if it is not."""
        return seam.loads_view(self.body)

    def text(self):
        """The body as str (bytes cut inside a UTF-8 character at the cap are dropped)."""
        b = bytes(self.body)
        try:
            return b.decode()
        except UnicodeError:
            end = len(b)
            while end > 0 and (b[end - 1] & 0xC0) == 0x80:
                end -= 1
            return b[:max(0, end - 1)].decode()


def parse_url(url):
    """Split ``http[s]://host[:port]/path?q`` into ``(tls, host, port, path)``; ``ValueError`` if bad."""
    if url.startswith("https://"):
        tls, rest, port = True, url[8:], 443
    elif url.startswith("http://"):
        tls, rest, port = False, url[7:], 80
    else:
        raise ValueError("URL must start with http:// or https://")
    i = rest.find("/")
    hostport, path = (rest, "/") if i < 0 else (rest[:i], rest[i:])
    if hostport.startswith("["):  # IPv6 literal
        j = hostport.find("]")
        host, tail = hostport[1:j], hostport[j + 1:]
        if tail.startswith(":"):
            port = _port(tail[1:])
    elif ":" in hostport:
        host, p = hostport.rsplit(":", 1)
        port = _port(p)
    else:
        host = hostport
    if not host or "@" in host:
        raise ValueError("URL has no usable host")
    return tls, host, port, path


def _port(p):
    try:
        n = int(p)
    except ValueError:
        n = 0
    if not 0 < n < 65536:
        raise ValueError("URL has a bad port")
    return n


class _Count:
    """The counting pass of a body writer."""

    def __init__(self):
        self.n = 0

    def write(self, x):
        self.n += len(seam.as_bytes(x))


class _Out:
    """Buffered writes to the connection (one TLS record per ~buffer, not per piece)."""

    def __init__(self, conn, size):
        self.conn = conn
        self.buf = bytearray(size)
        self.n = 0
        self.sent = 0

    def write(self, x):
        b = seam.as_bytes(x)
        k = len(b)
        self.sent += k
        if self.n + k > len(self.buf):
            self.flush()
            if k >= len(self.buf):
                self.conn.write(b)
                return
        self.buf[self.n:self.n + k] = b
        self.n += k

    def flush(self):
        if self.n:
            self.conn.write(memoryview(self.buf)[:self.n])
            self.n = 0


def _check_header(s):
    if "\r" in s or "\n" in s:
        raise ValueError("header contains a line break")
    return s


def start(method, url, headers=None, body=None, timeout_ms=None, buf=None, cap=None,
          want=(), connect_timeout_ms=None, deadline_ms=None):
    """Connect, send the request, and return a ``Pending`` for its response.

    ``headers``: dict of extra request headers. ``body``: None, bytes-like, str, or a
    writer ``fn(write)`` that calls ``write(bytes or str)`` for each piece, the same way
    both times it is called. ``timeout_ms``: for each read and write (default
    ``HTTP_TIMEOUT_MS``); ``connect_timeout_ms`` for the TCP connect and the TLS
    handshake; ``deadline_ms``: the whole exchange, from now. ``buf``/``cap``/``want``:
    see ``Pending.finish``. Raises as the module says; the socket is closed on failure.
    """
    tls, host, port, path = parse_url(url)
    timeout_ms = timeout_ms or config.HTTP_TIMEOUT_MS
    connect_timeout_ms = connect_timeout_ms or config.HTTP_CONNECT_TIMEOUT_MS
    deadline_ms = deadline_ms or config.HTTP_DEADLINE_MS
    t0 = seam.ticks_ms()
    ctx = None
    if tls:
        if not seam.clock_synced():
            raise seam.TLSError("cannot check %s's certificate: the clock is not set yet (no NTP time); "
                                "HTTPS works once the time is synced" % host)
        from mimi.net import certs

        ctx = certs.context()
    conn = seam.Conn(host, port, connect_timeout_ms)
    try:
        if tls:
            try:
                conn.start_tls(host, ctx)
            except seam.TLSError as e:
                raise seam.TLSError("%s's certificate was refused: %s" % (host, e))
        conn.set_timeout(timeout_ms)
        out = _Out(conn, config.HTTP_WRITE_BUF_BYTES)
        _send(out, method, host, port, tls, path, headers, body)
    except BaseException:
        conn.close()
        raise
    return Pending(conn, method, timeout_ms, t0, deadline_ms, buf, cap, want)


def _send(out, method, host, port, tls, path, headers, body):
    w = out.write
    w(method)
    w(" ")
    w(_check_header(path))
    w(" HTTP/1.1\r\nHost: ")
    w(host if ":" not in host else "[" + host + "]")
    if port != (443 if tls else 80):
        w(":%d" % port)
    w("\r\nConnection: close\r\n")
    has_agent = False
    if headers:
        for k in headers:
            w(_check_header(k))
            w(": ")
            w(_check_header(str(headers[k])))
            w("\r\n")
            has_agent = has_agent or k.lower() == "user-agent"
    if not has_agent:
        w("User-Agent: mimi\r\n")
    count = None
    if callable(body):
        c = _Count()
        body(c.write)
        count = c.n
    elif body is not None:
        body = seam.as_bytes(body)
        count = len(body)
    if count is not None:
        w("Content-Length: %d\r\n" % count)
    w("\r\n")
    head = out.sent
    if callable(body):
        body(w)
        if out.sent - head != count:
            raise ValueError("body writer wrote %d bytes after counting %d" % (out.sent - head, count))
    elif body is not None:
        w(body)
    out.flush()


def request(method, url, headers=None, body=None, timeout_ms=None, buf=None, cap=None,
            want=(), connect_timeout_ms=None, deadline_ms=None):
    """Send a request and read its response: ``start(...)`` then ``finish()``.

    Returns a ``Response``. Example::

        buf = bytearray(4096)
        r = http.request("POST", url, {"Content-Type": "application/json"}, b"{}", buf=buf)
        if r.status == 200 and not r.truncated: data = r.json()
    """
    return start(method, url, headers, body, timeout_ms, buf, cap, want,
                 connect_timeout_ms, deadline_ms).finish()


class Pending:
    """A request that was sent and whose response has not been read yet."""

    def __init__(self, conn, method, timeout_ms, t0, deadline_ms, buf, cap, want):
        self._conn = conn
        self._head_only = method == "HEAD"
        self._tmo = timeout_ms
        self._t0 = t0
        self._deadline = deadline_ms
        self._buf = buf
        self._cap = cap
        self._want = want
        self._rb = bytearray(config.HTTP_LINE_BYTES)  # status line, headers, chunk sizes
        self._rs = 0
        self._re = 0
        self._eof = False
        self._err = None

    def ready(self, timeout_ms=0):
        """True once the response has begun (or the connection ended or failed), so
        ``finish()`` will not wait for the server to think. Waits at most ``timeout_ms``."""
        if self._rs < self._re or self._eof or self._err is not None:
            return True
        conn = self._conn
        if conn is None or not conn.wait(timeout_ms):
            return False
        conn.set_timeout(0)
        try:
            n = conn.readinto(memoryview(self._rb))
        except OSError as e:
            self._err = e
            return True
        if n is None:  # a TLS record without data (a session ticket): still waiting
            return False
        if n == 0:
            self._eof = True
        self._rs, self._re = 0, n
        return True

    def expired(self):
        """True when the overall deadline has passed (the caller should ``close()``)."""
        return seam.ticks_diff(seam.ticks_ms(), self._t0) >= self._deadline

    def close(self):
        """Drop the request and close the socket (safe to call twice)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def finish(self, buf=None, cap=None, want=None):
        """Read the response and close the socket; return a ``Response``.

        ``buf``: the bytearray the body goes into (reused by the caller); without one a
        buffer of ``cap`` bytes (default ``HTTP_BODY_MAX_BYTES``) is allocated, or of the
        Content-Length when smaller. ``cap``: at most this many body bytes are kept (default
        ``len(buf)``). ``want``: extra response header names to keep (lower case) besides
        the framing ones and ``retry-after``. Raises ``OSError`` on a timeout, a connection
        closed early, or a malformed response.
        """
        if buf is not None:
            self._buf = buf
        if cap is not None:
            self._cap = cap
        if want is not None:
            self._want = want
        try:
            return self._read()
        finally:
            self.close()

    # -- reading --------------------------------------------------------------------

    def _timeout(self):
        left = self._deadline - seam.ticks_diff(seam.ticks_ms(), self._t0)
        if left <= 0:
            raise OSError(110, "timed out: no complete response within %d s" % (self._deadline // 1000))
        return min(self._tmo, left)

    def _fill(self, at):
        """Read more into the line buffer at offset ``at``; the count (0 at end of stream)."""
        if self._err is not None:
            e, self._err = self._err, None
            raise e
        if self._eof:
            return 0
        if self._conn is None:
            raise OSError("connection closed")
        self._conn.set_timeout(self._timeout())
        n = self._conn.readinto(memoryview(self._rb)[at:])
        if n == 0:
            self._eof = True
        return n

    def _line(self):
        """The next line without its CRLF, as bytes; None when it was longer than the
        buffer (the rest of it is skipped). ``OSError`` if the stream ends first."""
        rb = self._rb
        long_line = False
        while True:
            i = rb.find(b"\n", self._rs, self._re)
            if i >= 0:
                line = None if long_line else bytes(rb[self._rs:i]).rstrip(b"\r")
                self._rs = i + 1
                return line
            if self._rs > 0:  # move the partial line to the front
                k = self._re - self._rs
                rb[0:k] = rb[self._rs:self._re]
                self._rs, self._re = 0, k
            if self._re == len(rb):  # no line break in a full buffer: skip this line
                long_line = True
                self._rs = self._re = 0
            n = self._fill(self._re)
            if not n:
                raise OSError("connection closed in the response head")
            self._re += n

    def _readinto(self, mv):
        """Read up to ``len(mv)`` body bytes: buffered ones first, then from the socket."""
        k = self._re - self._rs
        if k:
            k = min(k, len(mv))
            mv[:k] = memoryview(self._rb)[self._rs:self._rs + k]
            self._rs += k
            return k
        if self._err is not None or self._eof or self._conn is None:
            return self._fill(0)
        self._conn.set_timeout(self._timeout())
        n = self._conn.readinto(mv)
        if n == 0:
            self._eof = True
        return n

    def _read_exact(self, mv):
        got = 0
        while got < len(mv):
            n = self._readinto(mv[got:])
            if not n:
                raise OSError("connection closed in the response body")
            got += n

    def _skip(self, count):
        """Read and drop ``count`` body bytes (a chunk's CRLF)."""
        tmp = bytearray(count)
        self._read_exact(memoryview(tmp))

    def _head(self):
        while True:
            line = self._line()
            if not line or not line.startswith(b"HTTP/"):
                raise OSError("malformed response: no status line")
            parts = line.split(None, 2)
            try:
                status = int(parts[1])
            except (IndexError, ValueError):
                raise OSError("malformed response: bad status line")
            headers = {}
            for _ in range(_HEADERS_MAX):
                line = self._line()
                if line is None:
                    continue  # an oversized header we do not keep
                if not line:
                    break
                i = line.find(b":")
                if i <= 0:
                    continue
                name = line[:i].strip().lower().decode()
                if name in _KEEP or name in self._want:
                    headers[name] = line[i + 1:].strip().decode()
            else:
                raise OSError("malformed response: over %d header lines" % _HEADERS_MAX)
            if status >= 200 or status == 101:
                return status, headers
            # 1xx interim response (100 Continue, 103 Early Hints): the real one follows

    def _read(self):
        status, headers = self._head()
        te = headers.get("transfer-encoding", "").lower()
        cl = headers.get("content-length")
        if cl is not None:
            try:
                cl = int(cl)
            except ValueError:
                raise OSError("malformed response: bad Content-Length")
        cap = self._cap
        buf = self._buf
        if buf is None:
            cap = cap or config.HTTP_BODY_MAX_BYTES
            buf = bytearray(cl if cl is not None and cl < cap and "chunked" not in te else cap)
        cap = len(buf) if cap is None else min(cap, len(buf))
        mv = memoryview(buf)
        if self._head_only or status in (204, 304) or status < 200:
            n, truncated = 0, False
        elif "chunked" in te:
            n, truncated = self._chunked(mv, cap)
        elif cl is not None:
            n = min(cl, cap)
            self._read_exact(mv[:n])
            truncated = cl > cap
        else:
            n, truncated = self._to_close(mv, cap)
        return Response(status, headers, mv[:n], truncated)

    def _chunked(self, mv, cap):
        n = 0
        while True:
            line = self._line()
            if line is None:
                raise OSError("malformed response: oversized chunk header")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise OSError("malformed response: bad chunk size")
            if size == 0:
                while self._line():  # trailer fields, then the empty line
                    pass
                return n, False
            take = min(size, cap - n)
            self._read_exact(mv[n:n + take])
            n += take
            if take < size:
                return n, True
            self._skip(2)  # CRLF after the chunk data

    def _to_close(self, mv, cap):
        n = 0
        while n < cap:
            k = self._readinto(mv[n:cap])
            if not k:
                return n, False
            n += k
        probe = bytearray(1)
        return n, bool(self._readinto(memoryview(probe)))
