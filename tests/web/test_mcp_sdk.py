"""The MCP endpoint as a desktop agent sees it: the official ``mcp`` Python SDK (2.x, its
streamable HTTP client) against ``/mcp`` served by microdot with the board's tools, under
CPython (the app in a thread with its own asyncio loop) and under the ``micropython``
unix port (the board's runtime, in a process of its own). Issue 18, part 4.

The SDK connects twice: ``mode="legacy"`` (the initialize handshake as every client
before 2026 does it) and ``mode="auto"`` (it first probes ``server/discover`` of the
2026 stateless protocol; the board answers "no session", and it falls back).
"""
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "web"))

import mcp_board  # noqa: E402
from host_sim import hostenv  # noqa: E402
from ports import free_port as _free_port  # noqa: E402

# What the board's registered tools offer over MCP, in the registry's order: no file
# writes, no send_message.
OFFERED = ["read_file", "list_dir", "read_section", "search_files", "memory_search", "get_current_time",
           "cron_add", "cron_list", "cron_remove", "gpio_write", "gpio_read", "gpio_read_all", "gpio_pwm",
           "gpio_rgb", "hardware_docs"]
CLIENT_INFO = {"name": "raw-http-test", "version": "1"}


def _wait_port(port, proc=None, timeout_s=30):
    end = time.time() + timeout_s
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("the server ended: " + proc.stdout.read() + proc.stderr.read())
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("no server on port %d" % port)


@pytest.fixture
def cpython_board():
    """The app under CPython: ``(url, mcp.Server)``; stopped after the test."""
    app, server = mcp_board.make_app()
    port = _free_port()
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_until_complete,
                         args=(app.start_server(host="127.0.0.1", port=port),), daemon=True)
    t.start()
    _wait_port(port)
    yield "http://127.0.0.1:%d/mcp" % port, server
    loop.call_soon_threadsafe(app.shutdown)
    t.join(10)
    loop.close()


@pytest.fixture
def micropython_board():
    """The app under the micropython command: its URL; the process is killed after."""
    exe = hostenv.micropython_exe()
    assert exe, hostenv.micropython_missing()
    port = _free_port()
    env = dict(os.environ)
    env["MICROPYPATH"] = os.pathsep.join((hostenv.STUBS, hostenv.FIRMWARE, hostenv.LIB, TESTS, ".frozen"))
    env["MIMI_FLASH"] = mcp_board.support.tmpdir("mcp-mp-flash")
    env["MCP_PORT"] = str(port)
    p = subprocess.Popen([exe, "-X", "heapsize=2M", os.path.join(TESTS, "web", "mcp_board.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=os.path.dirname(TESTS))
    try:
        _wait_port(port, p)
        yield "http://127.0.0.1:%d/mcp" % port
    finally:
        p.kill()
        p.wait(10)


def _client(url, token=mcp_board.TOKEN, mode="legacy"):
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + token}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


async def _session(url, mode):
    """What a desktop agent does: connect, list, call, call badly. Returns what it saw."""
    http, client = _client(url, mode=mode)
    seen = {}
    async with http:
        async with client:
            seen["version"] = client.session.protocol_version
            seen["server"] = client.session.initialize_result.server_info.name
            tools = (await client.list_tools()).tools
            seen["tools"] = [t.name for t in tools]
            seen["schemas"] = {t.name: t.input_schema for t in tools}
            r = await client.call_tool("get_current_time", {})
            seen["time"] = (r.is_error, r.content[0].text)
            r = await client.call_tool("gpio_write", {"pin": "porch light", "level": 1})
            seen["write"] = (r.is_error, r.content[0].text)
            r = await client.call_tool("gpio_read", {"pin": 4})
            seen["read"] = (r.is_error, r.content[0].text)
            r = await client.call_tool("memory_search", {"query": "tea"})
            seen["memory"] = (r.is_error, r.content[0].text)
            r = await client.call_tool("read_file", {"path": "/data/nothing-here.md"})
            seen["missing"] = (r.is_error, r.content[0].text)
            errors = []
            for name, args in (("write_file", {"path": "/data/x.md", "content": "x"}),
                               ("send_message", {"text": "hi"}), ("no_such_tool", {}),
                               ("gpio_write", {"pin": 4}), ("gpio_write", {"pin": 4, "level": "high"}),
                               ("cron_add", {"kind": "daily", "hhmm": "07:00", "text": "x", "chat_id": "999"})):
                try:
                    r = await client.call_tool(name, args)
                    errors.append(("result", r.is_error, r.content[0].text if r.content else ""))
                except MCPError as e:
                    errors.append(("error", e.error.code, e.error.message))
            seen["errors"] = errors
            r = await client.call_tool("cron_add", {"kind": "daily", "hhmm": "07:00", "text": "water the plants"})
            seen["cron_add"] = (r.is_error, r.content[0].text)
            r = await client.call_tool("cron_list", {})
            seen["cron_list"] = (r.is_error, r.content[0].text)
    return seen


def _check(seen):
    assert seen["version"] == "2025-06-18" and seen["server"] == "mimi"
    assert seen["tools"] == OFFERED, seen["tools"]
    assert "chat_id" not in seen["schemas"]["cron_add"]["properties"]
    assert "text" in seen["schemas"]["cron_add"]["properties"]
    assert seen["schemas"]["gpio_write"]["required"] == ["pin", "level"]
    err, text = seen["time"]
    assert not err and "unix " in text
    assert seen["write"] == (False, "GPIO4 (porch_light): output, level 1"), seen["write"]
    assert seen["read"] == (False, "GPIO4 (porch_light): output, level 1"), seen["read"]
    err, text = seen["memory"]
    assert not err and "the owner likes tea" in text and "porch" in text  # lines around the match
    err, text = seen["missing"]
    assert err and "nothing-here.md" in text  # a tool that ran and failed: a result, isError
    codes = [e[:2] for e in seen["errors"]]
    assert codes == [("error", -32602)] * 6, seen["errors"]
    msgs = [e[2] for e in seen["errors"]]
    assert "unknown tool: write_file" in msgs[0] and "unknown tool: send_message" in msgs[1]
    assert "unknown tool: no_such_tool" in msgs[2]
    assert "missing required argument 'level'" in msgs[3]
    assert "'level' must be integer, got string" in msgs[4]
    assert "'chat_id' is not offered over MCP" in msgs[5]
    err, text = seen["cron_add"]
    assert not err and text.startswith("added job ") and "daily at 07:00" in text, text
    err, text = seen["cron_list"]
    assert not err and "to telegram " + mcp_board.OWNER + ": water the plants" in text, text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_lists_calls_and_gets_errors_cpython(cpython_board, mode):
    url, server = cpython_board
    seen = asyncio.run(_session(url, mode))
    _check(seen)
    assert server.sessions == {}  # the SDK's DELETE on leaving ended its session
    import machine

    assert machine.PINS[4]["mode"] == machine.Pin.OUT and machine.PINS[4]["value"] == 1  # the pin stand-in


def test_sdk_against_the_micropython_runtime(micropython_board):
    _check(asyncio.run(_session(micropython_board, "auto")))
    _http_rules(micropython_board)


def _http_rules(url):
    """No token, a wrong one, another site's page, GET, a body too big: refused."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as h:
        r = h.post(url, json=init, headers=accept)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        r = h.post(url, json=init, headers=dict(accept, Authorization="Bearer wrong-made-up-token"))
        assert r.status_code == 401
        good = dict(accept, Authorization="Bearer " + mcp_board.TOKEN)
        r = h.post(url, json=init, headers=dict(good, Origin="http://evil.example"))
        assert r.status_code == 403
        r = h.post(url, json=init, headers=good)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        sid = r.headers["mcp-session-id"]
        assert r.json()["result"]["protocolVersion"] == "2025-06-18"
        assert h.get(url, headers=dict(good, **{"Mcp-Session-Id": sid})).status_code == 405
        big = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x" * 9000}}
        assert h.post(url, json=big, headers=dict(good, **{"Mcp-Session-Id": sid})).status_code == 413
        r = h.post(url, content=b"{not json", headers=dict(good, **{"Mcp-Session-Id": sid,
                                                                     "Content-Type": "application/json"}))
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        assert h.delete(url, headers=dict(good, **{"Mcp-Session-Id": sid})).status_code == 200
        r = h.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"},
                   headers=dict(good, **{"Mcp-Session-Id": sid}))
        assert r.status_code == 404


def test_http_rules_cpython(cpython_board):
    _http_rules(cpython_board[0])


def test_a_body_microdot_left_in_the_stream_is_read(cpython_board, monkeypatch):
    # The web server may keep microdot's in-memory body smaller than an MCP request
    # (Request.max_body_length): the route then reads the body from the stream.
    import microdot

    monkeypatch.setattr(microdot.Request, "max_body_length", 64)
    url, _ = cpython_board
    good = {"Accept": "application/json, text/event-stream", "Authorization": "Bearer " + mcp_board.TOKEN}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    with httpx2.Client(timeout=30) as h:
        r = h.post(url, json=init, headers=good)
        assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == "2025-03-26"
        good["Mcp-Session-Id"] = r.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_files", "arguments": {"query": "memory " * 100}}}
        r = h.post(url, json=call, headers=good)
        assert r.status_code == 200 and r.json()["result"]["isError"] is False, r.text


def test_calls_beside_the_agent_threads_tools(cpython_board):
    # An MCP client drives GPIO4 while another thread (as the agent's would) drives
    # GPIO5 and reads every pin through the same registry: nothing fails, both end right.
    from mimi.tools import registry

    url, _ = cpython_board
    failures = []
    ctx = {"channel": "telegram", "chat_id": mcp_board.OWNER, "session": "tg_" + mcp_board.OWNER, "bus": None}

    def agent():
        for i in range(150):
            for name, args in (("gpio_write", {"pin": 5, "level": i % 2}), ("gpio_read_all", {})):
                text, err = registry.execute(name, args, ctx)
                if err:
                    failures.append(text)

    async def desktop():
        http, client = _client(url)
        async with http, client:
            for i in range(40):
                r = await client.call_tool("gpio_write", {"pin": 4, "level": i % 2})
                r2 = await client.call_tool("gpio_read_all", {})
                if r.is_error or r2.is_error:
                    failures.append(r.content[0].text + r2.content[0].text)
            return (await client.call_tool("gpio_read_all", {})).content[0].text

    t = threading.Thread(target=agent)
    t.start()
    last = asyncio.run(desktop())
    t.join(60)
    assert failures == []
    import machine

    assert machine.PINS[4]["value"] == 1 and machine.PINS[5]["value"] == 1
    assert "GPIO4 (porch_light): output, level 1" in last and "GPIO5: output, level " in last


async def _on_the_board(url, token):
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + token}, timeout=30)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            r = await client.call_tool("get_current_time", {})
            return names, r.is_error, r.content[0].text


def test_the_board_s_web_app_serves_mcp_with_its_password(web_board):
    # The whole board (the web thread of host_sim, both runtimes): /mcp is on the web
    # port, behind the web password as a bearer token; a wrong one gets 401.
    from webboard import PASSWORD

    url = web_board.web_url.rstrip("/") + "/mcp"
    names, is_error, text = asyncio.run(_on_the_board(url, PASSWORD))
    assert "get_current_time" in names and "rule_add" in names and "sensor_read" in names
    assert "write_file" not in names and "send_message" not in names
    assert not is_error and any(ch.isdigit() for ch in text)
    r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Authorization": "Bearer not-the-password",
                             "Accept": "application/json, text/event-stream"}, timeout=30)
    assert r.status_code == 401
