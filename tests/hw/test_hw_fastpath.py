"""The fast path: plain on/off commands on a known alias run without the LLM (issue 7,
seed 004; both runtimes)."""
import machine

from mimi import config
from mimi.hw import datasheets as ds, fastpath, gpio, pins
import support

RUNTIMES = ("cpython", "micropython")

_SHEET = ("# Board\n\n## Pin Aliases\n| alias | pin | kind |\n|---|---|---|\n| porch light | 4 |\n| 灯 | 5 |\n"
          "| 客厅灯 | 6 |\n| rgb_led | 38 | ws2812 |\n| boot_button | 0 | input |\n| usb_lamp | 19 |\n| fan | 21 |\n")


def _fresh(policy=None, sheet=_SHEET):
    root = support.fresh_flash()
    if sheet is not None:
        support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", sheet)
    if policy is not None:
        support.write(root + config.HW_POLICY_PATH, policy)
    ds.forget()
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    return root


def _level(pin):
    return machine.PINS[pin]["value"] if pin in machine.PINS and machine.PINS[pin]["mode"] == machine.Pin.OUT else None


def test_english_commands_switch_the_alias():
    _fresh()
    for text, level in (("turn on the porch light", 1), ("porch light off", 0), ("Switch on porch light!", 1),
                        ("turn the porch light off please", 0), ("power on my porch light", 1),
                        ("shut off the porch light.", 0), ("Porch light ON now", 1)):
        reply = fastpath.try_handle({"text": text, "channel": "telegram", "chat_id": "1"})
        assert reply == "Turned porch light (GPIO4) %s." % ("on" if level else "off"), (text, reply)
        assert _level(4) == level, text


def test_chinese_commands_switch_the_alias_and_reply_in_chinese():
    _fresh()
    assert fastpath.try_handle("开灯") == "已打开 灯 (GPIO5)。" and _level(5) == 1
    assert fastpath.try_handle("关灯") == "已关闭 灯 (GPIO5)。" and _level(5) == 0
    assert fastpath.try_handle("请打开客厅灯") == "已打开 客厅灯 (GPIO6)。" and _level(6) == 1
    assert fastpath.try_handle("把客厅灯关了") == "已关闭 客厅灯 (GPIO6)。" and _level(6) == 0
    assert fastpath.try_handle("客厅灯开一下！") == "已打开 客厅灯 (GPIO6)。" and _level(6) == 1
    assert fastpath.try_handle("关闭客厅灯吧") is not None and _level(6) == 0


def test_toggle_flips_what_mimi_drives():
    _fresh()
    assert fastpath.try_handle("toggle the fan") == "Turned fan (GPIO21) on."
    assert fastpath.try_handle("toggle the fan") == "Turned fan (GPIO21) off."
    assert _level(21) == 0


def test_an_rgb_alias_lights_the_led_instead_of_setting_a_level():
    _fresh()
    assert fastpath.try_handle("turn on the rgb led") == "Turned rgb led (GPIO38) on."
    r, g, b = config.HW_RGB_ON
    assert machine.PINS[38]["bits"] == bytes((g, r, b))
    fastpath.try_handle("rgb led off")
    assert machine.PINS[38]["bits"] == bytes(3)


def test_anything_not_plainly_a_command_goes_to_the_agent():
    _fresh()
    for text in ("is the porch light on?", "porch light on？", "don't turn on the porch light", "do not turn off the fan",
                 "turn on the porch light at 7pm", "turn on the porch light and the fan", "turn on the garage light",
                 "porch light", "turn on", "on", "what is the porch light", "客厅灯开了吗", "客厅灯开了", "客厅灯开了一下", "不要关灯", "别开灯",
                 "关掉车库灯", "tell me about the porch light", "", "turn on the porch light " + "x" * 100):
        assert fastpath.try_handle({"text": text}) is None, text
    assert machine.PINS == {}  # nothing was touched
    assert fastpath.try_handle({"chat_id": "1"}) is None  # no text at all
    assert fastpath.try_handle(None) is None


def test_refusals_name_the_rule_and_touch_nothing():
    _fresh()
    reply = fastpath.try_handle("turn on the usb lamp")
    assert reply.startswith("I did not switch usb lamp (GPIO19): ") and "rule usb" in reply
    assert 19 not in machine.PINS
    _fresh('{"deny": [4]}')
    reply = fastpath.try_handle("porch light off")
    assert "rule owner_deny" in reply and 4 not in machine.PINS
    reply = fastpath.try_handle("boot button on")
    assert reply.startswith("boot button (GPIO0) is an input") and machine.PINS[0]["mode"] == machine.Pin.IN


def test_channels_without_gpio_get_no_fast_path():
    _fresh()
    assert fastpath.try_handle({"text": "turn on the porch light"}, denied_groups=("file", "gpio")) is None
    assert 4 not in machine.PINS
    assert fastpath.try_handle({"text": "turn on the porch light"}, denied_groups=("file",)) is not None


def test_group_chats_follow_the_agents_group_rule():
    from mimi import config as cfg

    _fresh()
    group = {"text": "turn on the porch light", "chat_id": "-100", "is_group": True}
    assert fastpath.try_handle(group) is None and 4 not in machine.PINS
    cfg.set("group_tools", "gpio")  # the owner allows GPIO in group chats
    assert fastpath.try_handle(group) == "Turned porch light (GPIO4) on."
    cfg.set("group_tools", "")
    assert fastpath.try_handle({"text": "porch light off", "chat_id": "1"}) == "Turned porch light (GPIO4) off."


def test_no_datasheets_means_no_aliases_and_no_fast_path():
    _fresh(sheet=None)
    assert fastpath.try_handle("turn on the porch light") is None


def test_parse_alone():
    known = {"porch_light": (4, "out"), "灯": (5, "out")}
    assert fastpath.parse("Turn on the porch light", known) == ("on", "porch_light", False)
    assert fastpath.parse("关灯", known) == ("off", "灯", True)
    assert fastpath.parse("开关灯", known) is None  # "switch light": not a command form we know
    assert fastpath.parse("toggle porch light", known) == ("toggle", "porch_light", False)
    # negations are whole English words: "knot" holds "not" but negates nothing
    known["knot_light"] = (6, "out")
    assert fastpath.parse("turn on the knot light", known) == ("on", "knot_light", False)
    assert fastpath.parse("do not turn on the knot light", known) is None
