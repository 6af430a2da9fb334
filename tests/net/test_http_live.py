"""The HTTP client against live loopback servers, under CPython and under MicroPython.

Servers can only run in this (CPython) process, so each client case in
``cases_http_live.py`` runs twice: in process, and in a ``micropython`` subprocess
(``mpcase``) pointed at the same servers. This is how the TLS proof runs under
MicroPython: a certificate from a CA not in the shipped bundle is refused; with its CA
added it is accepted.
"""
import os
import socket
import threading

import pytest

import certgen
import mpcase
from rawserver import RawServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "cases_http_live.py")


@pytest.fixture(scope="module")
def env():
    c = certgen.make()
    future = certgen.make(os.path.join(c["dir"], "f") if os.makedirs(os.path.join(c["dir"], "f")) is None else None,
                          not_before_days=2)
    servers = [RawServer().start(), RawServer(tls=c).start(), RawServer(tls=future).start()]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    e = {"MIMI_T_HTTP": servers[0].url, "MIMI_T_HTTPS": servers[1].url, "MIMI_T_FUTURE": servers[2].url,
         "MIMI_T_CA": c["ca"], "MIMI_T_BUNDLE": os.path.join(ROOT, "spiffs_seed", "certs", "ca.pem"),
         "MIMI_T_DEAD": "http://127.0.0.1:%d" % dead}
    # The future server must be trusted by its own CA for the date check to be what fails.
    e["MIMI_T_CA_FUTURE"] = future["ca"]
    rude = socket.socket()  # answers a TLS hello with plain HTTP at once, then closes
    rude.bind(("127.0.0.1", 0))
    rude.listen(8)
    e["MIMI_T_RUDE"] = "https://127.0.0.1:%d" % rude.getsockname()[1]

    def answer():
        while True:
            try:
                c, _ = rude.accept()
            except OSError:
                return
            c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            c.close()

    threading.Thread(target=answer, daemon=True).start()
    yield e
    rude.close()
    for srv in servers:
        srv.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if name == "test_tls_checks_validity_dates":
        monkeypatch.setenv("MIMI_T_CA", env["MIMI_T_CA_FUTURE"])
    mpcase.run_cpython(CASES, name)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    e = dict(env)
    if name == "test_tls_checks_validity_dates":
        e["MIMI_T_CA"] = env["MIMI_T_CA_FUTURE"]
    ok, out = mpcase.run(CASES, name, e)
    assert ok, out
