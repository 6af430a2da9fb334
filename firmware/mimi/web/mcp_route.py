"""The MCP endpoint on the LAN web server: ``routes(app, authorized)`` serves ``mimi.mcp`` at
``/mcp`` on a microdot app, with the board's own tools (issue 18; docs/trust.md, "A
desktop agent over MCP").

Which tools: those of ``mimi.tools.registry`` whose names ``_MCP_TOOL_NAMES`` lists or
start with one of ``_MCP_TOOL_PREFIXES``: pins (``gpio_``), sensors, rules, reminders
(``cron_``), the time, and reading files, memory notes and datasheets. A listed tool that
is not registered (not built into this image, or a net tool not set up) is left out; a
sensor or rule tool appears once its module registers it. Never: writing or deleting
files (``write_file``, ``edit_file``, ``delete_file``), ``send_message`` (no messages to
chats), the web tools, and no tool touches the settings or the secrets (none does).
``cron_add``'s ``chat_id`` and ``channel`` are withheld: a reminder made over MCP reports
to the owner's chat.

Whose turn: a call runs as the owner's (role 0, ``mimi.policy``): the caller holds the web
password or a token made on the console, either of which is the owner's. Its ``ctx`` is
the owner's chat (Telegram or Feishu; the console when no chat is set up), session
``mcp``.

Which thread: the web server's. The agent thread may be running a tool at the same time;
the modules the offered tools reach hold their own locks for what two threads share
(``mimi.hw.gpio``'s pins, ``mimi.storage.cronjobs``, ``fs`` writes, the datasheet index),
as the serial console's ``tool`` command already needs. A call is short (a pin, a file
read of at most 8 KB), so the web server's loop waits that long; no call goes through
the agent's queue, where it would wait behind an LLM turn of many seconds.
"""
from micropython import const

from mimi import log, mcp
from mimi.tools import registry

_MCP_PATH = const("/mcp")
# Tools offered over MCP: these names, and names starting with a prefix below.
_MCP_TOOL_NAMES = ("get_current_time", "read_file", "list_dir", "read_section", "search_files", "memory_search",
                   "hardware_docs", "mqtt_publish", "i2c_scan")
_MCP_TOOL_PREFIXES = ("gpio_", "sensor", "rule", "cron_")
# Arguments a tool does not take over MCP: a reminder reports to the owner's chat only.
_MCP_WITHHELD = {"cron_add": ("chat_id", "channel"), "rule_add": ("chat_id", "channel")}
_MCP_INSTRUCTIONS = const("mimi, a personal assistant on an ESP32-S3 board: its pins, sensors, rules, reminders "
                          "(they report to the owner's chat), and reading its files and memory notes under /data.")
_TAG = const("mcp")


def offered(name):
    """True when tool ``name`` may be offered over MCP (registered or not)."""
    if name in _MCP_TOOL_NAMES:
        return True
    for p in _MCP_TOOL_PREFIXES:
        if name.startswith(p):
            return True
    return False


def _ctx():
    """The ``ctx`` of an MCP call: the owner's turn, in the owner's chat."""
    from mimi import app, commands, config

    chat = commands.owner()
    channel = "feishu" if chat[:3] == "fs_" else "telegram"
    if not chat:
        chat, channel = config.CLI_CHAT_ID, "cli"
    return {"channel": channel, "chat_id": chat, "session": "mcp", "bus": app.state["bus"], "role": 0,
            "is_group": None}


class BoardTools:
    """The tools ``mimi.mcp.Server`` lists and calls: the registry's, filtered (module doc)."""

    def list(self):
        """``[(name, description, input schema)]`` of the tools offered, in the registry's order."""
        out = []
        for t in registry.offered():
            if offered(t.name):
                schema = t.schema
                drop = _MCP_WITHHELD.get(t.name)
                if drop:  # a copy: the registry keeps the schema it read
                    props = dict(schema.get("properties", {}))
                    for k in drop:
                        props.pop(k, None)
                    schema = dict(schema)
                    schema["properties"] = props
                out.append((t.name, t.description, schema))
        return out

    def call(self, name, args):
        """Run tool ``name``: ``(text, is_error)``. Raises ``KeyError`` for a tool not offered
        and ``ValueError`` for arguments that do not fit its schema (``registry.check``)."""
        t = registry.get(name) if offered(name) else None
        if t is None or t.available is not None and not t.available():
            raise KeyError(name)
        for k in _MCP_WITHHELD.get(name, ()):
            if k in args:
                raise ValueError("argument '%s' is not offered over MCP" % k)
        _no_other_chat(name, args)
        registry.check(t, args)
        log.info(_TAG, "tool %s", name)
        return registry.execute(name, args, _ctx())


def _no_other_chat(name, args):
    """A rule made or tried over MCP reports to the owner's chat only, as a reminder does:
    ``ValueError`` for a ``chat_id`` in its actions (a message or a prompt to another chat)."""
    rule = args if name == "rule_add" else args.get("rule") if name == "rule_test" else None
    if not isinstance(rule, dict):
        return
    if "chat_id" in rule or "channel" in rule:
        raise ValueError("a rule made over MCP reports to the owner's chat: no chat_id")
    for a in rule.get("do") or ():
        if isinstance(a, dict) and "chat_id" in a:
            raise ValueError("a rule made over MCP reports to the owner's chat: no chat_id in its actions")


def routes(app, authorized=None):
    """Serve MCP at ``/mcp`` (POST, GET, DELETE) on the microdot ``app``; returns the
    ``mimi.mcp.Server`` (its sessions: tests). The web server calls it with ``app`` alone
    (``config.WEB_ROUTE_MODULES``).

    ``authorized(request) -> bool``: by default the web server's bearer check
    (``mimi.web.auth.bearer_ok``: ``Authorization: Bearer <web password or a console-made
    token>``); False -> 401 with
    ``WWW-Authenticate: Bearer``. A request from a web page of another site (``Origin``,
    ``mcp.origin_allowed``) -> 403 first. Bodies over ``mcp.REQUEST_MAX_BYTES`` -> 413;
    a chunked body (microdot reads none) -> 411.
    """
    from mimi import VERSION

    if authorized is None:
        from mimi.web import auth

        authorized = auth.bearer_ok
    server = mcp.Server(BoardTools(), "mimi", VERSION, _MCP_INSTRUCTIONS)

    async def endpoint(request):
        h = request.headers
        if not mcp.origin_allowed(h.get("Origin"), h.get("Host")):
            return "forbidden origin", 403
        if not authorized(request):
            return "unauthorized", 401, {"WWW-Authenticate": 'Bearer realm="mimi"'}
        body = b""
        if request.method == "POST":
            n = request.content_length
            if n > mcp.REQUEST_MAX_BYTES:
                return "request over %d bytes" % mcp.REQUEST_MAX_BYTES, 413
            if "chunked" in (h.get("Transfer-Encoding") or "").lower():
                return "a Content-Length is required", 411
            body = request.body
            if len(body) < n:  # over microdot's max_body_length: still in the stream
                body = await request.stream.readexactly(n)
        status, headers, out = server.handle(request.method, h, body)
        return out or b"", status, headers

    app.route(_MCP_PATH, methods=["POST", "GET", "DELETE"])(endpoint)
    return server
