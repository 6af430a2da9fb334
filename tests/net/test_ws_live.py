"""The WebSocket client (``mimi.net.ws``) against the ``websockets`` package's server and a
raw server, under CPython and under MicroPython (the client half is ``cases_ws_live.py``).
What the client sent back to the raw server (pongs, close codes) is checked here."""
import os
import time

import pytest

import certgen
import mpcase
from wsservers import RawWs, RealWs, frame

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "cases_ws_live.py")

RAW = {
    "/fragping": frame(1, b"ab", fin=False) + frame(9, b"p") + frame(0, b"cd"),
    "/bigfrag": frame(1, b"a" * 40, fin=False) + frame(0, b"b" * 40, fin=False) + frame(0, b"c" * 40) + frame(1, b"ok"),
    "/masked": frame(2, b"xx", mask=b"abcd"),
    "/badutf8": frame(1, b"\xff\xfe"),
    "/badclose": frame(8, (999).to_bytes(2, "big")),
    "/close1005": frame(8),
    "/vanish": frame(1, b"hi"),
    "/refuse": lambda acc: b"HTTP/1.1 403 Forbidden\r\nhandshake-status: 403\r\nhandshake-msg: no ticket\r\n"
                           b"Content-Length: 0\r\n\r\n",
    "/badaccept": lambda acc: b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              b"Sec-WebSocket-Accept: AAAA\r\n\r\n",
}

# What the client must have sent to the raw server: (path, the (op, payload) it ends with).
SENT = {
    "test_a_ping_between_fragments_is_answered_and_the_message_joined": ("/fragping", (10, b"p")),
    "test_a_masked_frame_from_the_server_is_a_protocol_error": ("/masked", (8, (1002).to_bytes(2, "big"))),
    "test_text_that_is_not_utf8_closes_with_1007": ("/badutf8", (8, (1007).to_bytes(2, "big"))),
}


@pytest.fixture(scope="module")
def servers():
    c = certgen.make()
    real, tls, raw = RealWs().start(), RealWs(tls=c).start(), RawWs(RAW).start()
    env = {"MIMI_T_WS": real.url, "MIMI_T_WSS": tls.url, "MIMI_T_CA": c["ca"], "MIMI_T_RAW": raw.url,
           "MIMI_T_BUNDLE": os.path.join(ROOT, "spiffs_seed", "certs", "ca.pem")}
    yield env, raw
    real.stop()
    tls.stop()
    raw.stop()


def _check_sent(name, raw):
    if name not in SENT:
        return
    path, want = SENT[name]
    t0 = time.monotonic()
    while time.monotonic() - t0 < 4:
        frames = raw.got.get(path) or []
        if any((op, p) == want for _, op, p, _ in frames):
            break
        time.sleep(0.05)
    frames = raw.got.pop(path, [])
    assert any((op, p) == want for _, op, p, _ in frames), frames
    assert all(masked for _, _, _, masked in frames), frames  # every client frame masked


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, servers, monkeypatch):
    env, raw = servers
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    mpcase.run_cpython(CASES, name)
    _check_sent(name, raw)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, servers):
    env, raw = servers
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out
    _check_sent(name, raw)
