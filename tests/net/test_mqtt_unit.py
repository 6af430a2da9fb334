"""The ``mqtt_url`` setting and MQTT's pure parts (both runtimes): parsing and refusing a
URL, showing it without its password, topic filters, what the app makes (nothing while
the setting is empty), and the discovery configs' shapes. The wire against a real broker
is ``test_mqtt_live.py``."""
import machine
import support

from mimi import app, boot, cli, config
from mimi.net import hass, mqtt
from mimi.tools import registry

RUNTIMES = ("cpython", "micropython")


def test_parse_both_schemes_ports_and_credentials():
    assert mqtt.parse("mqtt://192.168.1.10") == (False, "192.168.1.10", 1883, None, None)
    assert mqtt.parse(" MQTTS://broker.lan/ ") == (True, "broker.lan", 8883, None, None)
    assert mqtt.parse("mqtt://ann:pw@h:1884") == (False, "h", 1884, "ann", "pw")
    assert mqtt.parse("mqtts://ann@[fd00::1]:8884") == (True, "fd00::1", 8884, "ann", "")
    # %XX for what the URL cannot hold; the last "@" ends the credentials
    assert mqtt.parse("mqtt://a%40b:p%3Aw@d@h") == (False, "h", 1883, "a@b", "p:w@d")


def test_malformed_urls_are_refused_without_showing_the_password():
    for bad in ("", "broker.lan:1883", "http://h", "mqtt://", "mqtt://h:0", "mqtt://h:70000", "mqtt://h:x",
                "mqtt://h/topic", "mqtt://:secretpw@h", "mqtt://u:secretpw@", "mqtt://h st"):
        e = support.raises(ValueError, mqtt.parse, bad)
        assert "secretpw" not in str(e) and "mqtt://" in str(e), bad


def test_the_setting_is_a_secret_shown_without_its_password():
    support.fresh_flash()
    assert config.is_secret("mqtt_url")
    config.set("mqtt_url", "mqtt://ann:secretpw@broker.lan:1883")
    assert config.masked("mqtt_url") == "mqtt://ann:****@broker.lan:1883"
    config.set("mqtt_url", "mqtt://broker.lan")
    assert config.masked("mqtt_url") == "mqtt://broker.lan"
    config.reset("mqtt_url")


def test_the_console_refuses_a_malformed_url_and_keeps_the_old_one():
    support.fresh_flash()
    out = []
    cli.out = out.append
    try:
        cli.set_mqtt_url("mqtt://ann:pw1@broker.lan")
        assert out[-1] == "mqtt_url set to mqtt://ann:****@broker.lan", out
        cli.set_mqtt_url("http://ann:pw2@broker.lan")
        assert out[-1].startswith("error: mqtt_url must be"), out
        assert config.get("mqtt_url") == "mqtt://ann:pw1@broker.lan"
        cli.set_mqtt_url("off")
        assert config.get("mqtt_url") == ""
    finally:
        cli.out = print
        config.reset("mqtt_url")


def test_topic_filters():
    m = mqtt.matches
    assert m("home/+/set", "home/fan/set") and not m("home/+/set", "home/fan/x/set")
    assert m("home/#", "home") and m("home/#", "home/a/b") and m("#", "x/y")
    assert not m("home/fan", "home/fan/set") and not m("home/fan/set", "home/fan")
    assert m("+/+", "a/b") and not m("+", "a/b")


def _app(url):
    support.fresh_flash()
    if app.running():
        app.stop()
    app.forget()
    boot.state["safe"] = False
    mqtt._cl[0] = None
    del mqtt.handlers[:], mqtt.on_connect[:], mqtt.topics[:]
    registry.clear()
    if url:
        config.set("mqtt_url", url)
    assert app.init(agent_factory=support.Echo)


def test_the_app_makes_nothing_while_the_setting_is_empty():
    _app("")
    assert app.state["mqtt"] is None and mqtt.client() is None
    assert registry.get("mqtt_publish") is None and "read_file" in registry.names()
    from mimi import commands

    assert "MQTT" not in commands.status()


def test_a_malformed_setting_leaves_the_rest_running():
    _app("mqtt://h:99999")  # stored by hand (the console and the simulator refuse it)
    assert app.state["mqtt"] is None and registry.get("mqtt_publish") is None
    assert "read_file" in registry.names()
    config.reset("mqtt_url")


def test_with_the_setting_the_app_hooks_in_mqtt_hass_and_the_tool():
    _app("mqtt://ann:secretpw@127.0.0.1:1")
    try:
        assert app.state["mqtt"] is mqtt and mqtt.client().state == "connecting"
        assert hass.announce in mqtt.on_connect and hass.on_message in mqtt.handlers
        assert mqtt.topics == ["mimi/7cdfa100511a/+/set", "homeassistant/status"]
        assert registry.get("mqtt_publish") is not None
        from mimi import commands

        line = [ln for ln in commands.status().split("\n") if ln.startswith("MQTT: ")]
        assert line == ["MQTT: mqtt 127.0.0.1:1 as ann, connecting, 0 in / 0 out"], line
    finally:
        mqtt._cl[0] = None
        app.forget()
        config.reset("mqtt_url")


def test_discovery_configs_for_the_seed_board():
    # the seed's datasheet: the RGB LED under three aliases (one entity), the BOOT button
    support.fresh_flash()
    import os

    seed = os.getenv("MIMI_T_SEED") or "spiffs_seed"
    with open(seed + "/datasheets/esp32-s3-devkitc-1.md", "rb") as f:
        support.write(support.fresh_flash() + "/data/datasheets/esp32-s3-devkitc-1.md", f.read())
    from mimi.hw import datasheets

    datasheets.forget()
    machine.sim_reset()
    e = hass.entities()
    assert sorted(e) == ["boot_button", "onboard_led"], sorted(e)
    sw = hass.config_of("onboard_led")
    assert sw["command_topic"] == "mimi/7cdfa100511a/onboard_led/set"
    assert sw["device"]["model"] == "esp32-s3-devkitc-1" and sw["name"] == "onboard led"
    bs = hass.config_of("boot_button")
    assert "command_topic" not in bs and bs["state_topic"] == "mimi/7cdfa100511a/boot_button/state"
    assert sw["device"] == bs["device"]  # one device in Home Assistant
