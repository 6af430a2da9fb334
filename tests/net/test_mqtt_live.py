"""MQTT and Home Assistant discovery (issue 18, part 3) against a real broker, under CPython
and under MicroPython: mosquitto started here (``brokers.py``; missing, the tests fail, they
do not skip), paho-mqtt playing Home Assistant. The board half of each case is
``cases_mqtt_live.py`` (run in this process, then by the ``micropython`` command); after
each run, this side checks what Home Assistant saw. The whole firmware with
``MIMI_MQTT_URL``, a chat and the ``mqtt_publish`` tool is ``test_mqtt_e2e.py``.
"""
import json
import os
import socket
import time

import pytest

import certgen
import mpcase
from brokers import Broker, Ha

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_mqtt_live.py")
USER, PW = "mimi", "Fake-mqtt-pw-42"
NODE = "7cdfa100511a"  # host_sim's machine.unique_id()
BASE = "mimi/%s/" % NODE
STATUS = BASE + "status"


@pytest.fixture(scope="module")
def env():
    c = certgen.make()
    open_b, auth_b = Broker(tls=c), Broker(USER, PW)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    ha, ha_auth = Ha(open_b), Ha(auth_b)
    ha.on["mimi-test/restart"] = open_b.restart
    ha.on["mimi-test/ready"] = lambda: [ha.send(t, p) for t, p in (
        ("mimi-test/in/a", b"small"), ("mimi-test/in/big", b"x" * 5000), ("mimi-test/in/b", b"after"))]
    e = {"MIMI_T_MQTT": open_b.url, "MIMI_T_MQTT_AUTH": auth_b.url, "MIMI_T_MQTT_PW": PW,
         "MIMI_T_MQTT_BADPW": auth_b.url.replace(PW, "wrong-pw"), "MIMI_T_MQTT_DEAD": "mqtt://127.0.0.1:%d" % dead,
         "MIMI_T_MQTTS": "mqtts://localhost:%d" % open_b.tls_port, "MIMI_T_CA": c["ca"]}
    yield {"vars": e, "ha": ha, "ha_auth": ha_auth, "broker": open_b}
    ha.stop()
    ha_auth.stop()
    open_b.stop()
    auth_b.stop()


def _configs(msgs):
    """{topic: parsed config} of the discovery messages among ``msgs``."""
    return {t: json.loads(p) for t, p, _ in msgs if t.startswith("homeassistant/") and t.endswith("/config")}


def _check_entity(cf, comp, obj):
    """A discovery config as Home Assistant's MQTT integration reads it."""
    assert cf["unique_id"] == "mimi_%s_%s" % (NODE, obj)
    assert cf["state_topic"] == BASE + obj + "/state"
    assert cf["availability_topic"] == STATUS
    assert cf["device"]["identifiers"] == ["mimi_" + NODE] and cf["device"]["name"] and cf["device"]["sw_version"]
    assert cf["origin"]["name"] == "mimi"
    assert ("command_topic" in cf) == (comp == "switch")
    if comp == "switch":
        assert cf["command_topic"] == BASE + obj + "/set"


def _states(ha, n, obj):
    return [p for _, p, _ in ha.since(n, BASE + obj + "/state")]


def after_discovery_states_and_commands(ha, n, broker):
    ha.wait(STATUS, b"offline", after=n)  # the last thing the board said
    cfs = _configs(ha.since(n))
    want = {"homeassistant/switch/mimi_%s/porch_light/config" % NODE: ("switch", "porch_light"),
            "homeassistant/switch/mimi_%s/gpio6/config" % NODE: ("switch", "gpio6"),
            "homeassistant/binary_sensor/mimi_%s/door/config" % NODE: ("binary_sensor", "door")}
    assert set(cfs) == set(want), sorted(cfs)  # GPIO19 (refused by the pin policy) is not offered
    for t, (comp, obj) in want.items():
        _check_entity(cfs[t], comp, obj)
    assert cfs["homeassistant/switch/mimi_%s/gpio6/config" % NODE]["name"] == "灯"
    assert _states(ha, n, "porch_light") == [b"OFF", b"ON", b"OFF"]  # announced, then each command's result
    assert _states(ha, n, "door") == [b"OFF", b"ON", b"OFF"]
    assert _states(ha, n, "gpio6") == [b"OFF", b"ON"]  # switched by a tool: seen without a command
    st = [p for _, p, _ in ha.since(n, STATUS)]
    assert st == [b"online", b"offline"], st
    # Home Assistant restarting subscribes afresh: the configs, the states and the
    # availability are retained, so it sees the device as it is.
    later = Ha(broker)
    try:
        later.wait("homeassistant/binary_sensor/mimi_%s/door/config" % NODE)
        later.wait(BASE + "porch_light/state", b"OFF")
        later.wait(STATUS, b"offline")
        assert all(r for t, _, r in later.since(0) if t.startswith(("homeassistant/", BASE)))
    finally:
        later.stop()


def after_sensor_kinds_become_sensors_with_units(ha, n, broker):
    ha.wait(STATUS, b"offline", after=n)
    cfs = _configs(ha.since(n))
    units = {}
    for t, cf in cfs.items():
        comp, obj = t.split("/")[1], t.split("/")[3]
        _check_entity(cf, comp, obj)
        units[obj] = (comp, cf.get("device_class"), cf.get("unit_of_measurement"))
    assert units == {"porch_light": ("switch", None, None), "greenhouse_temperature": ("sensor", "temperature", "°C"),
                     "greenhouse_humidity": ("sensor", "humidity", "%"), "tank_temperature": ("sensor", "temperature", "°C"),
                     "battery_voltage": ("sensor", "voltage", "mV")}
    assert _states(ha, n, "greenhouse_temperature") == [b"21.5"]
    assert _states(ha, n, "greenhouse_humidity") == [b"40.0"]
    assert _states(ha, n, "tank_temperature") == [b"19.25"]


def after_reconnects_and_announces_again_after_the_broker_restarts(ha, n, broker):
    # online after the restart; offline (the broker's Last Will: the board vanished); online; offline (stop)
    want = [b"online", b"offline", b"online", b"offline"]

    def after_restart():
        msgs = ha.since(n)
        i = [k for k, m in enumerate(msgs) if m[0] == "mimi-test/restart"][0]
        return msgs[i + 1:]

    deadline = time.time() + 10
    while [p for t, p, _ in after_restart() if t == STATUS][-4:] != want and time.time() < deadline:
        time.sleep(0.1)
    msgs = after_restart()
    st = [p for t, p, _ in msgs if t == STATUS]
    assert st[-4:] == want, st
    again = _configs(msgs)  # after the restart: announced again (live or retained)
    assert len(again) == 3, sorted(again)


def after_messages_reach_the_handlers_and_the_rules_engine_and_an_oversized_one_is_dropped(ha, n, broker):
    ha.wait("mimi-test/echo", b"after", after=n)
    assert [p for _, p, _ in ha.since(n, "mimi-test/echo")] == [b"small", b"after"]


def after_tls_checks_the_brokers_certificate(ha, n, broker):
    ha.wait("mimi-test/tls", b"over TLS", after=n)
    assert [p for _, p, _ in ha.since(n, "mimi-test/tls")] == [b"over TLS"]


def after_an_alias_added_to_the_datasheet_is_announced(ha, n, broker):
    ha.wait(STATUS, b"offline", after=n)
    cf = json.loads(ha.wait("homeassistant/switch/mimi_%s/garage_door/config" % NODE, after=n))
    _check_entity(cf, "switch", "garage_door")
    assert _states(ha, n, "garage_door") == [b"OFF"]


def after_doctor_reports_the_broker(ha, n, broker):
    pass  # the board's lines are the point


def after_keep_alive_pings_and_a_silent_broker_is_left(ha, n, broker):
    st = [p for _, p, _ in ha.since(n, STATUS)]
    assert st[:1] == [b"online"], st  # then the Last Will or mimi's own offline, whichever the broker saw


def after_user_and_password(ha, n, broker, ha_auth=None, n_auth=0):
    ha_auth.wait("mimi-test/auth", b"hello", after=n_auth)
    got = [p for _, p, _ in ha_auth.since(n_auth, "mimi-test/auth")]
    assert b"hello" in got and b"nope" not in got, got


def after_mqtt_publish_tool(ha, n, broker):
    ha.wait(STATUS, b"offline", after=n)
    assert [p for _, p, _ in ha.since(n, "home/fan/set")] == [b"ON"]  # not the refused person's OFF
    assert [p for _, p, _ in ha.since(n, "home/count")] == [str(i).encode() for i in range(10)]
    assert not [m for m in ha.since(n) if m[0] == "homeassistant/switch/x/config" or m[0].startswith("$")]
    later = Ha(broker)
    try:
        assert later.wait("home/lamp/state") == b"dim"  # retained
    finally:
        later.stop()


def _after(name, env, n, n_auth):
    fn = globals()["after_" + name[5:]]
    if fn is after_user_and_password:
        return fn(env["ha"], n, env["broker"], env["ha_auth"], n_auth)
    return fn(env["ha"], n, env["broker"])


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env["vars"].items():
        monkeypatch.setenv(k, v)
    n, n_auth = env["ha"].quiet(), env["ha_auth"].quiet()
    env["ha"].answers[:] = [[BASE + "porch_light/state", b"OFF", BASE + "porch_light/set", b"ON"],
                            [BASE + "porch_light/state", b"ON", BASE + "porch_light/set", b"OFF"]]
    from mimi import config

    try:
        mpcase.run_cpython(CASES, name)
    finally:
        config.reset("mqtt_url")
    _after(name, env, n, n_auth)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    n, n_auth = env["ha"].quiet(), env["ha_auth"].quiet()
    env["ha"].answers[:] = [[BASE + "porch_light/state", b"OFF", BASE + "porch_light/set", b"ON"],
                            [BASE + "porch_light/state", b"ON", BASE + "porch_light/set", b"OFF"]]
    ok, out = mpcase.run(CASES, name, env["vars"])
    assert ok, out
    _after(name, env, n, n_auth)
