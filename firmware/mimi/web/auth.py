"""Who may use the web app and the chat gateway (issue 16; docs/security.md).

One secret opens everything: the setting ``web_password`` (set in the setup portal, at the
console with ``set_web_password``, or made and printed once at first start, ``first_start``).
Besides it, tokens made at the console (``web_token``) open the gateway and the bearer
routes (MCP, updates); only their SHA-256 is stored (setting ``web_tokens``), so
``config_show`` cannot reveal one.

- A login (``login``) checks the password and makes a session: a random id kept in RAM
  (``_WEB_SESSIONS_MAX`` at most, the oldest dropped; all gone after a reboot) sent as the
  cookie ``mimi_session`` (HttpOnly, SameSite=Strict, Path=/), valid ``_WEB_SESSION_MS``.
- Wrong passwords are rate-limited for the whole board (an attacker on the LAN can change
  address): ``_WEB_FREE_TRIES`` wrong tries are free, then each try waits 1 s, doubling per
  wrong try up to ``_WEB_WAIT_MAX_MS`` (``login_wait_s``). A right password clears it.
- A POST from a page carries the session's CSRF token (form field ``csrf`` or header
  ``X-CSRF-Token``), and its ``Origin``, when sent, must be the page's own host
  (``csrf_ok``). The cookie's SameSite=Strict already keeps other sites' requests out.
- A WebSocket handshake with the cookie must come from the same host as well
  (``same_origin``): a page elsewhere cannot open the chat in the owner's name.

The functions take a microdot ``Request`` (``headers``, ``cookies``, ``form``, ``args``)
and read nothing else from it; other route modules (portal, OTA, MCP) use them as they are.
Comparisons of secrets take the same time wherever they differ.
"""
import binascii
import hashlib
import os

from micropython import const

from mimi import config, seam

_WEB_SESSIONS_MAX = const(4)
_WEB_SESSION_MS = const(604800000)  # 7 days
_WEB_FREE_TRIES = const(3)  # wrong passwords before the waits begin
_WEB_WAIT_MAX_MS = const(300000)
_WEB_TOKENS_MAX = const(4)
_WEB_PASSWORD_MIN = const(8)  # characters of a password set by hand
COOKIE = "mimi_session"

_sessions = {}  # session id -> [csrf token, moment made]
_fails = [0, None]  # wrong passwords in a row, moment of the last one


def _random_hex(nbytes):
    return binascii.hexlify(os.urandom(nbytes)).decode()


def same(a, b):
    """True when the strings (or bytes) ``a`` and ``b`` are equal; the time taken does not
    depend on where they differ (only on their lengths)."""
    a = seam.as_bytes(a)
    b = seam.as_bytes(b)
    d = len(a) ^ len(b)
    for i in range(min(len(a), len(b))):
        d |= a[i] ^ b[i]
    return d == 0


def _digest(token):
    return binascii.hexlify(hashlib.sha256(seam.as_bytes(token)).digest()).decode()[:32]


# -- the password and the console's tokens -----------------------------------------------


def enabled():
    """True while a web password is set: only then do the web app and the gateway run."""
    return bool(config.get("web_password"))


def token_ok(token):
    """True when ``token`` (str) is the web password or a token made at the console;
    never while no password is set (clearing it closes the gateway to tokens too)."""
    pw = config.get("web_password")
    if not token or not isinstance(token, str) or not pw:
        return False
    ok = same(token, pw)
    d = _digest(token)
    for t in config.get("web_tokens").split(","):
        if t and same(d, t):
            ok = True
    return ok


def new_token():
    """Make a token for the gateway and the bearer routes, store its hash (the oldest of
    ``_WEB_TOKENS_MAX`` goes) and return it: it is shown once, on the console."""
    t = _random_hex(16)
    old = [x for x in config.get("web_tokens").split(",") if x]
    config.set("web_tokens", ",".join((old + [_digest(t)])[-_WEB_TOKENS_MAX:]))
    return t


def set_password(pw):
    """Store ``pw`` as the web password (at least ``_WEB_PASSWORD_MIN`` characters, no
    spaces or control characters); ``ValueError`` otherwise. Sessions made with the old one end."""
    pw = str(pw)
    if len(pw) < _WEB_PASSWORD_MIN or pw.strip() != pw or min(pw) <= " ":
        raise ValueError("a web password has at least %d characters, no spaces" % _WEB_PASSWORD_MIN)
    config.set("web_password", pw)
    config.set("web_made", "1")
    _sessions.clear()


def first_start(out=print):
    """At the first start without a web password, make one, store it and print it (once:
    ``web_made`` remembers it, so clearing the password later keeps the web app off).
    Returns the password made, or None."""
    if config.get("web_password") or config.get("web_made"):
        return None
    pw = _random_hex(6)
    config.set("web_password", pw)
    config.set("web_made", "1")
    out("[web] web password (shown once; set_web_password changes it): %s" % pw)
    return pw


# -- sessions -----------------------------------------------------------------------------


def login_wait_s():
    """Seconds before the next password may be tried (0: now)."""
    n, last = _fails
    if n < _WEB_FREE_TRIES or last is None:
        return 0
    wait = min(1000 << min(n - _WEB_FREE_TRIES, 16), _WEB_WAIT_MAX_MS) - seam.elapsed_ms(last)
    return (wait + 999) // 1000 if wait > 0 else 0


def login(password):
    """Check ``password``; returns ``(session id, csrf token)``, or None when wrong (the
    failure counts: ``login_wait_s``). The caller checks ``login_wait_s`` first."""
    pw = config.get("web_password")
    if not pw or not isinstance(password, str) or not same(password, pw):
        _fails[0] += 1
        _fails[1] = seam.moment()
        return None
    _fails[0] = 0
    if len(_sessions) >= _WEB_SESSIONS_MAX:  # the oldest goes
        del _sessions[min(_sessions, key=lambda k: _sessions[k][1][0])]
    sid = _random_hex(16)
    _sessions[sid] = [_random_hex(16), seam.moment()]
    return sid, _sessions[sid][0]


def logout(request):
    """End the request's session (nothing when it has none)."""
    _sessions.pop(request.cookies.get(COOKIE) or "", None)


def cookie(sid):
    """The ``Set-Cookie`` value for session ``sid`` ('' ends it)."""
    age = _WEB_SESSION_MS // 1000 if sid else 0
    return "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d" % (COOKIE, sid, age)


def _session(request):
    sid = request.cookies.get(COOKIE) or ""
    s = _sessions.get(sid)
    if s is None:
        return None
    if seam.elapsed_ms(s[1]) >= _WEB_SESSION_MS:
        del _sessions[sid]
        return None
    return s


def session_ok(request):
    """True when ``request`` carries a valid login session cookie."""
    return _session(request) is not None


def csrf_token(request):
    """The CSRF token of the request's session ('' without one): pages put it in forms."""
    s = _session(request)
    return s[0] if s else ""


def _host(url_or_host):
    """``mimi.local`` from ``http://mimi.local:80/x`` or ``mimi.local:80`` (lower case)."""
    h = url_or_host.split("://", 1)[-1].split("/", 1)[0]
    if h[:1] == "[":  # an IPv6 address
        return h.split("]", 1)[0].lower() + "]"
    return h.split(":", 1)[0].lower()


def same_origin(request):
    """True when the request's ``Origin`` header, if any, names the host it was sent to
    (the port may differ: the gateway's is not the pages')."""
    o = request.headers.get("Origin")
    if o is None:
        return True  # not from a browser page, or a same-origin GET
    return _host(o) == _host(request.headers.get("Host") or "")


def csrf_ok(request):
    """True when a state-changing request comes from one of our pages: a valid session,
    its CSRF token (form field ``csrf`` or header ``X-CSRF-Token``) and a same-origin
    ``Origin``, when the browser sent one."""
    s = _session(request)
    if s is None or not same_origin(request):
        return False
    t = request.headers.get("X-CSRF-Token")
    if t is None and request.content_type and request.content_type[:33] == "application/x-www-form-urlencoded":
        t = request.form.get("csrf")
    return bool(t) and same(t, s[0])


def bearer_ok(request):
    """True when the request has ``Authorization: Bearer <web password or console token>``."""
    h = request.headers.get("Authorization") or ""
    return h[:7].lower() == "bearer " and token_ok(h[7:].strip())


def ws_ok(request):
    """True when a WebSocket handshake may open the chat: the session cookie from a page
    of this host, or ``?token=`` (a browser cannot set headers on a WebSocket)."""
    t = request.args.get("token")
    if t is not None:
        return token_ok(t)
    return session_ok(request) and same_origin(request)
