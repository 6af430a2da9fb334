"""Automations through the whole app (host only, CPython): the owner asks in Telegram, the
fake LLM answers with ``rule_add``, and then the I/O thread acts on a button press with no
LLM call; a torn rules.json after a power cut is told, not fatal (issue 18)."""
import time

import machine
import pytest
import support

from host_sim.fakes.llm import FakeOpenAI, Reply
from host_sim.fakes.telegram import FakeTelegram
from mimi import app, boot, commands, config, llm
from mimi.hw import datasheets as ds, gpio, pins
from mimi.rules import engine

_SHEET = "# Board\n\n## Pin Aliases\n| door | 4 | in |\n| fan | 5 |\n"


@pytest.fixture
def chain():
    root = support.fresh_flash()
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", _SHEET)
    ds.forget()
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    engine.reset()
    if app.running():
        app.stop()
    app.forget()
    boot.state["safe"] = False
    saved = config.APP_WDT_TIMEOUT_MS
    config.APP_WDT_TIMEOUT_MS = 0
    tg = FakeTelegram().start()
    ai = FakeOpenAI().start()
    config.set("tg_api_base", tg.url)
    config.set("tg_token", tg.token)
    commands.allow(42)
    llm.switch(provider="openai", model="gpt-fake", base_url=ai.base_url)
    llm.set_key("sk-FAKE-key")
    assert app.init() and app.start()
    tg.wait_sent(lambda c: c.method == "setMyCommands", timeout=10)
    yield root, tg, ai
    app.stop()
    app.forget()
    engine.reset()
    config.APP_WDT_TIMEOUT_MS = saved
    tg.stop()
    ai.stop()


def _wait(cond, timeout=10):
    t0 = time.time()
    while not cond() and time.time() - t0 < timeout:
        time.sleep(0.02)
    return cond()


def test_a_rule_taught_in_chat_runs_without_the_llm(chain):
    root, tg, ai = chain
    rule = {"name": "door bell", "when": {"pin": "door", "edge": "falling", "pull": "up"},
            "do": [{"pin": "fan", "value": 1}, {"message": "有人按门铃 (door button)"}]}
    ai.script(Reply.tools([("rule_add", rule)]), Reply.text("Done: I will tell you and switch the fan on."))
    tg.inject_text(42, "when the door button is pressed, turn on the fan and message me")
    assert _wait(lambda: tg.texts(42) == ["Done: I will tell you and switch the fan on."])
    assert "added rule r1" in str(ai.requests[-1]["json"]["messages"][-1])
    calls = len(ai.requests)
    assert _wait(lambda: machine.PINS.get(4, {}).get("mode") == machine.Pin.IN)  # the engine set the button up
    machine.sim_drive(4, 0)  # pressed
    assert _wait(lambda: len(tg.texts(42)) == 2)
    assert tg.texts(42)[1] == "有人按门铃 (door button)" and machine.PINS[5]["value"] == 1
    assert len(ai.requests) == calls  # no LLM call
    tg.inject_text(42, "/rules")
    assert _wait(lambda: len(tg.texts(42)) == 3) and "door bell" in tg.texts(42)[2]


def test_a_torn_rules_file_is_told_once_and_the_app_runs_on(chain):
    root, tg, ai = chain
    support.write(root + config.RULES_PATH, '{"seq": 3, "rules": [{"id": "r1", "name": "fa')
    assert _wait(lambda: len(tg.texts(42)) == 1, 15)
    assert "damaged" in tg.texts(42)[0]
    ai.script(Reply.text("still here"))
    tg.inject_text(42, "hello?")
    assert _wait(lambda: len(tg.texts(42)) == 2) and tg.texts(42)[1] == "still here"
    assert app.state["threads"]["io"]["restarts"] == 0
