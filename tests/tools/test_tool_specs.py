"""tools.jsonl: one well-formed line per tool, read lazily by the registry."""
import json

from mimi import config
from mimi.storage import cronjobs
from mimi.tools import clock, cron_tools, files, gpio, memory_tools, messaging, mqtt_tools, registry, web
import support

RUNTIMES = ("cpython", "micropython")

MODULES = (files, memory_tools, clock, messaging, cron_tools, web, gpio, None, mqtt_tools)  # None: mimi.rules.chat  # mqtt_tools: while mqtt_url is set


def _lines():
    with open(registry.SPECS, "rb") as f:
        raw = f.read()
    assert raw.endswith(b"\n")
    return raw[:-1].split(b"\n")


def test_every_line_is_one_well_formed_tool():
    seen = []
    for line in _lines():
        assert len(line) < 2048 and line.startswith(b'{"name":"'), line[:40]
        d = json.loads(line)
        at = [line.find(b'"%s":' % k.encode()) for k in ("name", "description", "input_schema", "group", "module")]
        assert at == sorted(at) and -1 not in at, d["name"]  # in this order: a request copies the line's bytes
        assert set(d) <= {"name", "description", "input_schema", "group", "module", "needs", "max_bytes"}, d["name"]
        assert d["module"].startswith("mimi."), d["name"]
        s = d["input_schema"]
        assert s["type"] == "object" and d["description"] and d["name"] not in seen
        for r in s.get("required", ()):
            assert r in s["properties"], (d["name"], r)
        seen.append(d["name"])


def test_registered_tools_read_their_line():
    registry.clear()
    for m in MODULES:
        m.register_all() if m else registry.load(("mimi.rules.chat",))
    specs = [json.loads(line) for line in _lines()]
    assert registry.names() == [d["name"] for d in specs]  # every line has its tool
    for d in specs:
        t = registry.get(d["name"])
        assert t.group == d["group"] and t.description == d["description"] and t.schema == d["input_schema"]
    assert registry.get("memory_search").max_bytes == config.MEMORY_SEARCH_MAX_BYTES
    # Numbers and choices in the text agree with the code.
    assert str(config.TOOL_READ_MAX_BYTES) in registry.get("read_file").schema["properties"]["length"]["description"]
    assert registry.get("cron_add").schema["properties"]["kind"]["enum"] == list(cronjobs.KINDS)
    assert registry.get("send_message").schema["properties"]["channel"]["enum"] == ["telegram", "feishu", "cli"]
    assert "N>=%d" % config.RULES_EVERY_MIN_S in registry.get("rule_add").description


def test_a_module_without_a_line_is_refused_by_name():
    registry.clear()
    e = support.raises(ValueError, registry.load, ("mimi.tools.no_such_module",))
    assert "mimi.tools.no_such_module" in str(e)


def test_a_tool_module_is_imported_at_the_first_call_not_at_registration():
    import sys

    registry.clear()
    sys.modules.pop("mimi.tools.clock", None)
    registry.load(("mimi.tools.clock",))
    assert registry.names() == ["get_current_time"] and "mimi.tools.clock" not in sys.modules
    assert registry.get("get_current_time").handler is None
    out, err = registry.execute("get_current_time", {}, {})
    assert not err and "mimi.tools.clock" in sys.modules, out
    assert registry.get("get_current_time").handler is sys.modules["mimi.tools.clock"].get_current_time
    registry.clear()


def _specs_file(name, lines):
    path = support.tmpdir(name) + "/tools.jsonl"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def test_a_line_whose_module_lacks_the_function_answers_an_error():
    saved = registry.SPECS
    registry.SPECS = _specs_file("ghost", [
        '{"name":"ghost","description":"d","input_schema":{"type":"object","properties":{}},"group":"time",'
        '"module":"mimi.tools.clock"}',
        '{"name":"gone","description":"d","input_schema":{"type":"object","properties":{}},"group":"time",'
        '"module":"mimi.tools.not_there"}'])
    try:
        registry.clear()
        registry.load()
        out, err = registry.execute("ghost", {}, {})
        assert err and out.startswith("Error: ghost: ") and "ghost" in out[13:], out
        out, err = registry.execute("gone", {}, {})
        assert err and out.startswith("Error: gone: "), out
    finally:
        registry.SPECS = saved
        registry.clear()


def test_needs_offers_a_tool_only_while_its_setting_is_set():
    saved = registry.SPECS
    registry.SPECS = _specs_file("needs", [
        '{"name":"get_current_time","description":"d","input_schema":{"type":"object","properties":{}},'
        '"group":"time","module":"mimi.tools.clock","needs":"search_key","max_bytes":20}'])
    try:
        registry.clear()
        config.set("search_key", "")
        registry.load()
        assert registry.offered() == []
        assert registry.execute("get_current_time", {}, {}) == (
            "Error: tool 'get_current_time' is not available here", True)
        config.set("search_key", "k-FAKE")
        assert [t.name for t in registry.offered()] == ["get_current_time"]
        out, err = registry.execute("get_current_time", {}, {})
        assert not err and out.endswith("[truncated: result over 20 bytes]"), out
    finally:
        config.set("search_key", "")
        registry.SPECS = saved
        registry.clear()


def test_text_is_read_when_asked_for_not_kept():
    root = support.tmpdir("specs")
    path = root + "/tools.jsonl"
    saved = registry.SPECS
    with open(saved, "rb") as f:
        raw = f.read()
    with open(path, "wb") as f:
        f.write(raw.replace(b"Read a text file", b"READ A TEXT FILE"))
    registry.SPECS = path
    try:
        registry.clear()
        files.register_all()
        t = registry.get("read_file")
        assert "description" not in t.__dict__ and "schema" not in t.__dict__  # nothing held on the tool
        assert t.description.startswith("READ A TEXT FILE")
        assert registry.execute("read_file", {"path": 5}, {})[0].endswith("must be string, got integer")
    finally:
        registry.SPECS = saved


def test_a_nan_argument_reaches_the_handler_when_the_schema_has_no_enum():
    # MicroPython's `nan in (nan,)` is False: the enum check must not run without an enum
    from mimi.tools import registry

    registry.clear()
    registry.register(registry.Tool("t_nan", "x", {"type": "object", "properties": {"x": {"type": "number"}}},
                                    lambda args, ctx: "got %s" % (args["x"] != args["x"]), "time"))
    assert registry.execute("t_nan", {"x": float("nan")}, {}) == ("got True", False)
    registry.clear()
