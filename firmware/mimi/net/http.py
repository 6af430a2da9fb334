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
- a request given a ``Keep`` (one per thread and kind of request) reuses its
  connection (HTTP/1.1 keep-alive) while the server keeps it open and it has been idle
  under ``_HTTP_KEEP_IDLE_MS`` (``sweep()``, from the I/O loop, closes older ones); a
  request that fails on a reused connection before any byte of its answer came is sent
  once more on a fresh one. Without a ``Keep`` a request is ``Connection: close``;
- connections are opened by ``mimi.net.proxy.connect``, through the ``proxy`` setting
  when one applies;
- the socket is closed on every path where it is not kept.

Errors: ``OSError`` for connection problems, timeouts and malformed responses (worth a
retry), ``NoAnswer`` (an ``OSError``) when the server took the request and its answer did
not come in time; ``seam.TLSError`` (an ``OSError``) when the server's certificate was refused or the
clock is unset (not worth a retry); ``ValueError`` for a bad URL or header.
Never logs a path or header (Telegram puts its token in the path).
Spec: RFC 9112 (message syntax, chunked coding).
"""
from micropython import const

from mimi import config, seam
from mimi.net import proxy  # every connection goes through it

# Tunables (config.py holds those shared by several modules and the settings).
_HTTP_TIMEOUT_MS = const(30000)  # each read or write; callers raise it for slow replies
_HTTP_DEADLINE_MS = const(300000)  # a whole exchange, so a dripping server cannot hold a thread
_HTTP_KEEP_IDLE_MS = const(90000)  # a kept connection idle this long is closed (a message a minute reuses it)

_HEADERS_MAX = const(100)  # header lines per response before we call it malformed
_KEEP = const(" content-length transfer-encoding content-type retry-after retry-after-ms x-should-retry location"
              " connection ")
_BAD_URL = const("the URL is not http[s]://host[:port][/path]")


class NoAnswer(OSError):
    """The request went out and its answer did not come (or stopped coming) in time:
    ``args`` (110, "timed out"). The server is there but silent; not "unreachable"."""


_keeps = []  # every Keep made, for sweep()


class Keep:
    """A place for one idle keep-alive connection, reused by the requests given it.

    Give each thread and kind of request its own (the long poll; the Bot API's other
    calls; the LLM), so a connection is used by one request at a time. While a request
    runs the connection is its own, out of the ``Keep``; the lock guards only the hand
    over, so ``sweep()`` from another thread may close an idle one. A kept connection is
    for one server: a request elsewhere closes it and opens its own.
    """

    def __init__(self):
        self._lock = seam.allocate_lock()
        self._conn = self._key = None
        self._since = 0
        _keeps.append(self)

    def take(self, key):
        """The kept connection to ``key`` when it is still good, else None (closed)."""
        with self._lock:
            conn, same, since, self._conn = self._conn, key == self._key, self._since, None
        if conn is None:
            return None
        if same and seam.ticks_diff(seam.ticks_ms(), since) < _HTTP_KEEP_IDLE_MS:
            try:  # the server's close, or bytes nobody asked for: readable means done
                if conn.readinto(memoryview(bytearray(1)), 0) is None:
                    return conn
            except OSError:
                pass
        conn.close()
        return None

    def give(self, key, conn):
        """Keep ``conn`` (to ``key``) for the next request; one held before is closed."""
        with self._lock:
            old, self._conn, self._key, self._since = self._conn, conn, key, seam.ticks_ms()
        if old is not None:
            old.close()

    def close(self, idle_ms=0):
        """Close the kept connection when it has been idle ``idle_ms`` or more; True if it did."""
        with self._lock:
            conn = self._conn
            if conn is None or seam.ticks_diff(seam.ticks_ms(), self._since) < idle_ms:
                return False
            self._conn = None
        conn.close()
        return True

    def held(self):
        """True while an idle connection is kept."""
        return self._conn is not None


def sweep(idle_ms=_HTTP_KEEP_IDLE_MS):
    """Close every kept connection idle ``idle_ms`` or more (0: all idle ones); the count.
    Each open TLS session holds about 25 KB of the chip's internal RAM."""
    n = 0
    for k in _keeps:
        n += k.close(idle_ms)
    return n


def parse_url(url):
    """Split ``http[s]://host[:port]/path?q`` into ``(tls, host, port, path)``; ``ValueError`` if bad."""
    last = _parsed[0]
    if last[1] and url == last[0]:  # the same URL again (each part was a new string: issue 17)
        return last[1]
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
    out = tls, host, port, path
    _parsed[0] = (url, out)  # one tuple, replaced whole: safe from two threads
    return out


_parsed = [(None, None)]  # (url, parse_url's answer) made last


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
    want=(), connect_timeout_ms=None, deadline_ms=None, keep=None)`` connects and sends.
    ``headers``: dict of extra request headers. ``body``: None, bytes-like, str, or a
    writer ``fn(write)`` that calls ``write(bytes or str)`` for each piece, the same way
    every time it is called (once to count, once per sending). ``timeout_ms``: for each
    read and write (default ``_HTTP_TIMEOUT_MS``); ``connect_timeout_ms`` for the TCP
    connect, the proxy's tunnel and the TLS handshake; ``deadline_ms``: the whole
    exchange, from now. ``buf``/``cap``/``want``: see ``finish``. ``keep``: a ``Keep``
    whose connection is reused and which gets it back after a complete answer the server
    did not end with ``Connection: close``. Raises as the module says; the socket is
    closed on failure. No ``HEAD`` (its response would be read as having a body).

    After ``finish()`` it is the response: ``status`` (int), ``headers`` (dict, lower-case
    names, only the kept ones), ``body`` (memoryview into the buffer), ``truncated``
    (True when the body did not fit; the rest was not read), ``json()``.
    """

    def __init__(self, method, url, headers=None, body=None, timeout_ms=None, buf=None, cap=None, want=(),
                 connect_timeout_ms=None, deadline_ms=None, keep=None):
        tls, host, port, path = parse_url(url)
        self._tmo = timeout_ms or _HTTP_TIMEOUT_MS
        self._ctmo = connect_timeout_ms or config.HTTP_CONNECT_TIMEOUT_MS
        self._end = seam.ticks_add(seam.ticks_ms(), deadline_ms or _HTTP_DEADLINE_MS)
        self._opts = buf, cap, want
        self._rb = bytearray(config.HTTP_LINE_BYTES)  # request gathering, then status/header/chunk lines
        self._rs = self._re = self._sent = 0
        self._conn = self._err = None
        self._got = False  # a byte of the answer has come
        self._keep = keep
        self._key = (host, port, tls, config.get("proxy"), config.get("no_proxy"))  # what a kept connection must fit
        self._ctx = None
        if tls:
            if not seam.clock_synced():
                raise seam.TLSError("the clock is not set: cannot check %s's certificate" % host)
            from mimi.net import certs

            self._ctx = certs.context()
        h = host
        if ":" in h:  # an IPv6 literal
            h = "[%s]" % h
        if port != (443 if tls else 80):
            h += ":%d" % port
        hd = headers or {}
        c = hd.get("Connection", None if keep else "close")  # "Upgrade" for a WebSocket (mimi.net.ws)
        head = "%s %s HTTP/1.1\r\nHost: %s\r\n%sUser-Agent: mimi\r\n" % (
            method, path, h, "" if c is None else "Connection: %s\r\n" % c)
        for k in hd:
            if k != "Connection":
                head += "%s: %s\r\n" % (k, hd[k])
        count = None
        if callable(body):
            body(self._write)  # the counting pass: no connection yet, so _write only counts
            count, self._sent = self._sent, 0
        elif body is not None:
            body = seam.as_bytes(body)
            count = len(body)
        if count is not None:
            head += "Content-Length: %d\r\n" % count
        n = 3 + (c is not None) + len(hd) - ("Connection" in hd) + (count is not None)  # lines; a line break adds one
        if head.count("\n") != n or head.count("\r") != n:
            raise ValueError("line break in a header")
        self._req = head, body, count
        self._conn = keep and keep.take(self._key)
        self._reused = self._conn is not None
        if not self._reused:
            self._conn = self._open()
        try:
            self._send()
        except OSError as e:
            self._again(e)
        except BaseException:
            self.close()
            raise

    def _open(self):
        return proxy.connect(self._key[0], self._key[1], self._ctx, self._ctmo)

    def _send(self):
        """Write the request (head, then body) to the connection."""
        head, body, count = self._req
        w = self._write
        self._sent = self._re = 0
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
            self._conn.write(memoryview(self._rb)[:self._re], self._tmo)
        self._re = 0

    def _again(self, e):
        """After ``e`` on a reused connection before any byte of the answer (the server had
        closed it while idle): the same request once more on a fresh connection. Otherwise,
        or when ``e`` was a timeout (the server may be working on it), close and raise ``e``."""
        if not self._reused or self._got or isinstance(e, NoAnswer) or "timed out" in str(e):
            self.close()
            raise e
        self._conn.close()
        self._conn = None
        self._reused = False
        self._rs = self._re = 0
        try:
            self._conn = self._open()
            self._send()
        except BaseException:
            self.close()
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
        ``finish()`` will not wait for the server to think. Waits at most ``timeout_ms``.
        A kept connection the server had closed is replaced here (the request sent again)."""
        if self._err is not None:
            return True
        if self._conn is None:
            return False
        if self._rs < self._re:
            return True
        try:
            n = self._conn.readinto(memoryview(self._rb), timeout_ms)
        except OSError as e:
            n = e
        if n is None:
            return False
        if not n or isinstance(n, OSError):
            if not self._reused or self._got:
                return True  # finish() meets the error
            try:
                self._again(n or OSError("connection closed early"))
            except OSError as e:
                self._err = e
                return True
            return False
        self._got = True
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
        kept = False
        try:
            if self._err is not None:
                raise self._err
            try:
                while True:  # 1xx interim responses (100 Continue, 103 Early Hints): the real one follows
                    try:
                        line = self._line()
                    except OSError as e:  # a kept connection the server had closed: once on a fresh one
                        self._again(e)
                        continue
                    if not line.startswith(b"HTTP/"):
                        raise ValueError
                    v11 = line.startswith(b"HTTP/1.1 ")
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
                    v11 = False  # read to the close
            except (AttributeError, IndexError, ValueError):
                raise OSError("malformed response")
            self.status, self.headers, self.body, self.truncated = status, h, mv[:0 if sink else n], cut
            if status == 101:  # Switching Protocols: the caller (mimi.net.ws) takes the connection
                # (``link``), and the body is what the server sent after the head (the new
                # protocol's start). "link", not a new name: the interned-name pool (docs/heap.md)
                self.link, self.body = self._conn, memoryview(bytes(memoryview(self._rb)[self._rs:self._re]))
                self._conn = None
            # Kept only when the answer ended where its framing said and nothing else came.
            kept = self._keep is not None and v11 and not cut and status != 101 and self._rs == self._re \
                and "close" not in h.get("connection", "").lower()
            return self
        finally:
            if kept:
                self._keep.give(self._key, self._conn)
                self._conn = None
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
                    raise NoAnswer(110, "timed out")
                if not k:
                    if exact:
                        via = getattr(self._conn, "via", None)
                        raise OSError("connection closed early" + (" (the tunnel through %s)" % via if via else ""))
                    break
                self._got = True
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
