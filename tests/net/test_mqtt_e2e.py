"""MQTT as a person uses it (issue 18, part 3): ``python -m host_sim run`` on both runtimes
with ``MIMI_MQTT_URL`` pointing at a real mosquitto, the fake Telegram and the fake LLM,
nothing of the firmware replaced; paho-mqtt plays Home Assistant.

Home Assistant finds the board's device (the seed datasheet: the RGB LED as a switch, the
BOOT button as a binary sensor), switches the LED and sees its state; a chat asks for the
fan and the model's ``mqtt_publish`` reaches the broker; ``/status`` shows the broker;
stopping the board says ``offline``.
"""
import json

import pytest

pytest.importorskip("host_sim.fakes.telegram")
pytest.importorskip("host_sim.fakes.llm")

from brokers import Broker, Ha  # noqa: E402
from host_sim.fakes.llm import Reply  # noqa: E402
from host_sim.harness import Sim  # noqa: E402

NODE = "7cdfa100511a"  # host_sim's machine.unique_id()
BASE = "mimi/%s/" % NODE


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def test_home_assistant_and_a_chat_reach_the_board_over_mqtt(runtime, tmp_path):
    broker = Broker("mimi", "Fake-mqtt-pw-7")
    ha = Ha(broker)
    sim = Sim(str(tmp_path), runtime, env={"MIMI_MQTT_URL": broker.url})
    try:
        sim.start()
        led = json.loads(ha.wait("homeassistant/switch/mimi_%s/onboard_led/config" % NODE, timeout_s=60))
        button = json.loads(ha.wait("homeassistant/binary_sensor/mimi_%s/boot_button/config" % NODE))
        assert led["command_topic"] == BASE + "onboard_led/set" and led["availability_topic"] == BASE + "status"
        assert button["state_topic"] == BASE + "boot_button/state" and "command_topic" not in button
        assert led["device"] == button["device"] and led["device"]["model"] == "esp32-s3-devkitc-1"
        ha.wait(BASE + "status", b"online")
        ha.wait(BASE + "onboard_led/state", b"OFF")
        n = len(ha.seen)
        ha.send(BASE + "onboard_led/set", b"ON")  # the switch in Home Assistant's dashboard
        ha.wait(BASE + "onboard_led/state", b"ON", after=n)

        sim.llm.script(Reply.tools([("mqtt_publish", {"topic": "home/fan/set", "payload": "ON"})]),
                       Reply.text("The fan is on."))
        sim.send("turn on the fan")
        assert sim.wait_texts(1) == ["The fan is on."]
        assert ha.wait("home/fan/set") == b"ON"
        assert "published 2 bytes to home/fan/set" in json.dumps(sim.llm_requests()[-1]["json"])

        sim.send("/status")
        status = sim.wait_texts(2)[-1]
        assert "MQTT: mqtt 127.0.0.1:%d as mimi, connected" % broker.port in status, status
        assert "Fake-mqtt-pw-7" not in status and "Fake-mqtt-pw-7" not in sim.log()
        n = len(ha.seen)
        sim.stop_board()
        ha.wait(BASE + "status", b"offline", after=n)
    finally:
        sim.stop()
        ha.stop()
        broker.stop()


def test_the_simulator_takes_what_the_board_takes():
    # MIMI_MQTT_URL is checked before boot (launcher) as the board parses it (mimi.net.mqtt)
    from host_sim import launcher
    from mimi.net import mqtt

    good = ("mqtt://192.168.1.10", "mqtts://broker.lan:8884/", "mqtt://ann:Fake-pw@h:1884", "mqtt://[fd00::1]")
    bad = ("broker.lan:1883", "http://h", "mqtt://", "mqtt://h:0", "mqtt://h:70000", "mqtt://h/topic",
           "mqtt://:Fake-pw@h", "mqtt://h st")
    for url in good:
        assert launcher.settings_from_env({"MIMI_MQTT_URL": url}) == {"mqtt_url": url}
        mqtt.parse(url)
    for url in bad:
        with pytest.raises(ValueError) as e:
            launcher.settings_from_env({"MIMI_MQTT_URL": url})
        assert "MIMI_MQTT_URL" in str(e.value) and "Fake-pw" not in str(e.value)
        with pytest.raises(ValueError):
            mqtt.parse(url)
    assert launcher.settings_from_env({"MIMI_MQTT_URL": "off"}) == {"mqtt_url": ""}
