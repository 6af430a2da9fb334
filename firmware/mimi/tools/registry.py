"""One registry of tools: name, description, JSON schema, handler, group.

A handler is ``handler(args, ctx) -> str``. ``args`` is the dict the model sent, already
checked against the schema's ``required`` list and property types; ``ctx`` is the turn:
``{"channel": str, "chat_id": str, "session": str, "bus": Bus or None}``. A handler
raises to report a problem (``ValueError("path must be under /data")``); ``execute``
turns any exception, a wrong or missing argument, or an unknown tool into an error
result the model reads, never a crash (nanobot's "tool errors are data").

Results are capped at ``TOOL_RESULT_MAX_BYTES`` (8 KB) with a visible truncation marker.

Groups let a channel withhold tools: ``file``, ``gpio``, ``cron`` are not offered to group
chats unless the owner allows it (issue 4); ``net`` tools appear only when configured
(a tool's ``available()`` returns False otherwise).
"""
from micropython import const

TOOL_RESULT_MAX_BYTES = const(8192)
_MARK = "\n[truncated: result over %d bytes]"

_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


class Tool:
    """A tool the model can call."""

    def __init__(self, name, description, schema, handler, group="misc", available=None,
                 max_bytes=TOOL_RESULT_MAX_BYTES):
        self.name = name
        self.description = description
        self.schema = schema  # {"type": "object", "properties": {...}, "required": [...]}
        self.handler = handler
        self.group = group
        self.available = available  # callable -> bool, or None for always
        self.max_bytes = max_bytes  # the result's cap (memory_search: seed 003's 10,000)


_tools = {}
_order = []


def register(tool):
    """Add ``tool`` (replacing one of the same name)."""
    if tool.name not in _tools:
        _order.append(tool.name)
    _tools[tool.name] = tool


def clear():
    """Forget every tool (tests)."""
    _tools.clear()
    del _order[:]


def get(name):
    return _tools.get(name)


def names():
    return list(_order)


def offered(denied_groups=()):
    """The tools to offer this turn, in registration order: a list of ``Tool``.

    ``denied_groups``: groups the channel may not use (e.g. ``("file", "gpio", "cron")``
    in a group chat). Tools whose ``available()`` is False are left out.
    """
    out = []
    for n in _order:
        t = _tools[n]
        if t.group in denied_groups:
            continue
        if t.available is not None and not t.available():
            continue
        out.append(t)
    return out


def check_args(tool, args):
    """Return None when ``args`` fit the tool's schema, else a message naming the problem."""
    if not isinstance(args, dict):
        return "arguments must be a JSON object, got %s" % type(args).__name__
    schema = tool.schema or {}
    props = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in args or args[name] is None:
            return "missing required argument '%s'" % name
    for name in args:
        if name not in props:
            return "unknown argument '%s' (expected: %s)" % (name, ", ".join(props) or "none")
        want = props[name].get("type")
        if isinstance(want, list):  # ["string", "integer"]: any of them
            types = ()
            for w in want:
                types += _TYPES.get(w, ())
            want = " or ".join(want)
        else:
            types = _TYPES.get(want)
        v = args[name]
        if not types:
            continue
        if isinstance(v, bool) and bool not in types:
            return "argument '%s' must be %s, got boolean" % (name, want)
        if not isinstance(v, types):
            return "argument '%s' must be %s, got %s" % (name, want, _json_type(v))
        enum = props[name].get("enum")
        if enum and v not in enum:
            return "argument '%s' must be one of %s" % (name, ", ".join(str(e) for e in enum))
    return None


def _json_type(v):
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null" if v is None else type(v).__name__


def cap(text, limit=TOOL_RESULT_MAX_BYTES):
    """Cut ``text`` to ``limit`` bytes of UTF-8 at a character boundary, with a marker."""
    b = text.encode() if isinstance(text, str) else bytes(text)
    if len(b) <= limit:
        return b.decode() if not isinstance(text, str) else text
    mark = _MARK % limit
    end = limit - len(mark)
    while end > 0 and (b[end] & 0xC0) == 0x80:  # do not split a UTF-8 character
        end -= 1
    return b[:end].decode() + mark


def execute(name, args, ctx):
    """Run tool ``name`` with ``args``; return ``(text, is_error)``, never raise.

    ``text`` is at most 8 KB. Unknown tools, argument errors and handler exceptions come
    back as ``("Error: ...", True)``.
    """
    tool = _tools.get(name)
    if tool is None:
        return ("Error: unknown tool '%s'" % name, True)
    if tool.available is not None and not tool.available():
        return ("Error: tool '%s' is not available here" % name, True)
    problem = check_args(tool, args)
    if problem:
        return ("Error: %s: %s" % (name, problem), True)
    try:
        out = tool.handler(args, ctx)
    except MemoryError:
        return ("Error: %s: out of memory; try a smaller request" % name, True)
    except Exception as e:  # noqa: BLE001 - any handler failure is data for the model
        msg = str(e) or type(e).__name__
        return (cap("Error: %s: %s" % (name, msg)), True)
    if out is None:
        out = "ok"
    return (cap(out, tool.max_bytes), False)
