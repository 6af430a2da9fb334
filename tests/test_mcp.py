"""The MCP protocol module (mimi.mcp) with a tools object of its own: sessions, version
negotiation, JSON-RPC errors, batches, the transport's HTTP rules (issue 18; both runtimes).
The official SDK against the served endpoint: tests/web/test_mcp_sdk.py."""
import json

from mimi import mcp

RUNTIMES = ("cpython", "micropython")

POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Tools:
    """Two tools: ``echo`` (``text`` required, a string) and ``fail`` (runs, fails)."""

    def __init__(self):
        self.calls = []

    def list(self):
        return [("echo", "Say it back.", {"type": "object", "properties": {"text": {"type": "string"}},
                                          "required": ["text"]}),
                ("fail", "Always fails.", {"type": "object", "properties": {}})]

    def call(self, name, args):
        self.calls.append((name, args))
        if name == "echo":
            if not isinstance(args.get("text"), str):
                raise ValueError("argument 'text' must be string")
            return ("said: " + args["text"], False)
        if name == "fail":
            return ("Error: fail: it broke", True)
        raise KeyError(name)


def _post(srv, msg, sid=None, headers=None, raw=None):
    h = dict(POST_HEADERS)
    if sid:
        h["Mcp-Session-Id"] = sid
    h.update(headers or {})
    status, out_h, body = srv.handle("POST", h, raw if raw is not None else json.dumps(msg).encode())
    return status, out_h, (json.loads(body) if body else None)


def _open(srv, version="2025-06-18"):
    status, h, r = _post(srv, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": version, "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}}})
    assert status == 200 and h["Content-Type"] == "application/json", (status, h)
    sid = h["Mcp-Session-Id"]
    assert len(sid) == 32 and all(c in "0123456789abcdef" for c in sid)
    s, _, body = _post(srv, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    assert s == 202 and body is None
    return sid, r


def _server(tools=None):
    return mcp.Server(tools or Tools(), "mimi", "9.9", "a hint")


def test_initialize_negotiates_the_version_and_opens_a_session():
    srv = _server()
    sid, r = _open(srv)
    assert r["id"] == 1 and r["result"]["protocolVersion"] == "2025-06-18"
    assert r["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert r["result"]["serverInfo"] == {"name": "mimi", "version": "9.9"}
    assert r["result"]["instructions"] == "a hint"
    sid2, r = _open(srv, "2025-03-26")  # an older one served is kept
    assert r["result"]["protocolVersion"] == "2025-03-26" and sid2 != sid
    _, r = _open(srv, "2099-01-01")  # one not served: the server's newest
    assert r["result"]["protocolVersion"] == "2025-06-18"
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {}})
    assert status == 200 and r["id"] == "a" and r["error"]["code"] == -32602
    status, _, r = _post(srv, {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "x"}})
    assert status == 400 and r["error"]["code"] == -32600  # a notification cannot open one


def test_a_session_is_required_and_ends_with_delete():
    srv = _server()
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert status == 400 and r["error"]["code"] == -32600 and "Mcp-Session-Id" in r["error"]["message"]
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, "0" * 32)
    assert status == 404
    sid, _ = _open(srv)
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid)
    assert (status, r) == (200, {"jsonrpc": "2.0", "id": 3, "result": {}})
    assert srv.handle("DELETE", {"Mcp-Session-Id": sid}, b"")[0] == 200
    assert srv.handle("DELETE", {"Mcp-Session-Id": sid}, b"")[0] == 404
    assert srv.handle("DELETE", {}, b"")[0] == 400
    assert _post(srv, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, sid)[0] == 404
    status, h, body = srv.handle("GET", {"Accept": "text/event-stream"}, b"")
    assert status == 405 and h["Allow"] == "POST, DELETE" and body is None


def test_sessions_are_capped_and_the_least_used_goes():
    srv = _server()
    first, _ = _open(srv)
    second, _ = _open(srv)
    for _ in range(2):
        _open(srv)
    assert _post(srv, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, first)[0] == 200  # used: kept
    newest, _ = _open(srv)
    assert len(srv.sessions) == 4 and second not in srv.sessions
    assert first in srv.sessions and newest in srv.sessions
    assert _post(srv, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, second)[0] == 404


def test_tools_list_and_call():
    tools = Tools()
    srv = _server(tools)
    sid, _ = _open(srv)
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}, sid)
    assert status == 200 and [t["name"] for t in r["result"]["tools"]] == ["echo", "fail"]
    assert r["result"]["tools"][0]["inputSchema"]["required"] == ["text"]
    assert r["result"]["tools"][0]["description"] == "Say it back."
    status, _, r = _post(srv, {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": "héllo"}}}, sid)
    assert status == 200 and r["id"] == 6
    assert r["result"] == {"content": [{"type": "text", "text": "said: héllo"}], "isError": False}
    _, _, r = _post(srv, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "fail"}}, sid)
    assert r["result"]["isError"] is True and r["result"]["content"][0]["text"] == "Error: fail: it broke"
    assert tools.calls == [("echo", {"text": "héllo"}), ("fail", {})]


def test_bad_calls_are_jsonrpc_errors():
    tools = Tools()
    srv = _server(tools)
    sid, _ = _open(srv)

    def err(msg):
        status, _, r = _post(srv, msg, sid)
        return status, r["id"], r["error"]["code"], r["error"]["message"]

    call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call"}
    s, i, code, text = err(dict(call, params={"name": "nope", "arguments": {}}))
    assert (s, i, code) == (200, 8, -32602) and "unknown tool: nope" in text
    s, i, code, text = err(dict(call, params={"name": "echo", "arguments": {"text": 5}}))
    assert (s, code) == (200, -32602) and "invalid arguments for echo" in text and "'text'" in text
    assert err(dict(call, params={"name": "echo", "arguments": [1]}))[2] == -32602
    assert err(dict(call, params={"arguments": {}}))[2] == -32602
    assert err(dict(call, params=[1, 2]))[2] == -32602
    assert err({"jsonrpc": "2.0", "id": 9, "method": "resources/list"})[:3] == (200, 9, -32601)
    for bad in ({"id": 1, "method": "ping"}, {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": None, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"},
                {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, {"jsonrpc": "2.0", "id": 1, "method": 7},
                {"jsonrpc": "2.0", "id": 1}, [1][0], "ping"):
        s, i, code, _ = err(bad)
        assert (s, i, code) == (400, None, -32600), bad
    s, _, r = _post(srv, None, sid, raw=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert s == 400 and r["error"]["code"] == -32700 and r["id"] is None
    s, _, r = _post(srv, None, sid, raw=b"\xff\xfe")
    assert s == 400 and r["error"]["code"] == -32700
    s, _, r = _post(srv, None, sid, raw=b"[" * 3000 + b"]" * 3000)  # nested deep: no crash
    assert s == 400 and r["error"]["code"] in (-32700, -32600)
    assert [c[0] for c in tools.calls] == ["nope", "echo"]  # the tools object refused these two; no other got there
    s, _, body = _post(srv, {"jsonrpc": "2.0", "id": 3, "result": {}}, sid)  # the client answering
    assert (s, body) == (202, None)


def test_transport_rules():
    srv = _server()
    sid, _ = _open(srv)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    s, _, r = _post(srv, ping, sid, {"MCP-Protocol-Version": "2025-06-18"})
    assert s == 200 and r["result"] == {}
    s, _, r = _post(srv, ping, sid, {"MCP-Protocol-Version": "1999-01-01"})
    assert s == 400 and "1999-01-01" in r["error"]["message"]
    assert _post(srv, ping, sid, {"Content-Type": "text/plain"})[0] == 415
    assert _post(srv, ping, sid, {"Content-Type": "application/json; charset=utf-8"})[0] == 200
    assert _post(srv, ping, sid, {"Accept": "text/html"})[0] == 406
    assert _post(srv, ping, sid, {"Accept": "*/*"})[0] == 200
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * mcp.REQUEST_MAX_BYTES}}
    assert _post(srv, big, sid)[0] == 413


def test_batches_only_in_a_2025_03_26_session():
    tools = Tools()
    srv = _server(tools)
    new, _ = _open(srv)
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}},
             {"jsonrpc": "2.0", "id": "b", "method": "tools/call",
              "params": {"name": "echo", "arguments": {"text": "x"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "nope"}, 5,
             {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}]
    s, _, r = _post(srv, batch, new)
    assert s == 400 and r["error"]["code"] == -32600 and "2025-06-18" in r["error"]["message"]
    old, _ = _open(srv, "2025-03-26")
    s, _, r = _post(srv, batch, old)
    assert s == 200 and [x["id"] for x in r] == [1, "b", 3, None, 4]
    assert r[0]["result"] == {} and r[1]["result"]["content"][0]["text"] == "said: x"
    assert [x["error"]["code"] for x in r[2:]] == [-32601, -32600, -32600]
    s, _, body = _post(srv, [{"jsonrpc": "2.0", "method": "notifications/initialized"}], old)
    assert (s, body) == (202, None)
    assert _post(srv, [], old)[0] == 400


def test_origin_check():
    ok = mcp.origin_allowed
    assert ok(None, "192.168.1.20")  # a desktop agent: no Origin
    assert ok("http://192.168.1.20", "192.168.1.20")  # the board's own web page
    assert ok("http://192.168.1.20:8080", "192.168.1.20:8080")
    assert ok("http://mimi.local", "MIMI.local") and ok("http://localhost:5000", "localhost:5000")
    assert ok("http://[::1]:80", "[::1]:80")
    assert not ok("http://evil.example", "192.168.1.20")  # another site's page
    assert not ok("http://evil.example", "evil.example")  # DNS rebinding: its name in both
    assert not ok("http://192.168.1.20:81", "192.168.1.20")
    assert not ok("null", "192.168.1.20") and not ok("http://1.2.3.4", None)
    assert not ok("http://1.2.3.4.5", "1.2.3.4.5")
