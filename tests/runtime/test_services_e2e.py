"""Cron and heartbeat through the whole app (host only, CPython): the services queue a
message, the agent thread asks the fake LLM, and the reply reaches Telegram (or not)."""
import time

import pytest
import support

from host_sim.fakes.llm import FakeOpenAI, Reply
from host_sim.fakes.telegram import FakeTelegram
from mimi import app, boot, commands, config, llm, seam
from mimi.storage import cronjobs, fs


@pytest.fixture
def chain():
    support.fresh_flash()
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
    yield tg, ai
    app.stop()
    app.forget()
    config.APP_WDT_TIMEOUT_MS = saved
    tg.stop()
    ai.stop()


def test_heartbeat_report_reaches_the_owner_and_ok_does_not(chain):
    tg, ai = chain
    fs.write(config.HEARTBEAT_PATH, "# Heartbeat\n\n- [ ] check the greenhouse\n")
    ai.script(Reply.text("HEARTBEAT_OK"), Reply.text("The greenhouse is at **41 C**: open the windows."))
    assert "1 open task sent" in app.heartbeat().run_now()
    t0 = time.time()
    while len(ai.requests) < 1 and time.time() - t0 < 10:
        time.sleep(0.02)
    time.sleep(0.5)
    assert tg.texts(42) == [] and not any(c.method == "sendChatAction" for c in tg.sent)
    app.heartbeat().run_now()
    tg.wait_sent(lambda c: c.method == "sendMessage", timeout=10)
    assert tg.texts(42) == ["The greenhouse is at 41 C: open the windows."]
    assert "check the greenhouse" in str(ai.requests[-1]["json"]["messages"])


def test_no_open_task_means_no_llm_call(chain):
    tg, ai = chain
    fs.write(config.HEARTBEAT_PATH, "# Heartbeat\n\nNothing to do.\n- [x] done\n")
    assert "nothing to do" in app.heartbeat().run_now()
    time.sleep(0.3)
    assert ai.requests == []


def test_a_due_cron_job_answers_in_its_chat(chain):
    tg, ai = chain
    ai.script(Reply.text("Good morning! Today: *tea* at 10."))
    now = seam.time_s()
    cronjobs.add({"kind": "every", "every_s": 60, "text": "send the morning briefing", "chat_id": "42"}, now - 120)
    app.state["cron"].run_due(seam.time_s())
    tg.wait_sent(lambda c: c.method == "sendMessage", timeout=10)
    assert tg.texts(42) == ["Good morning! Today: tea at 10."]
    sent = ai.requests[-1]["json"]["messages"]
    assert "[scheduled job" in str(sent) and "send the morning briefing" in str(sent)
