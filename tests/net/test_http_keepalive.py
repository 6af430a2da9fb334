"""HTTP/1.1 keep-alive (``http.Keep``) against live loopback servers, under CPython and
under MicroPython: one connection for many requests, plain and TLS; answers that end the
connection are not kept; a kept connection the server closed is replaced, the request
sent once more; a timeout is not resent; ``sweep`` closes idle ones (issue 12, item 4).
"""
import os

import pytest

import certgen
import mpcase
from kaserver import KeepServer

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_http_keepalive.py")


@pytest.fixture(scope="module")
def env():
    c = certgen.make()
    servers = [KeepServer().start(), KeepServer().start(), KeepServer(tls=c).start()]
    yield {"MIMI_T_KA": servers[0].url, "MIMI_T_KA2": servers[1].url, "MIMI_T_KAS": servers[2].url,
           "MIMI_T_CA": c["ca"]}
    for s in servers:
        s.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    mpcase.run_cpython(CASES, name)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out
