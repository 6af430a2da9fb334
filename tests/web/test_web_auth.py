"""mimi.web.auth: the password, console tokens, sessions, CSRF, the login rate limit, the
password made at first start (both runtimes; a request is a plain stand-in with the
attributes microdot's ``Request`` has)."""
from mimi import config
from mimi.web import auth
import support

RUNTIMES = ("cpython", "micropython")
PW = "fake-web-pass-1"


class Req:
    def __init__(self, headers=None, cookies=None, form=None, args=None, ctype=None):
        self.headers = headers or {}
        self.cookies = cookies or {}
        self.form = form or {}
        self.args = args or {}
        self.content_type = ctype


def _fresh():
    support.fresh_flash()
    config._cache.clear()
    auth._sessions.clear()
    auth._fails[0] = 0
    auth._fails[1] = None
    config.set("web_password", PW)


def test_same_compares_whole_strings():
    assert auth.same("abc", "abc") and auth.same(b"abc", "abc")
    assert not auth.same("abc", "abd") and not auth.same("abc", "abcd") and not auth.same("", "a")


def test_password_and_console_tokens():
    _fresh()
    assert auth.enabled()
    assert auth.token_ok(PW)
    assert not auth.token_ok("fake-web-pass-2") and not auth.token_ok("") and not auth.token_ok(None)
    t = auth.new_token()
    assert auth.token_ok(t) and t not in config.get("web_tokens")  # only its hash is kept
    assert config.masked("web_tokens").startswith("****")
    for _ in range(4):  # the oldest of 4 goes
        auth.new_token()
    assert not auth.token_ok(t)
    t = auth.new_token()
    config.reset("web_password")
    assert not auth.enabled() and not auth.token_ok(PW)
    assert not auth.token_ok(t)  # no password, no gateway: the console's tokens stop too


def test_bearer_header():
    _fresh()
    assert auth.bearer_ok(Req({"Authorization": "Bearer " + PW}))
    assert auth.bearer_ok(Req({"Authorization": "bearer  " + PW}))
    assert not auth.bearer_ok(Req({"Authorization": "Bearer nope-nope"}))
    assert not auth.bearer_ok(Req({"Authorization": "Basic " + PW}))
    assert not auth.bearer_ok(Req())


def test_login_session_cookie_and_csrf():
    _fresh()
    assert auth.login("wrong-password") is None
    sid, csrf = auth.login(PW)
    c = auth.cookie(sid)
    assert c.startswith("mimi_session=" + sid + ";")
    assert "HttpOnly" in c and "SameSite=Strict" in c and "Path=/" in c
    good = {"mimi_session": sid}
    assert auth.session_ok(Req(cookies=good))
    assert not auth.session_ok(Req(cookies={"mimi_session": "0" * 32})) and not auth.session_ok(Req())
    form = "application/x-www-form-urlencoded"
    host = {"Host": "mimi.local", "Origin": "http://mimi.local"}
    assert auth.csrf_ok(Req(host, good, {"csrf": csrf}, ctype=form))
    assert auth.csrf_ok(Req({"X-CSRF-Token": csrf, "Host": "mimi.local"}, good))
    assert not auth.csrf_ok(Req(host, good, {"csrf": "x" + csrf[1:]}, ctype=form))
    assert not auth.csrf_ok(Req(host, good, ctype=form))  # no token
    assert not auth.csrf_ok(Req(host, {}, {"csrf": csrf}, ctype=form))  # no session
    evil = {"Host": "mimi.local", "Origin": "http://evil.example"}
    assert not auth.csrf_ok(Req(evil, good, {"csrf": csrf}, ctype=form))
    # the WebSocket: the cookie from our own pages (any port), or ?token=
    assert auth.ws_ok(Req({"Host": "mimi.local:18789", "Origin": "http://mimi.local"}, good))
    assert not auth.ws_ok(Req(evil, good))
    assert auth.ws_ok(Req(evil, args={"token": PW}))
    assert not auth.ws_ok(Req(args={"token": "nope"}))
    auth.logout(Req(cookies=good))
    assert not auth.session_ok(Req(cookies=good))


def test_wrong_passwords_are_rate_limited_and_a_good_one_clears_it():
    _fresh()
    for _ in range(3):
        assert auth.login_wait_s() == 0
        assert auth.login("wrong-password") is None
    assert auth.login_wait_s() == 1
    auth.login("wrong-password")
    assert auth.login_wait_s() == 2  # doubling
    for _ in range(20):
        auth.login("wrong-password")
    assert auth.login_wait_s() == 300  # capped
    auth._fails[1][0] -= 301000  # as if 301 s went by
    assert auth.login_wait_s() == 0
    assert auth.login(PW) is not None
    assert auth._fails[0] == 0


def test_sessions_are_capped_and_a_new_password_ends_them():
    _fresh()
    sids = [auth.login(PW)[0] for _ in range(5)]
    assert len(auth._sessions) == 4
    assert sids[-1] in auth._sessions
    auth.set_password("another-fake-pass")
    assert not auth._sessions
    e = support.raises(ValueError, auth.set_password, "short")
    assert "8 characters" in str(e)
    support.raises(ValueError, auth.set_password, "has a space")


def test_first_start_makes_a_password_once():
    support.fresh_flash()
    config._cache.clear()
    shown = []
    pw = auth.first_start(shown.append)
    assert pw and len(pw) >= 12 and config.get("web_password") == pw
    assert len(shown) == 1 and pw in shown[0]
    config.reset("web_password")  # turned off by the owner: it stays off
    assert auth.first_start(shown.append) is None and not auth.enabled() and len(shown) == 1
