"""Board half of the MQTT tests (``test_mqtt_live.py`` runs each function under CPython and
under MicroPython) against a real mosquitto it started, with paho-mqtt in the test process
playing Home Assistant. What paho must see is checked there, after each function returns;
here, what the board does: its pins (host_sim's ``machine`` stand-in), its client's state.

The I/O loop is played by ``_run``: ``mqtt.tick`` and ``hass.tick`` as ``mimi.app`` calls
them. Environment: MIMI_T_MQTT (the open broker), MIMI_T_MQTT_AUTH (the broker with a
password file, as ``mqtt://user:pass@...``), MIMI_T_MQTT_BADPW (that broker, a wrong
password), MIMI_T_MQTT_PW (the right password), MIMI_T_MQTT_DEAD (nothing listens there),
MIMI_T_MQTTS (the open broker's TLS listener, ``mqtts://localhost:port``), MIMI_T_CA (its CA).
Topics the test process acts on: ``mimi-test/restart`` (it restarts the open broker).
"""
import os

import machine

from mimi import config, seam
from mimi.net import hass, mqtt
import support

SHEET = """# Test board

## Pin Aliases

| alias | pin | kind |
|---|---|---|
| porch_light | 4 | out |
| door | 5 | input |
| 灯 | 6 | out |
| usb_dm | 19 | out |
"""


def _env(name):
    v = os.getenv(name)
    assert v, name + " is not set"
    return v


def _fresh(url, sheet=SHEET):
    """A new flash with ``sheet`` as the datasheet, ``mqtt_url`` = ``url``, no client."""
    root = support.fresh_flash()
    support.write(root + "/data/datasheets/generic.md", sheet)
    machine.sim_reset()
    from mimi.hw import datasheets, gpio, pins

    datasheets.forget()
    pins.reload()
    gpio.reset()
    old = mqtt.client()
    if old is not None:
        old.stop()
    mqtt._cl[0] = None
    del mqtt.handlers[:], mqtt.on_connect[:], mqtt.topics[:]
    hass._ents.clear()
    config.set("mqtt_url", url)
    c = mqtt.init()
    hass.start()
    return c


def _run(ms, until=None):
    """Play the I/O loop for up to ``ms``, or until ``until()`` is true (then True)."""
    t0 = seam.ticks_ms()
    while seam.ticks_diff(seam.ticks_ms(), t0) < ms:
        now = seam.ticks_ms()
        mqtt.tick(now)
        hass.tick(now)
        if until is not None and until():
            return True
        seam.wait_ms(10)
    return False


def _level(pin):
    st = machine.PINS.get(pin)
    return st and st["value"]


def test_discovery_states_and_commands():
    # test_mqtt_live: paho answers the porch light's first state (OFF) with ON, then ON with OFF.
    c = _fresh(_env("MIMI_T_MQTT"))
    assert c.state == "connecting" and c.id == "7cdfa100511a"
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    assert sorted(hass._ents) == ["door", "gpio6", "porch_light"]  # GPIO19 (USB) is refused by the policy
    assert _run(10000, lambda: _level(4) == 1), "Home Assistant's ON did not switch GPIO4: %s" % c.describe()
    assert _run(10000, lambda: _level(4) == 0), "Home Assistant's OFF did not switch GPIO4 back"
    machine.sim_drive(5, 1)  # the door opens: paho sees door ON
    _run(1500)
    machine.sim_drive(5, 0)
    _run(1500)
    from mimi.hw import gpio

    gpio.write(6, 1)  # a tool or a rule switches a pin: Home Assistant sees it
    _run(1000)
    assert c.got >= 2 and c.error is None, c.describe()
    mqtt.stop()  # offline, said by mimi (no Last Will)
    assert c.state == "stopped"


def test_sensor_kinds_become_sensors_with_units():
    # The real mimi.hw.sensors on the stand-ins' values, as Home Assistant sees them.
    from mimi.hw import datasheets, sensors
    import dht
    import ds18x20
    import machine

    kinds = {"porch_light": (4, "out"), "greenhouse": (8, "dht22"), "tank": (9, "ds18b20"), "battery": (1, "adc")}
    real = datasheets.aliases
    datasheets.aliases = lambda board=None: kinds
    sensors.forget()
    try:
        c = _fresh(_env("MIMI_T_MQTT"))  # the stand-ins fresh too: the values after it
        dht.sim_set(8, 21.5, 40.0)
        ds18x20.sim_set(9, 19.25)
        machine.sim_adc(1, 1650)
        # Home Assistant's reads never wait for a DS18B20's 750 ms conversion (the I/O
        # thread): they take the last reading, made here as a rule's would be
        assert sensors.read("tank") == 19.25
        assert _run(5000, lambda: c.state == "connected"), c.describe()
        _run(1000)
        assert sorted(hass._ents) == ["battery_voltage", "greenhouse_humidity", "greenhouse_temperature",
                                      "porch_light", "tank_temperature"]
        cf = hass.config_of("greenhouse_temperature")
        assert (cf["device_class"], cf["unit_of_measurement"], cf["state_class"]) == ("temperature", "°C", "measurement")
        assert "command_topic" not in cf
        assert hass.config_of("battery_voltage")["unit_of_measurement"] == "mV"
        assert hass._value(hass._ents["greenhouse_temperature"]) == "21.5"
        h = hass._value(hass._ents["greenhouse_humidity"])
        assert h == "40.0", h
        v = hass._value(hass._ents["battery_voltage"])
        assert abs(float(v) - 1650) < 5, v
        mqtt.stop()
    finally:
        datasheets.aliases = real
        dht.sim_set(8, None)
        sensors.forget()


def test_reconnects_and_announces_again_after_the_broker_restarts():
    c = _fresh(_env("MIMI_T_MQTT"))
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    assert mqtt.publish("mimi-test/restart", "now")  # the test process restarts mosquitto
    assert _run(10000, lambda: c.state != "connected"), "the broker's end was not noticed"
    assert c.error, c.describe()
    assert _run(20000, lambda: c.state == "connected" and c.connects == 2), c.describe()
    # after the restart (mosquitto here keeps nothing) the configs and states are there again
    _run(1000)
    gone = c.mq.sock  # the board vanishes without a word: the broker says its Last Will
    gone.conn.close()
    assert _run(5000, lambda: c.state != "connected"), c.describe()
    assert _run(10000, lambda: c.state == "connected" and c.connects == 3), c.describe()
    mqtt.stop()


def test_user_and_password():
    c = _fresh(_env("MIMI_T_MQTT_AUTH"))
    assert c.user == "mimi" and c.password == _env("MIMI_T_MQTT_PW")
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    assert mqtt.publish("mimi-test/auth", "hello")
    assert _env("MIMI_T_MQTT_PW") not in c.describe() and "as mimi" in c.describe()
    mqtt.stop()
    c = _fresh(_env("MIMI_T_MQTT_BADPW"))
    _run(2000, lambda: c.state == "waiting")
    assert c.state == "waiting" and "the broker refused" in c.error, c.describe()
    assert c.backoff_ms == 120000  # refused credentials: no hammering
    assert not mqtt.publish("mimi-test/auth", "nope")  # not connected: False, nothing queued
    c = _fresh(_env("MIMI_T_MQTT_DEAD"))
    t0 = seam.ticks_ms()
    mqtt.tick(t0)
    assert seam.ticks_diff(seam.ticks_ms(), t0) < 5000  # a refused connection costs the loop little
    assert c.state == "waiting" and c.backoff_ms == 2000 and c.error, c.describe()
    mqtt.tick(seam.ticks_ms())  # within the back-off: no new attempt
    assert c.backoff_ms == 2000
    mqtt._cl[0] = None


def test_mqtt_publish_tool():
    from mimi.tools import mqtt_tools, registry

    c = _fresh(_env("MIMI_T_MQTT"))
    del mqtt_tools._times[:]  # the last minute's messages (an earlier run's, in this process)
    registry.clear()
    mqtt_tools.register_all()
    owner = {"channel": "cli", "chat_id": config.CLI_CHAT_ID}
    assert [t.name for t in registry.offered()] == ["mqtt_publish"]
    out, err = registry.execute("mqtt_publish", {"topic": "home/fan/set", "payload": "ON"}, owner)
    assert err and "not connected" in out, out
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    out, err = registry.execute("mqtt_publish", {"topic": "home/fan/set", "payload": "ON"}, owner)
    assert not err and out == "published 2 bytes to home/fan/set", out
    out, err = registry.execute("mqtt_publish", {"topic": "home/lamp/state", "payload": "dim", "retain": True}, owner)
    assert not err and out.endswith("(retained)"), out
    for args, why in (({"topic": "homeassistant/switch/x/config", "payload": "{}"}, "kept for mimi"),
                      ({"topic": "mimi/%s/porch_light/set" % c.id, "payload": "ON"}, "kept for mimi"),
                      ({"topic": "home/+/set", "payload": "ON"}, "no + or #"),
                      ({"topic": "$SYS/x", "payload": "1"}, "no leading $"),
                      ({"topic": "home/x", "payload": "x" * 1025}, "over 1024 bytes"),
                      ({"topic": "home/x", "payload": 5}, "must be string")):
        out, err = registry.execute("mqtt_publish", args, owner)
        assert err and why in out, (args, out)
    person = {"channel": "telegram", "chat_id": "555"}
    config.set("owner_chat", "111")
    out, err = registry.execute("mqtt_publish", {"topic": "home/fan/set", "payload": "OFF"}, person)
    assert err and "only the owner" in out, out
    turn = {"channel": "cli", "chat_id": config.CLI_CHAT_ID}  # a new turn (the two above were one)
    n = 0
    while True:
        out, err = registry.execute("mqtt_publish", {"topic": "home/count", "payload": str(n)}, turn)
        if err:
            break
        n += 1
    assert n == 10 and "too many" in out, (n, out)  # a turn's limit
    _run(500)
    registry.clear()
    mqtt.stop()
    config.set("mqtt_url", "")
    assert registry.get("mqtt_publish") is None
    mqtt_tools.register_all()
    assert registry.offered() == []  # mqtt_url unset: not offered
    registry.clear()


def test_messages_reach_the_handlers_and_the_rules_engine_and_an_oversized_one_is_dropped():
    # test_mqtt_live: on mimi-test/ready paho sends a small message, one of 5000 bytes, another small one.
    import sys

    got, rules = [], []

    class Engine:  # the rules branch's mimi.rules.engine, as mimi.net.mqtt calls it
        @staticmethod
        def on_mqtt(topic, payload):
            if mqtt.matches("mimi-test/in/#", topic):  # every message comes here (the switches' commands too)
                rules.append((topic, payload))
                mqtt.publish("mimi-test/echo", payload)  # a handler may publish: no lock is held

    sys.modules["mimi.rules"] = Engine
    sys.modules["mimi.rules.engine"] = Engine
    try:
        c = _fresh(_env("MIMI_T_MQTT"))
        mqtt.handlers.append(lambda t, p: mqtt.matches("mimi-test/in/#", t) and got.append((t, p)))
        mqtt.subscribe("mimi-test/in/#")
        assert _run(5000, lambda: c.state == "connected"), c.describe()
        assert mqtt.publish("mimi-test/ready", "1")
        assert _run(10000, lambda: len(got) >= 2), got
        _run(300)
        assert got == [("mimi-test/in/a", b"small"), ("mimi-test/in/b", b"after")], got
        assert rules == got
        assert c.state == "connected" and c.connects == 1, c.describe()  # the big one cost no reconnect
        mqtt.stop()
    finally:
        del sys.modules["mimi.rules"], sys.modules["mimi.rules.engine"]


def test_tls_checks_the_brokers_certificate():
    from mimi.net import certs

    url = _env("MIMI_T_MQTTS")
    c = _fresh(url.replace("localhost", "127.0.0.1"))  # the certificate names localhost
    certs.reset()
    support.write(support.fresh_flash() + "/data/certs/ca.pem", support.read(_env("MIMI_T_CA")))
    config.set("mqtt_url", url)
    _run(3000, lambda: c.state == "waiting")
    assert c.state == "waiting" and "certificate was refused" in c.error, c.describe()
    mqtt._cl[0] = None
    c = mqtt.init()
    assert (c.tls, c.host) == (True, "localhost")
    assert _run(10000, lambda: c.state == "connected"), c.describe()
    assert mqtt.publish("mimi-test/tls", "over TLS")
    assert "mqtts localhost" in c.describe()
    mqtt.stop()
    certs.reset()


def test_an_alias_added_to_the_datasheet_is_announced():
    # test_mqtt_live: paho sees the new alias's config and state without a reconnect.
    c = _fresh(_env("MIMI_T_MQTT"))
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    _run(300)
    root = seam.real_path("")
    support.write(root + "/data/datasheets/generic.md", SHEET + "| garage_door | 7 | out |\n")
    hass._due[1] = seam.ticks_ms()  # the minute's look at the datasheets, now
    assert _run(3000, lambda: "garage_door" in hass._ents), sorted(hass._ents)
    assert c.connects == 1
    _run(300)
    mqtt.stop()


def test_doctor_reports_the_broker():
    from mimi import doctor

    def lines():
        return [level + " " + text for level, text in doctor._mqtt()]

    _fresh(_env("MIMI_T_MQTT"))
    mqtt.stop()  # the assistant stopped: the doctor makes its own connection
    got = lines()
    assert len(got) == 1 and got[0].startswith("OK MQTT 127.0.0.1:") and "connected in" in got[0], got
    assert mqtt.client().state == "stopped"  # and closed it again
    _run(300)
    c = _fresh(_env("MIMI_T_MQTT"))
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    assert lines() == ["OK MQTT (the assistant's): " + c.describe()]
    mqtt.stop()
    _fresh(_env("MIMI_T_MQTT_BADPW"))
    mqtt.stop()
    got = lines()
    assert len(got) == 1 and got[0].startswith("FIX MQTT: ") and "the broker refused: not authorised" in got[0], got
    assert _env("MIMI_T_MQTT_PW") not in got[0] and "wrong-pw" not in got[0]
    mqtt._cl[0] = None
    config.set("mqtt_url", "mqtt://h:99999")
    got = lines()
    assert len(got) == 1 and got[0].startswith("FIX MQTT: mqtt_url must be"), got
    config.set("mqtt_url", "")
    assert lines() == []


def test_keep_alive_pings_and_a_silent_broker_is_left():
    c = _fresh(_env("MIMI_T_MQTT"))
    assert _run(5000, lambda: c.state == "connected"), c.describe()
    _run(300)
    link = c.mq.sock
    now = seam.ticks_ms()
    link.rx_ms = seam.ticks_add(now, -31000)  # heard nothing for 31 s (we kept publishing)
    c.ping_ms = seam.ticks_add(now, -31000)
    mqtt.tick(seam.ticks_ms())
    assert seam.ticks_diff(seam.ticks_ms(), link.tx_ms) < 1000  # a PINGREQ went out...
    assert _run(3000, lambda: seam.ticks_diff(seam.ticks_ms(), link.rx_ms) < 3000)  # ...and its PINGRESP came
    assert c.state == "connected"
    link.rx_ms = seam.ticks_add(seam.ticks_ms(), -91000)  # a broker silent past 1.5 keep-alives
    mqtt.tick(seam.ticks_ms())
    assert c.state == "waiting" and "no answer from the broker" in c.error, c.describe()
    mqtt.stop()
