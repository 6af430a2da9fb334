"""The MCP server's protocol: the Model Context Protocol's JSON-RPC 2.0 messages over its
streamable HTTP transport, so a desktop agent can use the board's tools (issue 18).

Sources: https://modelcontextprotocol.io/specification/2025-06-18 (basic: JSON-RPC
messages; basic/lifecycle; basic/transports, "Streamable HTTP"; server/tools), and
2025-03-26, which a client may still ask for; https://www.jsonrpc.org/specification.

This module knows no HTTP library and no tool: ``Server(tools, ...)`` turns one HTTP
request (its method, headers, body bytes) into ``(status, headers, body bytes or None)``.
``mimi.web.mcp_route`` serves it at ``/mcp`` on the LAN web server (the bearer check is
there), and ``tools`` says what can be called:
- ``tools.list()``: a list of ``(name, description, input JSON schema dict)``;
- ``tools.call(name, arguments)``: ``(text, is_error)``; raises ``KeyError`` for a tool
  that is not offered and ``ValueError`` (its text says why) for arguments that do not fit.

The transport as served here:
- POST carries one JSON-RPC message (``Content-Type: application/json``, at most
  ``REQUEST_MAX_BYTES``). A request is answered with one JSON object
  (``application/json``: the spec lets a server answer so instead of opening an SSE
  stream); a notification, or a response from the client, with 202 and no body.
  A session of 2025-03-26 may also send a batch (a JSON array), answered with an array;
  2025-06-18 took batches out, so its sessions get -32600 for one.
- ``initialize`` opens a session: its answer carries an ``Mcp-Session-Id`` header that
  every later message must carry (400 without one, 404 for one that ended or was never
  given: the client then initializes again). At most ``_MCP_SESSIONS_MAX`` are kept; a
  new one pushes out the one used longest ago. DELETE ends a session. GET, the stream of
  messages the server starts, is not offered: 405.
- ``MCP-Protocol-Version`` on a later request must be a version served (400); without it
  2025-03-26 is assumed (the spec's rule).
- Errors: -32700 the body is not JSON, -32600 not a JSON-RPC request (these two with
  HTTP 400, as the transport says for input a server cannot accept), -32601 an unknown
  method, -32602 bad params (an unknown tool, arguments that do not fit), -32603 a fault
  of the server. A tool that ran and failed is a result with ``isError`` true.
- ``origin_allowed``: the spec says a server MUST check ``Origin`` against DNS rebinding.
"""
import json

from micropython import const

# Served, newest first: an ``initialize`` asking for another gets the first.
_MCP_VERSIONS = ("2025-06-18", "2025-03-26")
_MCP_BATCH_VERSION = const("2025-03-26")  # the last revision with batches
_MCP_SESSIONS_MAX = const(4)  # sessions kept (a few desktop agents); each is a short list
_MCP_SESSION_ID_BYTES = const(16)  # random bytes of a session id, sent as hex
REQUEST_MAX_BYTES = const(8192)  # a POST body: a tool call's arguments are small (no file writes)

_PARSE_ERROR = const(-32700)
_INVALID_REQUEST = const(-32600)
_METHOD_NOT_FOUND = const(-32601)
_INVALID_PARAMS = const(-32602)
_INTERNAL_ERROR = const(-32603)
_JSON_TYPE = const("application/json")


def origin_allowed(origin, host):
    """True when a request with these ``Origin`` and ``Host`` header values (str or None)
    may reach the endpoint.

    No ``Origin``: not a web page (desktop agents send none), allowed. With one (a
    browser's request), it must be the board's own page, the same host and port as
    ``Host``, and that host an IP address, ``localhost`` or an mDNS ``.local`` name: a DNS
    rebinding page has its own public name in both headers, which this refuses. The
    bearer token is the second guard: a page cannot make the browser send it.
    """
    if origin is None:
        return True
    i = origin.find("://")
    if i < 0 or not host or origin[i + 3:].lower() != host.lower():
        return False
    host = host.lower()
    if host[:1] == "[":  # an IPv6 literal, [::1]:8080
        return True
    name = host.split(":")[0]
    if name == "localhost" or name.endswith(".local"):
        return True
    parts = name.split(".")
    return len(parts) == 4 and all(p.isdigit() and len(p) <= 3 for p in parts)


def _error(mid, code, message):
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}


def _ok(mid, result):
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def _json(status, obj, headers=None):
    """An HTTP answer carrying ``obj`` as JSON."""
    h = {"Content-Type": _JSON_TYPE}
    if headers:
        h.update(headers)
    return (status, h, json.dumps(obj).encode())


class Server:
    """One MCP endpoint: its sessions, and the tools it offers (see the module doc)."""

    def __init__(self, tools, name, version, instructions=None):
        """``tools``: the object that lists and calls the tools; ``name``, ``version``: the
        ``serverInfo`` an ``initialize`` answer carries; ``instructions``: a hint for the
        client's model, or None."""
        self.tools = tools
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.sessions = {}  # session id -> [protocol version, the count of uses when last used]
        self._uses = 0

    def handle(self, method, headers, body):
        """Answer one HTTP request to the endpoint: ``method`` ("GET", "POST", "DELETE"),
        ``headers`` (a dict-like whose ``get`` takes the header names as the spec writes
        them; microdot's is case-blind), ``body`` (bytes). Returns ``(status, headers dict,
        body bytes or None)``. Never raises: a fault of a tool or of this code is a -32603
        answer."""
        if method == "DELETE":
            sid = headers.get("Mcp-Session-Id")
            if not sid:
                return (400, {}, None)
            if self.sessions.pop(sid, None) is None:
                return (404, {}, None)
            return (200, {}, None)
        if method != "POST":  # GET: no stream of server messages here
            return (405, {"Allow": "POST, DELETE"}, None)
        if len(body) > REQUEST_MAX_BYTES:
            return _json(413, _error(None, _INVALID_REQUEST, "the request is over %d bytes" % REQUEST_MAX_BYTES))
        ct = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct != _JSON_TYPE:
            return _json(415, _error(None, _INVALID_REQUEST, "Content-Type must be application/json"))
        accept = headers.get("Accept")
        if accept is not None and _JSON_TYPE not in accept and "*/*" not in accept:
            return _json(406, _error(None, _INVALID_REQUEST, "the answer is application/json: Accept it"))
        try:
            msg = json.loads(body)
        except Exception:  # noqa: BLE001 - ValueError, or a RuntimeError for JSON nested too deep
            return _json(400, _error(None, _PARSE_ERROR, "parse error: the body is not JSON"))
        try:
            return self._post(headers, msg)
        except MemoryError:
            msg = None  # the request's objects go first: the answer needs a little room
            return _json(200, _error(None, _INTERNAL_ERROR, "out of memory: try a smaller request"))
        except Exception as e:  # noqa: BLE001 - a fault of this server: an answer, not a dead web thread
            return _json(200, _error(None, _INTERNAL_ERROR, "internal error: %s" % (str(e) or type(e).__name__)))

    def _post(self, headers, msg):
        version = headers.get("MCP-Protocol-Version")
        if version is not None and version not in _MCP_VERSIONS:
            return _json(400, _error(None, _INVALID_REQUEST, "unsupported MCP-Protocol-Version %s (served: %s)"
                                     % (version, ", ".join(_MCP_VERSIONS))))
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            return self._initialize(msg)
        sid = headers.get("Mcp-Session-Id")
        if not sid:
            return _json(400, _error(None, _INVALID_REQUEST, "no Mcp-Session-Id header: initialize first"))
        session = self.sessions.get(sid)
        if session is None:
            return _json(404, _error(None, _INVALID_REQUEST, "session not found: initialize again"))
        self._uses += 1
        session[1] = self._uses
        if isinstance(msg, list):
            if session[0] != _MCP_BATCH_VERSION:
                return _json(400, _error(None, _INVALID_REQUEST, "batches are not part of MCP " + session[0]))
            if not msg:
                return _json(400, _error(None, _INVALID_REQUEST, "an empty batch"))
            out = []
            for m in msg:
                r = self._one(m)
                if r is not None:
                    out.append(r)
            return _json(200, out) if out else (202, {}, None)
        r = self._one(msg)
        if r is None:
            return (202, {}, None)
        code = r.get("error", {}).get("code")
        return _json(400 if code == _INVALID_REQUEST else 200, r)

    def _initialize(self, msg):
        """Open a session; its id goes in the ``Mcp-Session-Id`` header of the answer."""
        mid = msg.get("id")
        if not _is_id(mid):
            return _json(400, _error(None, _INVALID_REQUEST, "initialize is a request: it needs an id"))
        params = msg.get("params")
        if msg.get("jsonrpc") != "2.0":
            return _json(400, _error(mid, _INVALID_REQUEST, "jsonrpc must be \"2.0\""))
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            return _json(200, _error(mid, _INVALID_PARAMS, "initialize needs params.protocolVersion"))
        want = params["protocolVersion"]
        version = want if want in _MCP_VERSIONS else _MCP_VERSIONS[0]
        if len(self.sessions) >= _MCP_SESSIONS_MAX:  # push out the one used longest ago
            old = None
            for k in self.sessions:
                if old is None or self.sessions[k][1] < self.sessions[old][1]:
                    old = k
            del self.sessions[old]
        import binascii
        import os

        sid = binascii.hexlify(os.urandom(_MCP_SESSION_ID_BYTES)).decode()
        self._uses += 1
        self.sessions[sid] = [version, self._uses]
        result = {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": self.info}
        if self.instructions:
            result["instructions"] = self.instructions
        return _json(200, _ok(mid, result), {"Mcp-Session-Id": sid})

    def _one(self, msg):
        """The answer to one message of a session (a dict), or None for a notification or
        a response from the client."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return _error(None, _INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        method = msg.get("method")
        if method is None and ("result" in msg or "error" in msg):
            return None  # the client answering: this server asks nothing, so nothing waits for it
        if not isinstance(method, str):
            return _error(None, _INVALID_REQUEST, "method must be a string")
        if "id" not in msg:
            return None  # a notification (notifications/initialized, /cancelled): nothing to answer
        mid = msg["id"]
        if not _is_id(mid):
            return _error(None, _INVALID_REQUEST, "id must be a string or an integer")
        params = msg.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(mid, _INVALID_PARAMS, "params must be an object")
        if method == "ping":
            return _ok(mid, {})
        if method == "tools/list":
            tools = [{"name": n, "description": d, "inputSchema": s} for n, d, s in self.tools.list()]
            return _ok(mid, {"tools": tools})
        if method == "tools/call":
            return self._call(mid, params)
        if method == "initialize":  # only in a batch: a lone one opened a session in _post
            return _error(mid, _INVALID_REQUEST, "initialize must not be part of a batch")
        return _error(mid, _METHOD_NOT_FOUND, "method not found: " + method)

    def _call(self, mid, params):
        name = params.get("name")
        if not isinstance(name, str):
            return _error(mid, _INVALID_PARAMS, "params.name must be a tool's name (see tools/list)")
        args = params.get("arguments")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return _error(mid, _INVALID_PARAMS, "params.arguments must be an object")
        try:
            text, err = self.tools.call(name, args)
        except KeyError:
            return _error(mid, _INVALID_PARAMS, "unknown tool: %s (see tools/list)" % name)
        except ValueError as e:
            return _error(mid, _INVALID_PARAMS, "invalid arguments for %s: %s" % (name, e))
        return _ok(mid, {"content": [{"type": "text", "text": text}], "isError": bool(err)})


def _is_id(v):
    """A request id MCP allows: a string or an integer (not null, not a bool)."""
    return isinstance(v, str) or isinstance(v, int) and not isinstance(v, bool)
