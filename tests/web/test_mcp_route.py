"""The board's tools as MCP offers them (mimi.web.mcp_route.BoardTools): which are listed,
as whom a call runs, what it may not pass (issue 18; both runtimes)."""
from mimi import config
from mimi.tools import clock, cron_tools, files, memory_tools, messaging, registry
from mimi.web import mcp_route
import support

RUNTIMES = ("cpython", "micropython")

SEEN = []  # the ctx of each call of the stand-in tools below


def _seen(args, ctx):
    SEEN.append(ctx)
    return "seen"


def _board(owner="555"):
    support.fresh_flash()
    if owner:
        config.set("allowed_chats", owner)
    registry.clear()
    for m in (files, memory_tools, clock, messaging, cron_tools):
        m.register_all()
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    # tools other branches add, and one that must never be offered
    for name in ("sensor_read", "rule_add", "mqtt_publish", "settings_set", "web_search"):
        registry.register(registry.Tool(name, "a stand-in", schema, _seen, "misc"))
    registry.register(registry.Tool("gpio_later", "not set up", schema, _seen, "gpio", available=lambda: False))
    del SEEN[:]
    return mcp_route.BoardTools()


def test_the_allow_list_picks_the_tools():
    names = [n for n, d, s in _board().list()]
    assert names == ["read_file", "list_dir", "read_section", "search_files", "memory_search", "get_current_time",
                     "cron_add", "cron_list", "cron_remove", "sensor_read", "rule_add", "mqtt_publish"], names
    for never in ("write_file", "edit_file", "delete_file", "send_message", "settings_set", "web_search"):
        assert not mcp_route.offered(never), never
    assert mcp_route.offered("gpio_later")  # by its name, but it is not available: not listed
    assert mcp_route.offered("gpio_write") and mcp_route.offered("sensors_list") and mcp_route.offered("rules_list")


def test_cron_add_loses_its_chat_arguments_and_the_registry_keeps_them():
    tools = _board()
    listed = dict((n, s) for n, d, s in tools.list())
    assert sorted(listed["cron_add"]["properties"]) == ["at", "every_s", "hhmm", "kind", "text"]
    assert listed["cron_add"]["required"] == ["kind", "text"]
    full = registry.get("cron_add").schema["properties"]
    assert "chat_id" in full and "channel" in full  # a copy was cut, not the registry's
    for k in ("chat_id", "channel"):
        assert support.raises(ValueError, tools.call, "cron_add", {"kind": "daily", "hhmm": "07:00", "text": "x", k: "1"})


def test_calls_run_as_the_owner_in_the_owners_chat():
    tools = _board("555")
    assert tools.call("sensor_read", {"id": "t1"}) == ("seen", False)
    ctx = SEEN[-1]
    assert ctx["role"] == 0 and ctx["chat_id"] == "555" and ctx["channel"] == "telegram" and ctx["session"] == "mcp"
    text, err = tools.call("cron_add", {"kind": "daily", "hhmm": "07:30", "text": "stretch"})
    assert not err, text
    text, err = tools.call("cron_list", {})
    assert "to telegram 555: stretch" in text
    config.set("owner_chat", "fs_ou_abc")  # a Feishu owner
    tools.call("sensor_read", {})
    assert SEEN[-1]["chat_id"] == "fs_ou_abc" and SEEN[-1]["channel"] == "feishu"
    tools = _board(None)  # no chat set up: the console's
    tools.call("sensor_read", {})
    assert SEEN[-1]["chat_id"] == config.CLI_CHAT_ID and SEEN[-1]["channel"] == "cli" and SEEN[-1]["role"] == 0


def test_unknown_unoffered_and_bad_arguments():
    tools = _board()
    for name in ("nope", "write_file", "send_message", "settings_set", "gpio_later"):
        assert support.raises(KeyError, tools.call, name, {}), name
    assert support.raises(ValueError, tools.call, "read_file", {})  # path is required
    assert support.raises(ValueError, tools.call, "read_file", {"path": 5})
    assert support.raises(ValueError, tools.call, "sensor_read", {"id": "x", "extra": 1})
    assert SEEN == []  # none of them ran
    text, err = tools.call("read_file", {"path": "/data/none.md"})
    assert err and text.startswith("Error: read_file:")  # ran and failed: a result


def test_a_rule_made_over_mcp_reports_to_the_owner_only():
    # rule_add's own chat and its actions' targets are withheld, as cron_add's are: over
    # MCP a rule cannot message, or prompt the agent in, another chat.
    tools = _board()
    for args in ({"when": {"every_s": 60}, "do": [{"message": "hi"}], "chat_id": "2002"},
                 {"when": {"every_s": 60}, "do": [{"message": "hi"}], "channel": "feishu"},
                 {"when": {"every_s": 60}, "do": [{"message": "hi", "chat_id": "2002"}]},
                 {"when": {"every_s": 60}, "do": [{"prompt": "say hi", "chat_id": "-100555"}]}):
        del SEEN[:]
        assert support.raises(ValueError, tools.call, "rule_add", args), args
        assert SEEN == []  # refused before the tool ran
    tools.call("rule_add", {"id": "r1"})  # the stand-in: a rule without targets goes through
    assert SEEN and SEEN[-1]["chat_id"] == "555"
