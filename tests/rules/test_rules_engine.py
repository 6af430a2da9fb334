"""Automation rules (issue 18): the store's checks and limits, and the engine firing on a
pin edge, a sensor with hysteresis, a time in the owner's zone, MQTT (a fake client
module), telling a failure once, pausing, a torn file (both runtimes)."""
import json
import sys

import dht
import machine

from mimi import bus as busmod, config
from mimi.hw import datasheets as ds, gpio, pins, sensors
from mimi.rules import engine, store
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00 UTC: 08:00 at +08:00
OWNER = "42"
_SHEET = ("# Board\n\n## Pin Aliases\n| alias | pin | kind |\n|---|---|---|\n| door | 4 | in |\n| fan | 5 |\n"
          "| room | 6 | dht22 |\n| light level | 7 | adc |\n| lamp | 8 |\n| usb_lamp | 19 |\n")


def _fresh(tz="+08:00"):
    root = support.fresh_flash()
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", _SHEET)
    config.set("tz", tz)
    config.set("owner_chat", OWNER)
    config.set("allowed_chats", OWNER)
    ds.forget()
    pins.reload()
    gpio.reset()
    sensors.forget()
    machine.sim_reset()
    dht.sim_set(6, None)
    engine.reset()
    b = busmod.Bus(8, 32)
    engine.init(b)
    return root, b


def _rule(**kw):
    d = {"name": "test rule", "when": {"pin": "door", "edge": "falling", "debounce_ms": 50, "pull": "up"},
         "do": [{"pin": "fan", "value": 1}], "chat_id": OWNER, "by": OWNER}
    d.update(kw)
    return d


def _texts(b):
    out = []
    m = b.outbound.get(0)
    while m is not None:
        out.append(m["text"])
        m = b.outbound.get(0)
    return out


def _err(spec):
    return str(support.raises(ValueError, store.add, spec))


# -- the store ---------------------------------------------------------------------------


def test_a_rule_is_stored_as_data_and_listed():
    root, _ = _fresh()
    r = store.add(_rule(name="风扇 when hot", when={"daily": "8:05"},
                        do=[{"message": "早上好, it is {room} °C"}]))
    assert r["id"] == "r1" and r["when"] == {"daily": "08:05"} and r["channel"] == "telegram"
    assert [x["name"] for x in store.list()] == ["风扇 when hot"]
    with open(root + config.RULES_PATH) as f:
        assert json.loads(f.read())["rules"][0]["do"][0]["message"] == "早上好, it is {room} °C"
    assert "r1 \"风扇 when hot\"" in store.line(store.get("r1"))
    assert store.add(_rule(name="second"))["id"] == "r2"
    store.remove("r1")
    assert [x["id"] for x in store.list()] == ["r2"]
    assert "no rule" in str(support.raises(ValueError, store.remove, "r1"))


def test_refusals_name_the_problem_and_store_nothing():
    _fresh()
    e = str(support.raises(pins.PinRefused, store.add, _rule(do=[{"pin": "usb_lamp", "value": 1}])))
    assert "GPIO19" in e and "usb" in e
    assert "GPIO19" in str(support.raises(pins.PinRefused, store.add, _rule(do=[{"pin": 19, "value": 1}])))
    assert "60" in _err(_rule(when={"every_s": 1}))
    assert "reads it, never drives" in _err(_rule(do=[{"pin": "door", "value": 1}]))
    assert "no sensor" in _err(_rule(when={"sensor": "fan", "above": 3}))
    assert "above or below" in _err(_rule(when={"sensor": "room"}))
    assert "unknown field 'colour'" in _err(_rule(when={"daily": "08:00", "colour": "red"}))
    assert "do must be" in _err(_rule(do=[]))
    assert "do must be" in _err(_rule(do=[{"message": "x"}] * 5))
    assert "unknown action" in _err(_rule(do=[{"exec": "rm -rf /"}]))
    assert "HH:MM" in _err(_rule(when={"daily": "25:00"}))
    assert "wildcards" in _err(_rule(do=[{"mqtt": "home/#", "payload": "on"}]))
    assert "name" in _err(_rule(name=""))
    assert "value: 0 or 1" in _err(_rule(do=[{"pin": "fan", "value": 2}]))
    assert store.list() == []
    for i in range(config.RULES_MAX):
        store.add(_rule(name="rule %d" % i))
    assert "already %d rules" % config.RULES_MAX in _err(_rule(name="one more"))
    assert len(store.list()) == config.RULES_MAX


def test_a_torn_file_is_reported_once_and_runs_nothing():
    root, b = _fresh()
    store.add(_rule())
    support.write(root + config.RULES_PATH, '{"seq": 1, "rules": [{"id": "r1", "na')
    engine.tick(0, T0)
    engine.tick(10000, T0 + 10)
    t = _texts(b)
    assert len(t) == 1 and "damaged" in t[0]
    assert "damaged" in str(support.raises(ValueError, store.list))
    support.write(root + config.RULES_PATH, '{"seq": 1, "rules": [{"id": "r1", "name": 5}, 7]}')
    assert store.list()[0]["off"]  # a damaged rule is switched off, kept for the owner to see
    engine.tick(20000, T0 + 20)
    assert _texts(b) == []


# -- the engine ----------------------------------------------------------------------------


def test_a_pin_edge_fires_once_per_debounced_press():
    _, b = _fresh()
    store.add(_rule(do=[{"pin": "fan", "value": 1}, {"message": "door pressed ({value}) at {time}"}]))
    engine.tick(0, T0)  # sets the pin up as an input with its pull-up: reads 1, no edge
    assert machine.PINS[4]["mode"] == machine.Pin.IN and machine.PINS[4]["pull"] == machine.Pin.PULL_UP
    machine.sim_drive(4, 0)
    engine.tick(20, T0)
    assert machine.PINS.get(5, {}).get("value", 0) == 0  # not held long enough yet
    machine.sim_drive(4, 1)  # a bounce
    engine.tick(30, T0)
    machine.sim_drive(4, 0)
    engine.tick(40, T0)
    engine.tick(80, T0)
    assert machine.PINS.get(5, {}).get("value", 0) == 0  # 40 ms since the bounce
    engine.tick(100, T0)
    assert machine.PINS[5]["value"] == 1
    assert _texts(b) == ["door pressed (0) at 08:00"]
    engine.tick(500, T0)
    machine.sim_drive(4, 1)  # released: a rising edge, not ours
    engine.tick(600, T0)
    engine.tick(700, T0)
    assert _texts(b) == []
    machine.sim_drive(4, 0)
    engine.tick(800, T0)
    engine.tick(900, T0)
    assert len(_texts(b)) == 1


def test_a_sensor_fires_crossing_up_and_again_only_after_falling_past_the_hysteresis():
    _, b = _fresh()
    store.add(_rule(when={"sensor": "room", "above": 28, "hysteresis": 1, "every_s": 10},
                    do=[{"message": "hot: {value} °C"}]))
    seen = []
    for i, t in enumerate((27, 29, 28.5, 29.5, 27.5, 29, 26.9, 28.2)):
        dht.sim_set(6, t)
        engine.tick(i * 10000, T0 + i * 10)
        seen.extend(_texts(b))
    assert seen == ["hot: 29 °C", "hot: 28.2 °C"]


def test_a_sensor_read_between_polls_is_not_made():
    _, b = _fresh()
    store.add(_rule(when={"sensor": "room", "below": 5, "every_s": 60}, do=[{"message": "cold"}]))
    dht.sim_set(6, 20)
    n = dht.MEASURES[0]
    for ms in range(0, 60000, 1000):
        engine.tick(ms, T0)
    assert dht.MEASURES[0] - n == 1
    dht.sim_set(6, 4)
    engine.tick(60000, T0 + 60)
    assert _texts(b) == ["cold"]


def test_a_daily_rule_fires_in_the_owners_zone_with_a_time_window():
    _, b = _fresh("+08:00")
    store.add(_rule(when={"daily": "08:00"}, do=[{"message": "good morning"}]))
    store.add(_rule(name="night", when={"every_s": 3600}, do=[{"message": "night check {time}"}],
                    **{"if": [{"between": ["22:00", "06:00"]}]}))
    engine.tick(0, T0 - 120)  # 07:58 local
    engine.tick(1000, T0 - 1)
    assert _texts(b) == []
    engine.tick(2000, T0)  # 08:00 at +08:00 (00:00 UTC)
    engine.tick(3000, T0 + 1)
    assert _texts(b) == ["good morning"]
    engine.tick(4000, T0 + 3480)  # 08:58: the hourly rule fires, but 08:58 is outside 22:00-06:00
    assert _texts(b) == []
    engine.tick(5000, T0 + 14 * 3600 + 60)  # 22:01 local: in the window over midnight
    assert _texts(b) == ["night check 22:01"]
    engine.tick(6000, T0 + 86400)  # the next day at 08:00
    assert "good morning" in _texts(b)


def test_a_daily_rule_follows_a_change_of_zone():
    _, b = _fresh("+00:00")
    store.add(_rule(when={"daily": "08:00"}, do=[{"message": "morning"}]))
    engine.tick(0, T0)  # 00:00 UTC: next at 08:00 UTC
    config.set("tz", "+08:00")  # now it is 08:00 local
    engine.tick(1000, T0 + 1)
    engine.tick(2000, T0 + 2)
    assert _texts(b) == []  # 08:00 local has just passed: tomorrow
    engine.tick(3000, T0 + 86400)
    assert _texts(b) == ["morning"]


def test_a_failing_rule_tells_its_chat_once_until_it_works_again():
    root, b = _fresh()
    store.add(_rule(do=[{"pin": "lamp", "value": 1}]))

    def press(ms):
        machine.sim_drive(4, 0)
        engine.tick(ms, T0)
        engine.tick(ms + 60, T0)
        machine.sim_drive(4, 1)
        engine.tick(ms + 120, T0)
        engine.tick(ms + 180, T0)

    engine.tick(0, T0)
    support.write(root + config.HW_POLICY_PATH, '{"deny": [8]}')  # the owner forbids the pin later
    press(1000)
    press(2000)
    press(3000)
    t = _texts(b)
    assert len(t) == 1 and "did not work" in t[0] and "GPIO8" in t[0]
    assert "r1" in engine.failing()
    support.write(root + config.HW_POLICY_PATH, '{}')
    press(4000)
    assert machine.PINS[8]["value"] == 1 and engine.failing() == {} and _texts(b) == []
    support.write(root + config.HW_POLICY_PATH, '{"deny": [8]}')
    press(5000)
    assert len(_texts(b)) == 1  # told again: it had worked in between


def test_messages_per_hour_are_capped_and_the_cap_is_told_once():
    _, b = _fresh()
    store.add(_rule(do=[{"message": "pressed"}]))
    engine.tick(0, T0)
    for i in range(config.RULES_MSG_PER_HOUR + 3):
        machine.sim_drive(4, 0)
        engine.tick(1000 * i + 100, T0)
        engine.tick(1000 * i + 200, T0)
        machine.sim_drive(4, 1)
        engine.tick(1000 * i + 300, T0)
        engine.tick(1000 * i + 400, T0)
    t = _texts(b)
    assert t.count("pressed") == config.RULES_MSG_PER_HOUR
    assert len(t) == config.RULES_MSG_PER_HOUR + 1 and "in the last hour" in t[-1]


def test_a_paused_rule_does_not_fire_until_resumed():
    _, b = _fresh()
    store.add(_rule(when={"every_s": 60}, do=[{"message": "tick"}]))
    engine.tick(0, T0)
    store.pause("r1")
    engine.tick(1000, T0 + 61)
    assert _texts(b) == [] and store.get("r1")["paused"] is True
    store.pause("r1", False)
    engine.tick(2000, T0 + 62)
    engine.tick(3000, T0 + 123)
    assert _texts(b) == ["tick"]


def test_a_prompt_goes_to_the_agent_as_a_job_turn():
    _, b = _fresh()
    store.add(_rule(when={"sensor": "mcu", "above": 70, "every_s": 5}, do=[{"prompt": "the chip is hot: {value}"}]))
    import esp32

    esp32.sim_mcu_temperature(75)
    engine.tick(0, T0)
    m = b.inbound.get(0)
    assert m["channel"] == "cron" and m["chat_id"] == OWNER and m["by"] == OWNER and m["session"] == "cron_rule_r1"
    assert "the chip is hot: 75" in m["text"] and "r1" in m["text"]
    esp32.sim_mcu_temperature(41)


class FakeMqtt:
    """The interface of mimi.net.mqtt (another branch): publish() -> bool, subscribe()."""

    def __init__(self):
        self.subs = []
        self.sent = []

    def subscribe(self, topic):
        self.subs.append(topic)

    def publish(self, topic, payload, retain=False):
        self.sent.append((topic, payload, retain))
        return True


_REAL_MQTT = []  # the module other tests imported, put back after a stand-in


def _with_mqtt(m):
    import mimi.net

    if m is None:
        sys.modules.pop("mimi.net.mqtt", None)
        if "mqtt" in mimi.net.__dict__:
            delattr(mimi.net, "mqtt")
        if _REAL_MQTT and _REAL_MQTT[0] is not None:
            sys.modules["mimi.net.mqtt"] = _REAL_MQTT[0]
            setattr(mimi.net, "mqtt", _REAL_MQTT[0])
    else:
        if not _REAL_MQTT:
            _REAL_MQTT.append(sys.modules.get("mimi.net.mqtt"))
        sys.modules["mimi.net.mqtt"] = m
        setattr(mimi.net, "mqtt", m)


def test_mqtt_rules_subscribe_fire_and_publish():
    _, b = _fresh()
    fake = FakeMqtt()
    _with_mqtt(fake)
    try:
        store.add(_rule(when={"mqtt": "home/door/+", "payload": "open"},
                        do=[{"mqtt": "home/light", "payload": "on", "retain": True}, {"message": "{value}!"}]))
        engine.tick(0, T0)
        assert fake.subs == ["home/door/+"]
        engine.on_mqtt("home/door/front", b"open")
        engine.on_mqtt("home/door/front", b"closed")
        engine.on_mqtt("home/window/x", b"open")
        engine.tick(10, T0)
        assert fake.sent == [("home/light", "on", True)] and _texts(b) == ["open!"]
        engine.tick(20, T0)
        assert fake.subs == ["home/door/+"]  # subscribed once
    finally:
        _with_mqtt(None)
    assert engine.topic_matches("a/#", "a/b/c") and engine.topic_matches("a/+/c", "a/b/c")
    assert not engine.topic_matches("a/+", "a/b/c") and not engine.topic_matches("a/b", "a/c")


def test_mqtt_rules_are_stored_without_a_client_and_fail_told_once():
    _, b = _fresh()
    _with_mqtt(None)
    store.add(_rule(when={"every_s": 60}, do=[{"mqtt": "home/fan", "payload": "on"}]))
    store.add(_rule(name="listener", when={"mqtt": "home/#"}, do=[{"message": "x"}]))
    engine.tick(0, T0)
    engine.tick(1000, T0 + 60)
    engine.tick(2000, T0 + 120)
    t = _texts(b)
    assert len(t) == 1 and "MQTT" in t[0]


def test_an_at_rule_fires_once_then_is_removed():
    _, b = _fresh("+08:00")
    r = store.add(_rule(when={"at": "2026-01-01 09:30"}, do=[{"message": "once, at {time}"}]))
    assert r["when"] == {"at_s": T0 + 5400}  # 09:30 at +08:00 is 01:30 UTC
    engine.tick(0, T0 + 5399)
    assert _texts(b) == []
    engine.tick(1000, T0 + 5400)
    assert _texts(b) == ["once, at 09:30"]
    assert store.list() == []
    engine.tick(2000, T0 + 5401)
    engine.tick(3000, T0 + 9000)
    assert _texts(b) == []


def test_time_rules_wait_for_the_clock():
    _, b = _fresh()
    store.add(_rule(when={"every_s": 60}, do=[{"message": "tick"}]))
    for s in range(0, 600, 60):
        engine.tick(s * 1000, 1000 + s)  # 1970: the clock was never set
    assert _texts(b) == []
    engine.tick(700000, T0)
    engine.tick(760000, T0 + 60)
    assert _texts(b) == ["tick"]


def test_a_ds18b20_trigger_reads_without_blocking_the_io_thread():
    import ds18x20

    _, b = _fresh()
    store.add(_rule(when={"sensor": "ds18b20:9", "below": 4, "every_s": 5}, do=[{"message": "tank {value} °C"}]))
    ds18x20.sim_set(9, 3.5)
    n = ds18x20.CONVERSIONS[0]
    engine.tick(0, T0)  # starts a conversion, returns at once
    assert ds18x20.CONVERSIONS[0] == n + 1 and _texts(b) == []
    engine.tick(500, T0)
    assert _texts(b) == []  # the engine comes back 1 s after starting it (a conversion takes 750 ms)
    engine.tick(1000, T0 + 1)
    assert _texts(b) == ["tank 3.5 °C"]  # read, and the next conversion started
    assert ds18x20.CONVERSIONS[0] == n + 2


def test_an_mqtt_publish_that_fails_is_told_once():
    _, b = _fresh()
    fake = FakeMqtt()
    fake.publish = lambda topic, payload, retain=False: False
    _with_mqtt(fake)
    try:
        store.add(_rule(when={"every_s": 60}, do=[{"mqtt": "home/fan", "payload": "{value}"}]))
        for i in range(4):
            engine.tick(i * 61000, T0 + i * 61)
        t = _texts(b)
        assert len(t) == 1 and "home/fan failed" in t[0]
    finally:
        _with_mqtt(None)


def test_a_press_while_the_loop_was_busy_is_not_lost():
    _, b = _fresh()
    store.add(_rule(do=[{"message": "pressed ({value})"}]))
    engine.tick(0, T0)
    assert machine.PINS[4]["irq"] is not None  # the engine counts the pin's edges
    machine.sim_drive(4, 0)  # pressed and released between two looks a second apart
    machine.sim_drive(4, 1)
    engine.tick(1000, T0)
    assert _texts(b) == ["pressed (0)"]
    engine.tick(1010, T0)
    machine.sim_drive(4, 0)  # a glitch between two looks 10 ms apart: the debounce's to judge
    machine.sim_drive(4, 1)
    engine.tick(1020, T0)
    engine.tick(2000, T0)
    assert _texts(b) == []
    store.remove("r1")
    engine.tick(3000, T0)
    assert machine.PINS[4]["irq"] is None  # no rule watches it now
