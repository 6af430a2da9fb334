"""The proxy's tunnels, and its settings as text (``mimi.net.proxy.connect`` loads this
module only when the ``proxy`` setting is set: its code costs heap).

``proxy`` is ``http://[user:pass@]host:port`` (an HTTP CONNECT tunnel, RFC 9110 9.3.6,
with Basic authentication, RFC 7617) or ``socks5://[user:pass@]host:port`` (RFC 1928,
user name and password by RFC 1929; the proxy resolves the host name, so the board needs
no DNS for it); empty for none. Characters of the user or password that would break the
URL are written %XX. ``no_proxy`` lists what is reached directly: host names (a name
also covers its subdomains), IPv4 addresses or ``a.b.c.d/n`` ranges, ``*`` for all, and
``local`` (the default): ``localhost``, names without a dot or ending ``.local``,
loopback, private and link-local addresses, so a local Ollama stays off the proxy.

TLS runs end to end through the tunnel: the handshake is made with the real host's
name and its certificate is checked as on a direct connection. NTP (UDP) never goes
through a proxy. Errors are ``OSError``s of one short line naming the proxy as
``host:port``, never its user or password: unreachable, credentials refused (407, SOCKS
reply), tunnel refused (the proxy will not reach that host), and, from ``mimi.net.http``,
the tunnel closing mid-request. Their texts are in texts.md (``px_*``): read only when
one is raised, they cost no RAM meanwhile.
"""
from micropython import const

from mimi import config, seam

_REPLY_MAX = const(512)  # bytes of a CONNECT answer's head kept while looking for its end


def _err(key, *args):
    """The ``OSError`` (``ValueError`` for ``bad``) of texts.md's ``px_<key>``."""
    from mimi import commands

    return (ValueError if key == "bad" else OSError)(commands.text("px_" + key, *args))


def parse(url):
    """``(scheme, host, port, user, password)`` of a ``proxy`` value (scheme "http" or
    "socks5"; user and password None when absent), or None when ``url`` is empty or
    ``off``. ``ValueError`` when it is malformed (the message shows no password)."""
    url = (url or "").strip()
    if url in ("", "off", "none"):
        return None
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "socks5h":
        scheme = "socks5"
    rest = rest.rstrip("/")
    if not sep or scheme not in ("http", "socks5") or "/" in rest:
        raise _err("bad")
    cred, at, hp = rest.rpartition("@")
    user = pw = None
    if at:
        u, _, p = cred.partition(":")
        user, pw = _unquote(u), _unquote(p)
    i = hp.rfind(":")
    if i < 0 or i < hp.rfind("]") or not hp[i + 1:].isdigit() or not 0 < int(hp[i + 1:]) < 65536:
        raise _err("bad")
    host = hp[:i]
    if host.startswith("["):
        host = host[1:-1]
    if not host:
        raise _err("bad")
    return scheme, host, int(hp[i + 1:]), user, pw


def shown(url):
    """``url`` as it may be shown: the password as ``****``."""
    cred, at, hp = (url or "").rpartition("@")
    if not at:
        return url
    head, sep, user = cred.rpartition("://")
    return "%s%s%s:****@%s" % (head, sep, user.partition(":")[0], hp)


def _unquote(s):
    if "%" not in s:
        return s
    b = s.encode()
    out = bytearray()
    i = 0
    while i < len(b):
        if b[i] == 37 and i + 3 <= len(b):  # "%XX"
            try:
                out.append(int(b[i + 1:i + 3], 16))
                i += 3
                continue
            except ValueError:
                pass
        out.append(b[i])
        i += 1
    return bytes(out).decode()


def _ip4(host):
    """The IPv4 literal ``host`` as an int, or None."""
    p = host.split(".")
    if len(p) != 4:
        return None
    n = 0
    for x in p:
        if not x.isdigit() or int(x) > 255:
            return None
        n = n << 8 | int(x)
    return n


def _local(host):
    """True for localhost, names without a dot or under .local, and loopback, private
    (RFC 1918, RFC 4193) and link-local addresses."""
    h = host.lower()
    if h == "localhost" or h.endswith(".localhost") or h.endswith(".local") or "." not in h and ":" not in h:
        return True
    if ":" in h:  # IPv6: ::1, fc00::/7, fe80::/10
        return h == "::1" or h[:2] in ("fc", "fd") or h[:3] in ("fe8", "fe9", "fea", "feb")
    n = _ip4(h)
    if n is None:
        return False
    for net, bits in ((0x7F000000, 8), (0x0A000000, 8), (0xAC100000, 12), (0xC0A80000, 16), (0xA9FE0000, 16), (0, 32)):
        if n >> (32 - bits) == net >> (32 - bits):
            return True
    return False


def direct(host):
    """True when ``host`` is reached without the proxy (``no_proxy``, see the module)."""
    h = host.lower().rstrip(".")
    for e in config.get("no_proxy").replace(" ", ",").split(","):
        if e == "*":
            return True
        e = e.lower().lstrip("*").lstrip(".")  # "*.example.org" and ".example.org": example.org's
        if not e:
            continue
        if e == "local":
            if _local(h):
                return True
        elif "/" in e:  # an IPv4 range
            a, _, bits = e.partition("/")
            n, net = _ip4(h), _ip4(a)
            if n is not None and net is not None and bits.isdigit() and int(bits) <= 32:
                k = 32 - int(bits)
                if n >> k == net >> k:
                    return True
        elif h == e or h.endswith("." + e):
            return True
    return False


def connect(host, port, ctx, timeout_ms):
    """``mimi.net.proxy.connect`` when a ``proxy`` is set (the same arguments and
    errors): a tunnel through it, or direct when ``no_proxy`` covers ``host``."""
    p = parse(config.get("proxy"))
    if p is None or direct(host):
        return seam.Conn(host, port, timeout_ms, ctx)
    scheme, phost, pport, user, pw = p
    name = "proxy %s:%d" % ("[%s]" % phost if ":" in phost else phost, pport)
    try:
        c = seam.Conn(phost, pport, timeout_ms)
    except OSError as e:
        raise _err("unreachable", name, _why(e))
    try:
        try:
            if scheme == "socks5":
                _socks5(c, host, port, user, pw, name, timeout_ms)
            else:
                _http_connect(c, host, port, user, pw, name, timeout_ms)
        except OSError as e:
            if str(e).startswith(name):
                raise
            raise _err("setup", name, _why(e))
        c.via = name
        if ctx:
            c.start_tls(ctx, host, timeout_ms)
    except BaseException:
        c.close()
        raise
    return c


def _why(e):
    s = str(e)
    return "timed out" if "timed out" in s or e.args and e.args[0] in (110, 116) else s[:60] or type(e).__name__


def _read(c, mv, timeout_ms, name):
    """Read at least one byte into ``mv``; ``OSError`` naming the proxy when it closes or stalls."""
    n = c.readinto(mv, timeout_ms)
    if n is None:
        raise _err("silent", name)
    if not n:
        raise _err("closed", name)
    return n


def _exact(c, n, timeout_ms, name):
    b = bytearray(n)
    mv = memoryview(b)
    got = 0
    while got < n:
        got += _read(c, mv[got:], timeout_ms, name)
    return b


def _http_connect(c, host, port, user, pw, name, timeout_ms):
    """An HTTP CONNECT tunnel (RFC 9110 9.3.6): any 2xx opens it, 407 (or 401) is the credentials."""
    target = "%s:%d" % ("[%s]" % host if ":" in host else host, port)
    head = "CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (target, target)
    if user is not None:
        import binascii

        head += "Proxy-Authorization: Basic %s\r\n" % binascii.b2a_base64(
            ("%s:%s" % (user, pw)).encode()).decode().strip()
    c.write((head + "\r\n").encode(), timeout_ms)
    buf = bytearray(_REPLY_MAX)
    n = end = 0
    while True:  # the answer's head, up to its empty line
        n += _read(c, memoryview(buf)[n:], timeout_ms, name)
        end = buf.find(b"\r\n\r\n", 0, n)
        if end >= 0:
            break
        if n == _REPLY_MAX:
            raise _err("long", name, _REPLY_MAX)
    parts = bytes(buf[:buf.find(b"\r\n")]).decode().split(None, 2)
    try:
        code = int(parts[1])
    except (IndexError, ValueError):
        raise _err("not_http", name)
    why = " ".join(parts[1:])[:60]
    if code in (401, 407):  # tinyproxy answers wrong credentials with 401
        raise _err("needs_auth" if user is None else "auth", name, why)
    if not 200 <= code < 300:
        raise _err("refused", name, target, why)
    if end + 4 != n:  # nothing may follow until we speak: it would be read as the server's
        raise _err("extra", name)


def _socks5(c, host, port, user, pw, name, timeout_ms):
    """A SOCKS5 CONNECT (RFC 1928) with no authentication or a user name and password
    (RFC 1929); the host name goes to the proxy, which resolves it."""
    c.write(b"\x05\x02\x00\x02" if user is not None else b"\x05\x01\x00", timeout_ms)
    r = _exact(c, 2, timeout_ms, name)
    if r[0] != 5:
        raise _err("not_socks", name)
    if r[1] == 2 and user is not None:
        u, p = user.encode(), pw.encode()
        if len(u) > 255 or len(p) > 255:
            raise _err("cred_long", name)
        c.write(bytes((1, len(u))) + u + bytes((len(p),)) + p, timeout_ms)
        if _exact(c, 2, timeout_ms, name)[1] != 0:
            raise _err("auth", name, "SOCKS5")
    elif r[1] != 0:
        raise _err("needs_auth" if user is None else "auth", name, "SOCKS5 method %d" % r[1])
    ip = _ip4(host)
    if ip is not None:
        addr = b"\x01" + bytes(((ip >> 24) & 255, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255))
    else:
        h = host.encode()
        addr = b"\x03" + bytes((len(h),)) + h
    c.write(b"\x05\x01\x00" + addr + bytes((port >> 8, port & 255)), timeout_ms)
    r = _exact(c, 4, timeout_ms, name)
    if r[1] != 0:  # the reply codes of RFC 1928, section 6
        why = "reply %d" % r[1]
        for line in _err("socks").args[0].split("\n"):
            if line.split(" ", 1)[0] == str(r[1]):
                why = line.split(" ", 1)[1]
        raise _err("refused", name, "%s:%d" % (host, port), "SOCKS5: " + why)
    n = {1: 4, 4: 16}.get(r[3])
    if n is None:
        n = _exact(c, 1, timeout_ms, name)[0]
    _exact(c, n + 2, timeout_ms, name)  # the bound address and port
