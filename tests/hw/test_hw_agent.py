"""The hardware parts inside the agent loop: fast path first, notes in the context, GPIO
tools withheld in group chats, refusals reaching the model (issue 7; both runtimes)."""
import json

import machine

from mimi import bus as busmod, config
from mimi.agent import loop
from mimi.hw import datasheets as ds, gpio, pins
from mimi.storage import sessions
from mimi.tools import gpio as gpio_tools, registry
import support

RUNTIMES = ("cpython", "micropython")

_SHEET = ("# Board\n\n## Pin Aliases\n| porch light | 4 |\n| rgb_led | 38 | ws2812 |\n| usb_lamp | 19 |\n\n"
          "## Onboard RGB LED\nThe RGB LED is a WS2812 on GPIO38.\n")


class Ctx:
    def __init__(self):
        self.buf = bytearray(4096)
        self.n = 0
        self.extras = []

    def build(self, msg, extra=None):
        self.extras.append(extra(2048) if callable(extra) else extra)
        self.buf[:6] = b"system"
        self.n = 6
        return self.n

    def view(self):
        return memoryview(self.buf)[:self.n]


class Provider:
    """Pops scripted replies; records what each request offered and carried."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, system, messages, tools, max_tokens):
        self.requests.append({"tools": [t.name for t in tools], "messages": json.loads(json.dumps(messages))})
        return self.replies.pop(0)


def _text(t):
    return {"text": t, "tool_calls": [], "stop": "end", "usage": (1, 1)}


def _call(name, args):
    return {"text": "", "tool_calls": [{"id": "toolu_1", "name": name, "input": args}], "stop": "tool_use",
            "usage": (1, 1)}


def _fresh(*replies):
    root = support.fresh_flash()
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", _SHEET)
    ds.forget()
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    registry.clear()
    gpio_tools.register_all()
    p = Provider(*replies)
    ctx = Ctx()
    return loop.Agent(busmod.Bus(8, 64), ctx, lambda: p), p, ctx


def _msg(text, chat="42", **kw):
    m = {"channel": "telegram", "chat_id": chat, "text": text, "session": "tg_" + chat}
    m.update(kw)
    return m


def test_a_plain_command_never_reaches_the_llm_and_is_saved():
    agent, p, ctx = _fresh()
    assert agent.handle(_msg("turn on the porch light")) == "Turned porch light (GPIO4) on."
    assert p.requests == [] and ctx.extras == []
    assert machine.PINS[4]["value"] == 1
    hist = sessions.load("tg_42")
    assert [(m["role"], m["content"]) for m in hist] == [
        ("user", "turn on the porch light"), ("assistant", "Turned porch light (GPIO4) on.")]


def test_other_messages_get_hardware_notes_and_the_gpio_tools():
    agent, p, ctx = _fresh(_call("gpio_rgb", {"pin": "rgb_led", "r": 0, "g": 0, "b": 30}), _text("Blue now."))
    assert agent.handle(_msg("make the rgb led blue please")) == "Blue now."
    notes = ctx.extras[0]
    assert notes.startswith("[Pin aliases for this message]\nesp32-s3-devkitc-1: rgb_led = GPIO38 (ws2812)\n")
    assert "## Onboard RGB LED" in notes
    assert "gpio_write" in p.requests[0]["tools"] and "hardware_docs" in p.requests[0]["tools"]
    result = p.requests[1]["messages"][-1]
    assert result["role"] == "tool" and result["content"] == "GPIO38 (rgb_led): RGB 0,0,30" and not result["is_error"]
    assert machine.PINS[38]["bits"] == bytes((0, 0, 30))


def test_group_chats_get_no_gpio_not_even_by_the_fast_path():
    agent, p, ctx = _fresh(_call("gpio_write", {"pin": 4, "level": 1}), _text("I can't here."))
    assert agent.handle(_msg("turn on the porch light", chat="-100", is_group=True)) == "I can't here."
    assert len(p.requests) == 2  # the fast path stood aside: the LLM got the message
    offered = p.requests[0]["tools"]
    assert "gpio_write" not in offered and "hardware_docs" not in offered
    result = p.requests[1]["messages"][-1]
    assert result["is_error"] and "not available in this chat" in result["content"]
    assert 4 not in machine.PINS


def test_a_refused_pin_comes_back_to_the_model_naming_the_rule():
    agent, p, ctx = _fresh(_call("gpio_write", {"pin": "usb lamp", "level": 1}), _text("That pin is reserved."))
    assert agent.handle(_msg("please power up the usb lamp for a bit")) == "That pin is reserved."
    result = p.requests[1]["messages"][-1]
    assert result["is_error"] and "GPIO19 refused (rule usb)" in result["content"]
    assert 19 not in machine.PINS
