"""Client half of the keep-alive tests (``test_http_keepalive.py`` runs each function under
CPython and under MicroPython) against ``kaserver.KeepServer``s: MIMI_T_KA, MIMI_T_KA2
(http), MIMI_T_KAS (https), MIMI_T_CA (its CA). Each answer names the server's connection
number (``x-conn``), so what shared a connection is seen from here.
"""
import os

from mimi import config, seam
from mimi.net import certs, http
import support

WANT = ("x-conn",)


def _url(path, var="MIMI_T_KA"):
    v = os.getenv(var)
    assert v, var + " is not set"
    return v + path


def _get(path, keep, var="MIMI_T_KA", **kw):
    r = http.request("GET", _url(path, var), buf=bytearray(64), want=WANT, keep=keep, **kw)
    assert r.status == 200, r.status
    return int(r.headers["x-conn"]), bytes(r.body)


def _count(path):
    r = http.request("GET", _url("/count?path=" + path), buf=bytearray(16))
    return int(bytes(r.body))


def _fresh():
    support.fresh_flash()
    config.set("no_proxy", "local")


def test_requests_with_one_keep_share_one_connection():
    _fresh()
    k = http.Keep()
    a, body = _get("/ok", k)
    assert body == b"ok" and k.held()
    assert _get("/chunked", k) == (a, b"ok")
    r = http.request("POST", _url("/ok"), {"Content-Type": "application/json"},
                     lambda w: (w("{\"a\": "), w("1}")), buf=bytearray(64), want=WANT, keep=k)
    assert int(r.headers["x-conn"]) == a
    # Without a Keep every request is its own connection (Connection: close).
    b, _ = _get("/ok", None)
    c, _ = _get("/ok", None)
    assert len({a, b, c}) == 3


def test_an_answer_that_ends_the_connection_is_not_kept():
    _fresh()
    k = http.Keep()
    for path in ("/close", "/http10", "/big"):
        r = http.request("GET", _url(path), buf=bytearray(10), want=WANT, keep=k)
        assert r.status == 200
        assert not k.held(), path
        if path == "/big":
            assert r.truncated
        a, _ = _get("/ok", k)
        assert a != int(r.headers["x-conn"]), path


def test_a_kept_connection_the_server_closed_is_replaced():
    _fresh()
    k = http.Keep()
    a, _ = _get("/hangup", k)  # answered, then closed by the server while idle
    seam.sleep_ms(100)
    b, _ = _get("/ok", k)
    assert b != a
    n = _count("/ok")
    c, _ = _get("/arm", k)  # the next request on it is read and never answered
    assert c == b
    d, body = _get("/ok", k)  # sent once more on a fresh connection
    assert d != c and body == b"ok"
    assert _count("/ok") == n + 2


def test_a_pending_request_on_a_closed_kept_connection_is_resent_in_ready():
    _fresh()
    k = http.Keep()
    a, _ = _get("/arm", k)
    p = http.start("GET", _url("/slow?ms=200"), buf=bytearray(64), want=WANT, keep=k)
    for _ in range(100):
        if p.ready(50):
            break
    r = p.finish()
    assert r.status == 200 and bytes(r.body) == b"ok"
    assert int(r.headers["x-conn"]) != a


def test_a_timeout_on_a_kept_connection_is_not_resent():
    _fresh()
    k = http.Keep()
    _get("/ok", k)
    n = _count("/slow")
    e = support.raises(http.NoAnswer, http.request, "GET", _url("/slow?ms=1500"), buf=bytearray(64),
                       keep=k, timeout_ms=300)
    assert e.args[0] == 110 and not k.held()
    assert _count("/slow") == n + 1


def test_sweep_closes_idle_connections_and_another_server_gets_its_own():
    _fresh()
    http.sweep(0)  # the connections earlier cases of this process kept (idle by now): not this case's
    k = http.Keep()
    a, _ = _get("/ok", k)
    assert http.sweep() == 0 and k.held()  # not idle long
    assert http.sweep(0) >= 1 and not k.held()
    b, _ = _get("/ok", k)
    assert b != a
    x, _ = _get("/ok", k, "MIMI_T_KA2")  # another server: the kept one is closed
    c, _ = _get("/ok", k)
    assert c != b


def test_a_kept_tls_connection_is_reused():
    support.write(support.fresh_flash() + "/data/certs/ca.pem", support.read(os.getenv("MIMI_T_CA")))
    config.set("no_proxy", "local")
    certs.reset()
    k = http.Keep()
    a, _ = _get("/ok", k, "MIMI_T_KAS")
    assert _get("/chunked", k, "MIMI_T_KAS") == (a, b"ok")
    b, _ = _get("/hangup", k, "MIMI_T_KAS")
    assert b == a
    seam.sleep_ms(100)
    c, _ = _get("/ok", k, "MIMI_T_KAS")
    assert c != a
    assert _get("/ok", k, "MIMI_T_KAS")[0] == c
