"""The GPIO tools and hardware_docs through the tool registry (issue 7; both runtimes)."""
import machine

from mimi import config
from mimi.hw import datasheets as ds, gpio, pins
from mimi.tools import gpio as gpio_tools, registry
import support

RUNTIMES = ("cpython", "micropython")

CTX = {"channel": "telegram", "chat_id": "1", "session": "tg_1", "bus": None}
_SHEET = ("# Board\n\n## Pin Aliases\n| porch light | 4 |\n| rgb_led | 38 | ws2812 |\n\n"
          "## Onboard RGB LED\nThe RGB LED is a WS2812 on GPIO38: use gpio_rgb.\n")


def _fresh():
    root = support.fresh_flash()
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", _SHEET)
    ds.forget()
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    registry.clear()
    gpio_tools.register_all()
    return root


def test_tools_are_registered_in_their_groups():
    _fresh()
    names = registry.names()
    for n in ("gpio_write", "gpio_read", "gpio_read_all", "gpio_pwm", "gpio_rgb"):
        assert n in names and registry.get(n).group == "gpio"
    assert registry.get("hardware_docs").group == "file"
    offered = [t.name for t in registry.offered(("gpio",))]
    assert "gpio_write" not in offered and "hardware_docs" in offered
    assert [t.name for t in registry.offered(("gpio", "file"))] == []


def test_write_then_read_keeps_the_output_driving():
    _fresh()
    assert registry.execute("gpio_write", {"pin": 4, "level": 1}, CTX) == ("GPIO4 (porch_light): output, level 1", False)
    assert registry.execute("gpio_read", {"pin": 4}, CTX) == ("GPIO4 (porch_light): output, level 1", False)
    assert machine.PINS[4]["mode"] == machine.Pin.OUT and machine.PINS[4]["value"] == 1
    text, err = registry.execute("gpio_read", {"pin": 7, "pull": "up"}, CTX)
    assert (text, err) == ("GPIO7: input, level 1", False)


def test_refused_pins_and_bad_arguments_are_error_results():
    _fresh()
    text, err = registry.execute("gpio_write", {"pin": 19, "level": 1}, CTX)
    assert err and text.startswith("Error: gpio_write: GPIO19 refused (rule usb)")
    text, err = registry.execute("gpio_pwm", {"pin": 30, "duty": 50}, CTX)
    assert err and "rule flash" in text
    assert registry.execute("gpio_write", {"pin": 4, "level": 3}, CTX)[1]
    text, err = registry.execute("gpio_write", {"pin": "garage door", "level": 1}, CTX)
    assert err and "neither a GPIO number nor a pin alias (aliases: porch_light, rgb_led)" in text
    assert registry.execute("gpio_write", {"pin": 4.0, "level": 1}, CTX)[1]
    text, err = registry.execute("gpio_pwm", {"pin": 5, "duty": 150}, CTX)
    assert err and "0-100" in text
    assert 19 not in machine.PINS and 30 not in machine.PINS and 5 not in machine.PINS


def test_a_pin_may_be_named_by_alias_or_as_text():
    _fresh()
    assert registry.execute("gpio_write", {"pin": "porch light", "level": 1}, CTX) == \
        ("GPIO4 (porch_light): output, level 1", False)
    assert registry.execute("gpio_read", {"pin": "GPIO4"}, CTX) == ("GPIO4 (porch_light): output, level 1", False)
    assert registry.execute("gpio_rgb", {"pin": "rgb_led", "r": 1, "g": 2, "b": 3}, CTX)[0].startswith("GPIO38")
    assert machine.PINS[4]["value"] == 1 and machine.PINS[38]["bits"] == bytes((2, 1, 3))


def test_strapping_pin_result_carries_the_warning():
    _fresh()
    text, err = registry.execute("gpio_write", {"pin": 0, "level": 1}, CTX)
    assert not err and "\nwarning: GPIO0 (rule strapping)" in text


def test_pwm_rgb_and_read_all():
    _fresh()
    assert registry.execute("gpio_pwm", {"pin": 5, "duty": 12.5, "freq_hz": 500}, CTX) == \
        ("GPIO5: PWM 12.5% at 500 Hz", False)
    assert machine.PINS[5]["pwm"] == {"freq": 500, "duty_u16": 8192}
    assert registry.execute("gpio_rgb", {"pin": 38, "r": 0, "g": 0, "b": 40}, CTX) == \
        ("GPIO38 (rgb_led): RGB 0,0,40", False)
    text, err = registry.execute("gpio_read_all", {}, CTX)
    assert not err
    assert text.startswith("GPIO5: PWM 12.5% at 500 Hz\nGPIO38 (rgb_led): RGB 0,0,40\npolicy:\nallowed: GPIO ")
    assert "refused (usb): 19-20" in text


def test_hardware_docs_searches_and_says_what_exists_when_nothing_matches():
    _fresh()
    text, err = registry.execute("hardware_docs", {"query": "rgb led"}, CTX)
    assert not err and "rgb_led = GPIO38 (ws2812)" in text and "## Onboard RGB LED" in text
    text, err = registry.execute("hardware_docs", {"query": "stepper motor"}, CTX)
    assert not err and text.startswith("nothing matched 'stepper motor'.")
    assert "esp32-s3-devkitc-1.md" in text and "porch_light=GPIO4" in text
    assert registry.execute("hardware_docs", {"query": "  "}, CTX)[1]
