"""tools.jsonl: one well-formed line per tool, read lazily by the registry."""
import json

from mimi import config
from mimi.storage import cronjobs
from mimi.tools import clock, cron_tools, files, gpio, memory_tools, messaging, mqtt_tools, registry, rule_tools
import support

RUNTIMES = ("cpython", "micropython")

MODULES = (files, memory_tools, clock, messaging, cron_tools, gpio, rule_tools, mqtt_tools)  # mqtt_tools: while mqtt_url is set


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
        assert sorted(d) == ["description", "group", "input_schema", "name"], d["name"]
        s = d["input_schema"]
        assert s["type"] == "object" and d["description"] and d["name"] not in seen
        for r in s.get("required", ()):
            assert r in s["properties"], (d["name"], r)
        seen.append(d["name"])


def test_registered_tools_read_their_line():
    registry.clear()
    for m in MODULES:
        m.register_all()
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


def test_a_handler_without_a_line_is_refused_by_name():
    registry.clear()

    def no_such_tool(args, ctx):
        return "x"

    e = support.raises(ValueError, registry.add, no_such_tool)
    assert "no_such_tool" in str(e)


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
