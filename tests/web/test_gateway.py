"""The LAN chat gateway with a real WebSocket client (the ``websockets`` package) and
MimiClaw's message shapes, on both runtimes (issue 16, item 3).

The board is the simulator with fakes (``conftest.web_board``); the agent's LLM is the
fake, so a reply and its tool call are what the test scripted.
"""
import asyncio
import json
import os

import pytest

websockets = pytest.importorskip("websockets")

from host_sim.fakes.llm import Reply  # noqa: E402

from webboard import PASSWORD, start_board  # noqa: E402


async def _connect(url, **kw):
    return await websockets.connect(url, open_timeout=10, max_size=2 ** 20, **kw)


async def _until(ws, kind, timeout_s=30):
    """The messages received up to and including the first of type ``kind``."""
    got = []
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), timeout_s))
        got.append(m)
        if m.get("type") == kind:
            return got


def _status(url):
    """The HTTP status a WebSocket handshake to ``url`` is refused with (0: accepted)."""
    async def go():
        try:
            ws = await _connect(url)
        except websockets.exceptions.InvalidStatus as e:
            return e.response.status_code
        await ws.close()
        return 0
    return asyncio.run(go())


def test_a_chat_round_trip_in_mimiclaws_shapes_with_a_tool_call(web_board):
    web_board.llm.script(Reply.tools([("get_current_time", {})]), Reply.text("It is noon, says the clock."))

    async def go():
        async with await _connect(web_board.gateway_url + "?token=" + PASSWORD) as ws:
            await ws.send(json.dumps({"type": "message", "content": "what time is it?", "chat_id": "kitchen"}))
            return await _until(ws, "done")
    got = asyncio.run(go())
    replies = [m for m in got if m["type"] == "response"]
    assert replies == [{"type": "response", "content": "It is noon, says the clock.", "chat_id": "kitchen"}]
    assert got[0] == {"type": "typing", "chat_id": "kitchen"}
    # the tool ran and its result went back to the model
    reqs = web_board.llm_requests()
    assert len(reqs) == 2
    assert "get_current_time" in json.dumps(reqs[1]["json"]["messages"])
    # the chat's own history, apart from every Telegram chat's
    hist = os.path.join(web_board.flash, "data", "sessions", "ws_kitchen.jsonl")
    with open(hist) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    assert lines[0]["content"] == "what time is it?"
    assert not [n for n in os.listdir(os.path.join(web_board.flash, "data", "sessions")) if n.startswith("tg_")]


def test_a_client_without_chat_id_gets_one_and_pings_are_answered(web_board):
    web_board.llm.script(Reply.text("hello there"))

    async def go():
        async with await _connect(web_board.gateway_url + "?token=" + PASSWORD) as ws:
            await ws.send(json.dumps({"type": "ping", "ts": 12345}))
            pong = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(json.dumps({"type": "message", "content": "hi"}))
            return pong, await _until(ws, "done")
    pong, got = asyncio.run(go())
    assert pong == {"type": "pong", "ts": 12345}
    r = [m for m in got if m["type"] == "response"][0]
    assert r["content"] == "hello there"
    assert r["chat_id"].startswith("ws_") and r["chat_id"][3:].isdigit()  # as MimiClaw's ws_<fd>


def test_bad_messages_get_a_clear_error_and_the_connection_stays(web_board):
    async def go():
        async with await _connect(web_board.gateway_url + "?token=" + PASSWORD) as ws:
            out = []
            for raw in ("not json", json.dumps([1, 2]), json.dumps({"type": "message"}),
                        json.dumps({"type": "message", "content": "x", "chat_id": "../tg_1001"})):
                await ws.send(raw)
                out.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            await ws.send(json.dumps({"type": "ping"}))
            out.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return out
    out = asyncio.run(go())
    assert [m["type"] for m in out] == ["error"] * 4 + ["pong"]
    assert "JSON" in out[0]["content"] and "letters, digits" in out[3]["content"]
    assert web_board.llm_requests() == []


def test_an_oversized_message_is_refused_and_closes(web_board):
    async def go():
        async with await _connect(web_board.gateway_url + "?token=" + PASSWORD) as ws:
            await ws.send(json.dumps({"type": "message", "content": "x" * 5000, "chat_id": "big"}))
            m = json.loads(await asyncio.wait_for(ws.recv(), 10))
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            return m
    m = asyncio.run(go())
    assert m["type"] == "error" and "4096" in m["content"]
    assert web_board.llm_requests() == []


def test_wrong_or_missing_credentials_are_refused(web_board):
    assert _status(web_board.gateway_url) == 401
    assert _status(web_board.gateway_url + "?token=wrong-password") == 401
    assert _status(web_board.gateway_url + "?token=" + PASSWORD) == 0


def test_at_most_four_clients(web_board):
    async def go():
        url = web_board.gateway_url + "?token=" + PASSWORD
        held = [await _connect(url) for _ in range(4)]
        try:
            with pytest.raises(websockets.exceptions.InvalidStatus) as e:
                await _connect(url)
            status = e.value.response.status_code
        finally:
            for ws in held:
                await ws.close()
        await asyncio.sleep(0.5)
        again = await _connect(url)  # a place is free again
        await again.close()
        return status
    assert asyncio.run(go()) == 503


def test_messages_past_the_rate_limit_are_refused(web_board):
    web_board.llm.script(*[Reply.text("ok %d" % i) for i in range(10)])

    async def go():
        async with await _connect(web_board.gateway_url + "?token=" + PASSWORD) as ws:
            for i in range(11):
                await ws.send(json.dumps({"type": "message", "content": "n %d" % i, "chat_id": "fast"}))
            errors, done = [], 0
            # every message ends in an error (busy, too fast) or a finished turn: wait for all
            while len(errors) + done < 11:
                m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if m["type"] == "error":
                    errors.append(m["content"])
                done += m["type"] == "done"
            return errors
    errors = asyncio.run(go())
    assert [e for e in errors if "too many messages" in e] == ["too many messages: at most 10 a minute"]


@pytest.mark.parametrize("runtime", ["cpython"])
def test_no_password_no_gateway(tmp_path, runtime):
    b = start_board(str(tmp_path), runtime, password=None)
    try:
        assert _status_refused(b.gateway_url) and _status_refused(b.web_url.replace("http", "ws") + "/ws")
        assert "[web]" not in b.log()
    finally:
        b.stop()


def test_a_taken_gateway_port_leaves_the_web_app_serving(tmp_path):
    # Another program on 18789 (here a listening socket on the board's gateway port): the
    # web app and its own chat socket (/ws) serve on; the console says why no gateway.
    import socket
    import urllib.request

    import webboard

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    real = webboard.free_port
    ports = iter([real(), taken.getsockname()[1]])
    webboard.free_port = lambda: next(ports)
    try:
        b = webboard.start_board(str(tmp_path), "cpython")
    finally:
        webboard.free_port = real
    try:
        with urllib.request.urlopen(b.web_url + "/login", timeout=10) as r:
            assert r.status == 200
        assert "gateway port %d" % b.gateway_port in b.log() and "serves without it" in b.log()
    finally:
        b.stop()
        taken.close()


def _status_refused(url):
    """True when nothing listens at ``url``'s port."""
    async def go():
        try:
            ws = await _connect(url)
        except OSError:
            return True
        await ws.close()
        return False
    return asyncio.run(go())


def test_idle_connections_cannot_hold_every_place(web_board):
    import socket
    import time
    import urllib.request

    idle = []
    for _ in range(8):  # _WEB_CONNS_MAX connections that never send a request
        s = socket.create_connection(("127.0.0.1", web_board.web_port), timeout=5)
        idle.append(s)
    time.sleep(0.5)
    extra = socket.create_connection(("127.0.0.1", web_board.web_port), timeout=5)
    extra.sendall(b"GET /login HTTP/1.0\r\n\r\n")
    try:  # one more is closed at once, unanswered (a reset: its request was left unread)
        assert extra.recv(100) == b""
    except ConnectionResetError:
        pass
    extra.close()
    t0 = time.time()
    for s in idle:  # each idle one is closed once its head is 10 s late (a 400 at most)
        s.settimeout(20)
        got = b""
        while True:
            chunk = s.recv(1000)
            if not chunk:
                break
            got += chunk
        assert got == b"" or got.startswith(b"HTTP/1.0 400"), got
    waited = time.time() - t0
    with urllib.request.urlopen(web_board.web_url + "/login", timeout=10) as r:
        assert r.status == 200
    assert 8 <= waited + 0.5 <= 20
    for s in idle:
        s.close()
