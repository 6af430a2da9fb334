"""The proxy setting (``mimi.net.proxy``) against real proxies, under CPython and under
MicroPython (issue 15, items 1-5): tinyproxy for HTTP CONNECT and microsocks for SOCKS5,
each without and with a user name and password, started here (``proxies.py``; a missing
one fails, never skips). The client half is ``cases_proxy.py``; the bot end to end
through each proxy is ``test_bot_through_a_proxy``.
"""
import os
import socket

import pytest

import certgen
import mpcase
from kaserver import KeepServer
from proxies import Proxy
from rawserver import RawServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "cases_proxy.py")
USER, PW = "mimi", "Fake-proxy-pw-42"


@pytest.fixture(scope="module")
def env():
    c = certgen.make()
    ka, ka2, kas, raw = KeepServer().start(), KeepServer().start(), KeepServer(tls=c).start(), RawServer().start()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    proxies = [Proxy.tinyproxy(), Proxy.tinyproxy(USER, PW), Proxy.microsocks(), Proxy.microsocks(USER, PW),
               Proxy.tinyproxy(connect_ports=(ka.port, kas.port, raw.port))]
    tp, tp_auth, ms, ms_auth, tp_open = proxies
    e = {"MIMI_T_PROXIES": " ".join(p.url for p in proxies[:4]), "MIMI_T_TP_AUTH": tp_auth.url,
         "MIMI_T_MS_AUTH": ms_auth.url, "MIMI_T_PW": PW, "MIMI_T_TP_OPEN": tp_open.url,
         "MIMI_T_DEAD_PORT": str(dead), "MIMI_T_KA": ka.url, "MIMI_T_KA2": ka2.url, "MIMI_T_KAS": kas.url,
         "MIMI_T_CA": c["ca"], "MIMI_T_RAW": raw.url,
         "MIMI_T_BUNDLE": os.path.join(ROOT, "spiffs_seed", "certs", "ca.pem")}
    yield e
    for p in proxies:
        p.stop()
    for srv in (ka, ka2, kas, raw):
        srv.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    mpcase.run_cpython(CASES, name)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out
