"""Client half of the proxy tests (``test_proxy.py`` runs each function under CPython and
under MicroPython) against real proxies it started: tinyproxy (HTTP CONNECT) and
microsocks (SOCKS5), each open and with a user and password. Environment:
MIMI_T_PROXIES (space-separated working proxy URLs, credentials included),
MIMI_T_TP_AUTH / MIMI_T_MS_AUTH (the proxies with authentication, as URLs with their
credentials), MIMI_T_PW (their password), MIMI_T_TP_OPEN (tinyproxy without
authentication, which allows only the ports of MIMI_T_KA, MIMI_T_KAS and MIMI_T_RAW),
MIMI_T_DEAD_PORT (nothing listens there), MIMI_T_BUNDLE (the shipped roots), MIMI_T_KA, MIMI_T_KA2, MIMI_T_KAS (keep-alive
servers, http and https), MIMI_T_CA (their CA), MIMI_T_RAW (the scripted server), MIMI_T_SEARCH (the fake Brave), MIMI_T_WSS (the websockets package's server, TLS).
"""
import os

from mimi import config, seam
from mimi.net import certs, http
import support


def _env(name):
    v = os.getenv(name)
    assert v, name + " is not set"
    return v


def _through(proxy, ca="MIMI_T_CA"):
    root = support.fresh_flash()
    support.write(root + "/data/certs/ca.pem", support.read(_env(ca)))
    certs.reset()
    config.set("proxy", proxy)
    config.set("no_proxy", "none")  # the test servers are on loopback: through the proxy too


def _conn_of(url, keep):
    r = http.request("GET", url, buf=bytearray(64), want=("x-conn",), keep=keep)
    assert r.status == 200 and bytes(r.body) == b"ok", (r.status, bytes(r.body))
    return int(r.headers["x-conn"])


def _err(url, exc=OSError):
    e = support.raises(exc, http.request, "GET", url, buf=bytearray(64))
    msg = str(e)
    assert _env("MIMI_T_PW") not in msg, msg  # never the password
    return msg


def test_plain_and_tls_requests_go_through_each_proxy_and_its_tunnel_is_kept():
    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        k = http.Keep()
        a = _conn_of(_env("MIMI_T_KA") + "/ok", k)
        assert _conn_of(_env("MIMI_T_KA") + "/chunked", k) == a, p  # one tunnel, kept
        b = _conn_of(_env("MIMI_T_KAS") + "/ok", k)  # TLS end to end, localhost's certificate
        assert _conn_of(_env("MIMI_T_KAS") + "/ok", k) == b, p
        k.close()


def test_tls_through_the_tunnel_checks_the_real_host_and_its_certificate():
    kas = _env("MIMI_T_KAS")
    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        msg = _err(kas.replace("localhost", "127.0.0.1") + "/ok", seam.TLSError)  # the name is localhost
        assert "127.0.0.1" in msg, msg
        _through(p, "MIMI_T_BUNDLE")  # the shipped roots only: the test CA is not among them
        _err(kas + "/ok", seam.TLSError)


def test_errors_name_the_proxy_and_what_failed():
    ka = _env("MIMI_T_KA") + "/ok"
    dead = int(_env("MIMI_T_DEAD_PORT"))
    _through("http://u:%s@127.0.0.1:%d" % (_env("MIMI_T_PW"), dead))
    msg = _err(ka)
    assert msg.startswith("proxy 127.0.0.1:%d unreachable" % dead), msg
    for name in ("MIMI_T_TP_AUTH", "MIMI_T_MS_AUTH"):
        good = _env(name)
        port = good.rsplit(":", 1)[1]
        _through(good.replace(_env("MIMI_T_PW"), "wrong-" + _env("MIMI_T_PW")))
        msg = _err(ka)
        assert msg.startswith("proxy 127.0.0.1:%s refused the user name and password" % port), msg
        if name == "MIMI_T_TP_AUTH":
            assert "(401 Unauthorized)" in msg, msg  # tinyproxy's answer to wrong credentials
        _through(good.split("//")[0] + "//127.0.0.1:" + port)  # no credentials for a proxy that wants them
        msg = _err(ka)
        assert "needs a user name and password" in msg, msg
        if name == "MIMI_T_TP_AUTH":
            assert "(407 Proxy Authentication Required)" in msg, msg
    _through(_env("MIMI_T_TP_OPEN"))
    port = _env("MIMI_T_TP_OPEN").rsplit(":", 1)[1]
    ka2 = _env("MIMI_T_KA2")
    msg = _err(ka2 + "/ok")  # a port tinyproxy does not allow
    assert msg.startswith("proxy 127.0.0.1:%s refused a tunnel to localhost:%s (403" % (port, ka2.rsplit(":", 1)[1])), msg
    _through(_env("MIMI_T_MS_AUTH"))
    msg = _err("http://127.0.0.1:%d/ok" % dead)
    assert "refused a tunnel to 127.0.0.1:%d (SOCKS5: connection refused)" % dead in msg, msg


def test_a_tunnel_closed_mid_request_says_so():
    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        msg = _err(_env("MIMI_T_RAW") + "/short")  # 9 of 50 bytes, then the server closes
        assert msg.startswith("connection closed early (the tunnel through proxy 127.0.0.1:"), msg


def test_no_proxy_keeps_local_addresses_direct():
    ka = _env("MIMI_T_KA") + "/ok"
    dead = int(_env("MIMI_T_DEAD_PORT"))
    _through("socks5://127.0.0.1:%d" % dead)
    for rule in ("local", "localhost", "example.org,LOCALHOST", "*"):
        config.set("no_proxy", rule)
        assert _conn_of(ka, None) > 0, rule
    config.set("no_proxy", "127.0.0.0/8")
    assert _conn_of(ka.replace("localhost", "127.0.0.1"), None) > 0
    for rule in ("none", "", "10.0.0.0/8", "example.org"):
        config.set("no_proxy", rule)
        assert "unreachable" in _err(ka), rule
    config.reset("no_proxy")  # the default: local
    assert _conn_of(ka, None) > 0


def test_the_llm_says_what_the_proxy_refused():
    from mimi.llm import LLMError, common

    real, common._sleep_ms = common._sleep_ms, lambda ms: None  # the retries' waits
    try:
        _through(_env("MIMI_T_TP_AUTH").replace(_env("MIMI_T_PW"), "wrong"))
        p = common.Provider("openai", "openai", _env("MIMI_T_KA") + "/v1", "sk-FAKE-0123456789", "gpt-test")
        e = support.raises(LLMError, p.chat, "s", [{"role": "user", "content": "hi", "ts": 1}])
    finally:
        common._sleep_ms = real
    port = _env("MIMI_T_TP_AUTH").rsplit(":", 1)[1]
    assert e.user_message == "proxy 127.0.0.1:%s refused the user name and password (401 Unauthorized)" % port, \
        e.user_message


def test_web_search_goes_through_the_proxy():
    from mimi.tools import registry, web

    for p in (_env("MIMI_T_MS_AUTH"), "socks5://127.0.0.1:%s" % _env("MIMI_T_DEAD_PORT")):
        _through(p)
        registry.clear()
        web.register_all()
        config.WEB_BRAVE_URL = _env("MIMI_T_SEARCH") + "/res/v1/web/search"
        config.set("search_key", "search-FAKE")
        text, err = registry.execute("web_search", {"query": "micropython"}, {})
        if p.endswith(":" + _env("MIMI_T_DEAD_PORT")):
            assert err and "proxy 127.0.0.1:%s unreachable" % _env("MIMI_T_DEAD_PORT") in text, text
        else:
            assert not err and text.startswith("1. MicroPython\n"), text


def test_a_websocket_over_tls_goes_through_each_proxy():
    from mimi.net import ws

    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        s = ws.connect(_env("MIMI_T_WSS") + "/echo", bytearray(4096))  # Feishu's long connection's way
        s.send(b"through " + p.split("://")[0].encode())
        op, got = s.recv(5000)
        assert bytes(got) == b"through " + p.split("://")[0].encode(), p
        s.close()


def test_doctor_tries_its_handshakes_through_the_proxy():
    from mimi import doctor

    kas = _env("MIMI_T_KAS")  # https://localhost:PORT
    port = int(kas.rsplit(":", 1)[1])
    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        level, text = doctor._connect("LLM", "localhost", port, True)
        assert level == "OK" and "handshake in" in text and "(through proxy 127.0.0.1:" in text, (p, text)
        assert _env("MIMI_T_PW") not in text
    _through("socks5://127.0.0.1:%s" % _env("MIMI_T_DEAD_PORT"))
    level, text = doctor._connect("LLM", "localhost", port, True)
    assert level == "FIX" and "unreachable" in text, text


def test_doctor_leaves_the_names_to_the_proxy():
    from mimi import doctor

    for p in _env("MIMI_T_PROXIES").split():
        _through(p)
        config.set("tg_api_base", _env("MIMI_T_KAS"))
        lines = [t for lv, t in doctor._servers() if t.startswith("DNS ")]
        assert lines and all("resolved by the proxy " in t and "127.0.0.1:" in t for t in lines), (p, lines)
        assert _env("MIMI_T_PW") not in " ".join(lines)
