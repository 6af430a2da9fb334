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
from host_sim.fakes.search import FakeSearch
from kaserver import KeepServer
from proxies import Proxy
from rawserver import RawServer
from wsservers import RealWs

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
    wss = RealWs(tls=c).start()
    search = FakeSearch().start()
    search.results = [("MicroPython", "https://micropython.org/", "Python for microcontrollers")]
    proxies = [Proxy.tinyproxy(), Proxy.tinyproxy(USER, PW), Proxy.microsocks(), Proxy.microsocks(USER, PW),
               Proxy.tinyproxy(connect_ports=(ka.port, kas.port, raw.port))]
    tp, tp_auth, ms, ms_auth, tp_open = proxies
    e = {"MIMI_T_PROXIES": " ".join(p.url for p in proxies[:4]), "MIMI_T_TP_AUTH": tp_auth.url,
         "MIMI_T_MS_AUTH": ms_auth.url, "MIMI_T_PW": PW, "MIMI_T_TP_OPEN": tp_open.url,
         "MIMI_T_DEAD_PORT": str(dead), "MIMI_T_KA": ka.url, "MIMI_T_KA2": ka2.url, "MIMI_T_KAS": kas.url,
         "MIMI_T_CA": c["ca"], "MIMI_T_RAW": raw.url, "MIMI_T_SEARCH": search.url, "MIMI_T_WSS": wss.url,
         "MIMI_T_BUNDLE": os.path.join(ROOT, "spiffs_seed", "certs", "ca.pem")}
    yield e
    for p in proxies:
        p.stop()
    for srv in (ka, ka2, kas, raw, search, wss):
        srv.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from mimi import config

    try:
        mpcase.run_cpython(CASES, name)
    finally:  # the settings live on in this process: later tests must not go through a proxy
        config.reset("proxy")
        config.reset("no_proxy")


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out


def _established_to(port):
    """TCP connections into ``port`` on this machine now (Linux's /proc/net/tcp, tcp6)."""
    n = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            if int(local.rsplit(":", 1)[1], 16) == port and state == "01":
                n += 1
    return n


@pytest.mark.parametrize("kind", ["tinyproxy", "microsocks"])
@pytest.mark.parametrize("runtime", ["cpython", "micropython"])
def test_bot_through_a_proxy(kind, runtime):
    """The bot as a user meets it, with every connection through a proxy with a password:
    Telegram's long poll and replies, the LLM with a tool call."""
    from host_sim.fakes.llm import Reply
    from host_sim.harness import Sim

    p = getattr(Proxy, kind)(USER, PW)
    sim = Sim(runtime=runtime, env={"MIMI_PROXY": p.url, "MIMI_NO_PROXY": "none"})
    try:
        sim.start()
        sim.llm.script(Reply.tools([("get_current_time", {})]), Reply.text("It is noon."))
        sim.send("what time is it?")
        assert sim.wait_texts(1) == ["It is noon."]
        assert len(sim.llm_requests()) == 2
        # The long poll waits on its tunnel now: through the proxy, not around it.
        assert _established_to(p.port) >= 1
        assert PW not in sim.log()
    finally:
        sim.stop()
        p.stop()
