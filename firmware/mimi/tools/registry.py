"""One registry of tools: name, description, JSON schema, handler, group.

A handler is ``handler(args, ctx) -> str``. ``args`` is the dict the model sent, already
checked against the schema's ``required`` list and property types; ``ctx`` is the turn:
``{"channel": str, "chat_id": str, "session": str, "bus": Bus or None}``. A handler
raises to report a problem (``ValueError("path must be under /data")``); ``execute``
turns any exception, a wrong or missing argument, or an unknown tool into an error
result the model reads, never a crash (nanobot's "tool errors are data").

Results are capped at 8 KB (``Tool.max_bytes``) with a visible truncation marker.

Descriptions and schemas are long fixed text, so they live in ``tools.jsonl`` beside
this module (deploy it with the package), one tool a line:
``{"name": ..., "description": ..., "input_schema": {...}, "group": ..., "module": ...}``
in that order (a request copies the line's bytes: the part before ``group`` is
Anthropic's tool object), then optionally ``"needs"`` (a setting: the tool is offered only
while it is set) and ``"max_bytes"`` (its result's cap). ``load(modules)`` registers the
lines of those modules without importing them: a tool's handler is the function of its
name in its ``module``, imported when the tool is first called (issue 17: a tool module a
chat never uses takes no heap). Its ``description`` and ``schema`` are read from its line
when asked for (when a provider writes a request, when ``execute`` checks arguments), so
they take no RAM between turns. ``Tool(name, description, schema, handler, ...)`` with
the text given still works.
"""
import json

from micropython import const

from mimi import data_path, pick, seam

_RESULT_MAX_BYTES = const(8192)
_LINE_MAX_BYTES = const(2048)  # one line of tools.jsonl
SPECS = data_path(__file__, "tools.jsonl")
# The messages, by key (``mimi.pick``: one string in RAM, not one each).
_MSG = const("|obj arguments must be a JSON object|miss missing required argument '%s'"
             "|unk unknown argument '%s' (expected: %s)|type argument '%s' must be %s, got %s"
             "|enum argument '%s' must be one of %s|tool unknown tool '%s'|off tool '%s' is not available here"
             "|mem out of memory; try a smaller request|cut \n[truncated: result over %d bytes]"
             "|line no tool of %s in %s|")


_tools = []  # in registration order
_importing = seam.allocate_lock()  # a module half imported by one thread is not another's to use
_last = (None, None)  # the tool whose line was read last, and the line parsed


class Tool:
    """A tool the model can call. ``description``/``schema`` None: from ``tools.jsonl``.

    An attribute left at its default below is the class's, not the tool's own: 27 tools
    are registered at init (28 with MQTT), and each attribute of its own costs a slot
    (issue 17)."""

    handler = None  # None: ``module``'s function ``name``, imported at the first call
    module = None
    available = None  # callable -> bool, or None for always
    max_bytes = _RESULT_MAX_BYTES  # the result's cap (memory_search: seed 003's 10,000)
    at = None  # (offset, length) of its line in tools.jsonl
    cut = None  # (start of ',"input_schema":', of ',"group":') in that line, in that order

    def __init__(self, name, description, schema, handler, group="misc", available=None,
                 max_bytes=_RESULT_MAX_BYTES):
        self.name = name
        if description is not None:
            self.description = description
            self.schema = schema  # {"type": "object", "properties": {...}, "required": [...]}
        if handler is not None:
            self.handler = handler
        self.group = group
        if available is not None:
            self.available = available
        if max_bytes != _RESULT_MAX_BYTES:
            self.max_bytes = max_bytes

    def __getattr__(self, name):
        """``description`` and ``schema`` of a tool from ``tools.jsonl``: its line, read and
        parsed now (the last one is kept: a provider asks for both, one after the other)."""
        if name != "description" and name != "schema" or self.at is None:
            raise AttributeError(name)
        global _last
        last = _last
        if last[0] is not self:
            with open(SPECS, "rb") as f:
                f.seek(self.at[0])
                last = (self, json.loads(f.read(self.at[1])))
            _last = last
        return last[1]["input_schema" if name == "schema" else name]


def load(modules=None):
    """Register the tools of ``tools.jsonl`` whose ``module`` is in ``modules`` (a tuple of
    module names such as ``"mimi.tools.files"``; None: every line), in the file's order,
    replacing tools of the same name. Nothing is imported: ``execute`` imports a tool's
    module when the tool is first called.

    Raises ``ValueError`` naming a module none of whose tools has a line.
    """
    left = list(modules) if modules is not None else []
    same = {}  # one string for each group and module name, not one a tool
    at = 0
    with open(SPECS, "rb") as f:
        while True:
            line = f.readline(_LINE_MAX_BYTES)
            if not line:
                break
            d = json.loads(line)
            mod = d["module"]
            if modules is None or mod in modules:
                if mod in left:
                    left.remove(mod)
                g = same.setdefault(d["group"], d["group"])
                t = Tool(d["name"], None, None, None, g, _setting(d.get("needs")),
                         d.get("max_bytes", _RESULT_MAX_BYTES))
                t.module = same.setdefault(mod, mod)
                t.at = (at, len(line))
                # where the schema and the group start: a request copies the line's own bytes
                # (mimi.llm.wire.tools_json) when it reads name, description, schema, group
                sk = line.find(b',"input_schema":')
                g = line.find(b',"group":')
                if line.find(b',"description":') == 10 + len(d["name"]) and 0 < sk < g:
                    t.cut = (sk, g)
                d = None
                register(t)
            at += len(line)
    if left:
        raise ValueError(pick(_MSG, "line") % (", ".join(left), SPECS))


def load_app():
    """Register the app's tools (``config.APP_TOOL_MODULES``); when the package runs from
    ``.py`` files (``seam.compiles``) also import their modules now, in the calling (main)
    thread, whose stack the compiler needs: all but ``mimi.rules.chat`` (6 KB, loaded at
    the first rule tool's call: most boards never make a rule). ``mimi.app`` calls it; so
    do the benchmarks that stand in for the app. Raises what ``load`` and the imports raise."""
    from mimi import config

    load(config.APP_TOOL_MODULES)
    if seam.compiles(__file__):
        for name in config.APP_TOOL_MODULES:
            if name != "mimi.rules.chat":
                __import__(name)


def _setting(name):
    """``available`` for a tool offered only while setting ``name`` is set; None for always."""
    if not name:
        return None
    from mimi import config

    return lambda: bool(config.get(name))


def register(tool):
    """Add ``tool`` (replacing one of the same name, in its place)."""
    for i in range(len(_tools)):
        if _tools[i].name == tool.name:
            _tools[i] = tool
            return
    _tools.append(tool)


def clear():
    """Forget every tool (tests)."""
    del _tools[:]


def get(name):
    for t in _tools:
        if t.name == name:
            return t
    return None


def names():
    return [t.name for t in _tools]


def offered(denied_groups=()):
    """The tools to offer this turn, in registration order: a list of ``Tool``.

    ``denied_groups``: groups the channel may not use (e.g. ``("file", "gpio", "cron")``
    in a group chat). Tools whose ``available()`` is False are left out.
    """
    return [t for t in _tools if t.group not in denied_groups and (t.available is None or t.available())]


def check(tool, args):
    """Raise ``ValueError`` naming the problem unless ``args`` fit ``tool``'s schema: a dict,
    required names present and not null, no unknown names, each property's ``type`` (or one
    of a list of types) and ``enum``. ``execute`` checks with it; the MCP endpoint
    (``mimi.web.mcp_route``) too, to tell a bad call (-32602) from a tool's own error."""
    if not isinstance(args, dict):
        raise ValueError(pick(_MSG, "obj"))
    schema = tool.schema or {}
    props = schema.get("properties", {})
    for k in schema.get("required", ()):
        if args.get(k) is None:
            raise ValueError(pick(_MSG, "miss") % k)
    for k in args:
        p = props.get(k)
        if p is None:
            raise ValueError(pick(_MSG, "unk") % (k, ", ".join(props) or "none"))
        v = args[k]
        # Its JSON type name; bool before int (a bool is an int).
        got = ("boolean" if isinstance(v, bool) else "integer" if isinstance(v, int) else
               "number" if isinstance(v, float) else "string" if isinstance(v, str) else
               "object" if isinstance(v, dict) else "array" if isinstance(v, list) else "null")
        want = p.get("type") or got  # a name, or a list of names (any of them)
        # No type name holds another, so ``in`` works on a name as on a list.
        if got not in want and not (got == "integer" and "number" in want):
            raise ValueError(pick(_MSG, "type") % (k, want if isinstance(want, str) else " or ".join(want), got))
        if "enum" in p and v not in p["enum"]:  # (v,) as the default fails for NaN on MicroPython
            raise ValueError(pick(_MSG, "enum") % (k, p["enum"]))


def execute(name, args, ctx):
    """Run tool ``name`` with ``args``; return ``(text, is_error)``, never raise.

    ``text`` is cut to the tool's ``max_bytes`` (8 KB for errors) at a UTF-8 character
    boundary, with a marker. Unknown tools, arguments that do not fit the tool's schema
    (required names present and not null, no unknown names, each property's ``type``, or
    one of a list of types, and ``enum``) and handler exceptions come back as
    ``("Error: ...", True)``.
    """
    tool = get(name)
    limit = _RESULT_MAX_BYTES
    err = True
    if tool is None:
        out = "Error: " + pick(_MSG, "tool") % name
    elif tool.available is not None and not tool.available():
        out = "Error: " + pick(_MSG, "off") % name
    else:
        try:
            check(tool, args)  # a problem raises ValueError, reported as a handler's is
            h = tool.handler
            if h is None:  # its module, imported now: the first call of one of its tools
                with _importing:  # the web thread (MCP) and the agent may both make a first call
                    h = tool.handler = getattr(__import__(tool.module, None, None, (tool.name,)), tool.name)
            out = h(args, ctx)
            out = "ok" if out is None else out
            err = False
            limit = tool.max_bytes
        except MemoryError:
            return ("Error: %s: %s" % (name, pick(_MSG, "mem")), True)
        except Exception as e:  # noqa: BLE001 - any handler failure is data for the model
            out = "Error: %s: %s" % (name, str(e) or type(e).__name__)
    b = out.encode() if isinstance(out, str) else bytes(out)
    if len(b) > limit:
        mark = pick(_MSG, "cut") % limit
        end = limit - len(mark)
        while end > 0 and (b[end] & 0xC0) == 0x80:  # do not split a UTF-8 character
            end -= 1
        out = b[:end].decode() + mark
    elif not isinstance(out, str):
        out = b.decode()
    return (out, err)
