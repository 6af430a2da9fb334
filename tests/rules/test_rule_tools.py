"""The rule and sensor tools through the registry, the agent making a rule, /rules and the
console (issue 18; both runtimes)."""
import json

import dht
import ds18x20
import esp32
import machine

from mimi import bus as busmod, cli, commands, config
from mimi.agent import loop
from mimi.hw import datasheets as ds, gpio, pins, sensors
from mimi.rules import engine, store
from mimi.tools import registry
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00 UTC
OWNER = "42"
_SHEET = ("# Board\n\n## Pin Aliases\n| door | 4 | in |\n| fan | 5 |\n| room | 6 | dht22 |\n"
          "| light level | 7 | adc |\n| tank | 9 | ds18b20 |\n| usb_lamp | 19 |\n")


def _fresh():
    root = support.fresh_flash()
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", _SHEET)
    config.set("tz", "+08:00")
    config.set("owner_chat", OWNER)
    config.set("allowed_chats", OWNER + ",77,-100")
    ds.forget()
    pins.reload()
    gpio.reset()
    sensors.forget()
    machine.sim_reset()
    engine.reset()
    registry.clear()
    registry.load(("mimi.rules.chat",))
    b = busmod.Bus(8, 32)
    engine.init(b)
    return b


def _ctx(chat=OWNER, **kw):
    c = {"channel": "telegram", "chat_id": chat, "session": "tg_" + chat, "bus": None}
    c.update(kw)
    return c


def _run(name, args, ctx=None):
    return registry.execute(name, args, ctx or _ctx())


_FAN = {"name": "fan when hot", "when": {"sensor": "room", "above": 28, "hysteresis": 0.5},
        "do": [{"pin": "fan", "value": 1}, {"message": "It is {room} °C: fan on"}]}


def test_sensor_read_gives_each_kind_in_its_unit():
    _fresh()
    esp32.sim_mcu_temperature(43)
    assert _run("sensor_read", {"sensor": "mcu"}) == ("mcu (mcu): temperature 43.0 °C", False)
    dht.sim_set(6, 23.4, 61.0)
    assert _run("sensor_read", {"sensor": "room"})[0] == "room (dht22 on GPIO6): temperature 23.4 °C"
    assert _run("sensor_read", {"sensor": "room.humidity"})[0] == "room.humidity (dht22 on GPIO6): humidity 61.0 %"
    machine.sim_adc(7, 1200)
    assert _run("sensor_read", {"sensor": "light level"})[0] == "light level (adc on GPIO7): mV 1200 mV"
    assert _run("sensor_read", {"sensor": "adc:7", "atten_db": 0})[0].endswith("mV 950 mV")  # 0 dB: full scale
    ds18x20.sim_set(9, 18.5)
    assert _run("sensor_read", {"sensor": "tank"})[0] == "tank (ds18b20 on GPIO9): temperature 18.5 °C"
    t, err = _run("sensor_read", {"sensor": "adc:15"})
    assert err and "ADC1" in t
    t, err = _run("sensor_read", {"sensor": "fan"})
    assert err and "no sensor" in t and "room" in t
    dht.sim_set(6, None)
    sensors.forget()
    assert _run("sensor_read", {"sensor": "room"})[1]  # no answer: an error, not a crash
    ds18x20.sim_set(9, None)
    sensors.forget()
    t, err = _run("sensor_read", {"sensor": "tank"})
    assert err and "pull-up" in t


def test_i2c_scan_lists_the_addresses_and_checks_the_pins():
    _fresh()
    machine.sim_i2c(8, 9, [0x76, 0x3C])
    assert _run("i2c_scan", {"sda": 8, "scl": 9})[0] == "I2C on SDA GPIO8, SCL GPIO9: 0x3c, 0x76"
    assert "no device answers" in _run("i2c_scan", {"sda": 10, "scl": 11})[0]
    t, err = _run("i2c_scan", {"sda": 19, "scl": 20})
    assert err and "GPIO19 refused (rule usb)" in t


def test_rule_add_list_pause_remove_as_the_owner():
    _fresh()
    t, err = _run("rule_add", _FAN)
    assert not err and t.startswith('added rule r1 "fan when hot"'), t
    t, err = _run("rule_add", {"name": "door at night", "when": {"pin": "door", "edge": "falling"},
                               "if": [{"between": ["22:00", "06:00"]}], "do": [{"message": "门开了"}]})
    assert not err, t
    assert [r["id"] for r in store.list()] == ["r1", "r2"] and store.get("r2")["by"] == OWNER
    assert _run("rule_pause", {"id": "r1"})[0].startswith("rule r1 paused")
    assert "(paused)" in _run("rule_list", {})[0]
    _run("rule_pause", {"id": "r1", "paused": False})
    assert "(paused)" not in _run("rule_list", {})[0]
    assert _run("rule_remove", {"id": "r1"}) == ("removed rule r1", False)
    assert _run("rule_remove", {"id": "r1"})[1]
    assert "r2" in _run("rule_list", {})[0]


def test_wrong_or_cut_arguments_and_forbidden_rules_come_back_as_errors():
    _fresh()
    t, err = _run("rule_add", {"name": "x", "when": {"every_s": 1}, "do": [{"message": "hi"}]})
    assert err and "every_s must be a number from 60" in t
    t, err = _run("rule_add", {"name": "x", "when": {"daily": "08:00"}, "do": [{"pin": "usb_lamp", "value": 1}]})
    assert err and "GPIO19 refused (rule usb)" in t
    t, err = _run("rule_add", {"name": "x", "when": {"daily": "08:00"}})
    assert err and "missing required argument 'do'" in t
    t, err = _run("rule_add", {"name": "x", "when": "every morning", "do": []})
    assert err and "must be object" in t
    t, err = _run("rule_add", {"name": "x", "when": {"daily": "08:00"}, "do": [{"message": "hi"}], "chat_id": "999"})
    assert err and "999" in t  # not an allowed chat
    assert store.list() == []


def test_other_chats_make_only_harmless_rules_and_touch_only_their_own():
    _fresh()
    t, err = _run("rule_add", _FAN, _ctx("77"))
    assert err and "owner's to make" in t
    t, err = _run("rule_add", {"name": "stretch", "when": {"every_s": 3600}, "do": [{"message": "stretch!"}]},
                  _ctx("77"))
    assert not err, t
    _run("rule_add", _FAN)
    assert "stretch" in _run("rule_list", {}, _ctx("77"))[0] and "fan" not in _run("rule_list", {}, _ctx("77"))[0]
    t, err = _run("rule_remove", {"id": "r2"}, _ctx("77"))
    assert err and "another chat" in t
    t, err = _run("rule_add", {"name": "again", "when": {"every_s": 60}, "do": [{"message": "x"}]},
                  _ctx(OWNER, channel="cron"))
    assert err and "not by a scheduled" in t  # no rule breeds rules


def test_rule_test_reads_the_trigger_and_runs_the_actions_when_asked():
    _fresh()
    dht.sim_set(6, 30.2, 40)
    t, err = _run("rule_test", {"rule": _FAN})
    assert not err, t
    assert "room reads 30.2 now" in t and "do message: It is 30.2 °C: fan on" in t
    assert 5 not in machine.PINS  # only looked
    _run("rule_add", _FAN)
    b = busmod.Bus(4, 4)
    t, err = _run("rule_test", {"id": "r1", "run": True}, _ctx(bus=b))
    assert not err and "all worked" in t, t
    assert machine.PINS[5]["value"] == 1 and b.outbound.get(0)["text"] == "It is 30.2 °C: fan on"
    assert _run("rule_test", {})[1]


def test_the_owner_sees_and_pauses_rules_with_slash_rules_and_the_console():
    _fresh()
    assert "no rules" in commands.run("/rules", "telegram", OWNER)
    _run("rule_add", _FAN)
    assert "fan when hot" in commands.run("/rules", "telegram", OWNER)
    assert commands.run("/rules pause r1", "telegram", OWNER).startswith("rule r1 paused")
    assert store.get("r1")["paused"]
    assert "another chat" in commands.run("/rules resume r1", "telegram", "77")
    lines = []
    cli.out = lambda *a: lines.append(" ".join(str(x) for x in a))
    try:
        cli.execute("rule_resume r1")
        assert not store.get("r1").get("paused")
        cli.execute("rule_list")
        assert "fan when hot" in lines[-1]
        cli.execute("rule_remove r1")
        assert store.list() == []
    finally:
        cli.out = print


class Provider:
    """Pops scripted replies; records the tool results it was sent."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, system, messages, tools, max_tokens):
        self.requests.append({"tools": [t.name for t in tools], "messages": json.loads(json.dumps(messages))})
        return self.replies.pop(0)


class Ctx:
    def __init__(self):
        self.buf = bytearray(256)
        self.n = 0

    def build(self, msg, extra=None):
        self.n = 6
        return self.n

    def view(self):
        return memoryview(self.buf)[:self.n]


def test_the_agent_makes_a_rule_from_chat_and_the_board_then_acts_alone():
    b = _fresh()
    rule = {"name": "door after 22:00", "when": {"pin": "door", "edge": "falling", "pull": "up"},
            "if": [{"between": ["22:00", "06:00"]}], "do": [{"message": "The door button was pressed at {time}"}]}
    p = Provider({"text": "", "tool_calls": [{"id": "toolu_1", "name": "rule_add", "input": rule}],
                  "stop": "tool_use", "usage": (1, 1)},
                 {"text": "Done: I will message you.", "tool_calls": [], "stop": "end", "usage": (1, 1)})
    agent = loop.Agent(b, Ctx(), lambda: p)
    reply = agent.handle({"channel": "telegram", "chat_id": OWNER, "session": "tg_" + OWNER,
                          "text": "when the door button is pressed after 22:00, message me"})
    assert reply == "Done: I will message you."
    assert "rule_add" in p.requests[0]["tools"]
    result = p.requests[1]["messages"][-1]
    assert not result["is_error"] and "added rule r1" in result["content"], result
    while b.outbound.get(0) is not None:  # the reply itself
        pass
    night = T0 + 15 * 3600  # 23:00 at +08:00
    engine.tick(0, night)
    machine.sim_drive(4, 0)
    engine.tick(10, night)
    engine.tick(100, night)
    m = b.outbound.get(0)
    assert m["chat_id"] == OWNER and m["text"] == "The door button was pressed at 23:00"
    assert p.requests and len(p.requests) == 2  # no LLM call for the firing


def test_sensor_kinds_come_from_the_pin_aliases_table_and_the_fast_path_leaves_them_alone():
    _fresh()
    from mimi.hw import fastpath

    al = ds.aliases()
    assert al["room"] == (6, "dht22") and al["tank"] == (9, "ds18b20") and al["light_level"] == (7, "adc")
    assert al["door"] == (4, "in") and al["fan"] == (5, "out")
    assert fastpath.try_handle("turn on room", ()) is None and 6 not in machine.PINS
    assert fastpath.try_handle("turn on fan", ()).startswith("Turned fan (GPIO5) on")


def test_rules_json_is_written_only_through_the_rule_tools():
    _fresh()
    from mimi.tools import files

    files.register_all()
    t, err = _run("write_file", {"path": config.RULES_PATH, "content": '{"seq": 0, "rules": []}'})
    assert err and "use the rule tools" in t
    _run("rule_add", _FAN)
    t, err = _run("read_file", {"path": config.RULES_PATH})
    assert not err and "fan when hot" in t  # it can be read
