"""The Telegram channel over the real HTTP client against the fake Bot API (host only).

The fake is the one python-telegram-bot accepts (tests/fakes/); here mimi's own code
talks to it over sockets: long polling, confirmation, HTML, fallbacks, 409/429, drops.
"""
import time

import pytest
import support

from host_sim.fakes.telegram import FakeTelegram
from mimi import bus, commands, config, seam
from mimi.channels.telegram import Telegram

EMOJI = "\U0001F600"


@pytest.fixture
def env():
    fake = FakeTelegram().start()
    support.fresh_flash()
    config.set("tg_api_base", fake.url)
    config.set("tg_token", fake.token)
    commands.allow(42)
    b = bus.Bus(8, 16)
    tg = Telegram(b)
    saved = config.TG_TYPING_EVERY_MS
    yield fake, b, tg
    config.TG_TYPING_EVERY_MS = saved
    tg.stop()
    fake.stop()


def pump(tg, until, timeout=6.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        tg.tick(seam.ticks_ms())
        if until():
            return True
        time.sleep(0.005)
    return until()


def inbound(b):
    return support.take_all(b.inbound)


def test_hello_text_in_and_formatted_reply_out(env):
    fake, b, tg = env
    assert pump(tg, lambda: tg.poll is not None)
    assert [c["command"] for c in fake.commands][:3] == ["start", "help", "new"]
    fake.inject_text(42, "hello " + EMOJI)
    got = []
    assert pump(tg, lambda: got.extend(inbound(b)) or got)
    assert got[0]["text"] == "hello " + EMOJI and got[0]["chat_id"] == "42"
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "**Hi** " + EMOJI + " <3 & `code`", "kind": "text"})
    assert pump(tg, lambda: fake.texts(42))
    call = [c for c in fake.sent if c.method == "sendMessage"][0]
    assert call.result["text"] == "Hi " + EMOJI + " <3 & code"
    assert [e["type"] for e in call.result["entities"]] == ["bold", "code"]
    assert pump(tg, lambda: fake.pending() == [])  # confirmed by the next poll


def test_the_long_poll_does_not_hold_up_replies(env):
    fake, b, tg = env
    assert pump(tg, lambda: tg.poll is not None)
    t0 = time.time()
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "quick", "kind": "text"})
    assert pump(tg, lambda: fake.texts(42) == ["quick"])
    assert time.time() - t0 < 2 and tg.poll is not None  # the 30 s poll is still open


def test_refused_formatting_is_resent_plain_once(env):
    fake, b, tg = env
    fake.fail("sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0")
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "*it*", "kind": "text"})
    assert pump(tg, lambda: fake.texts(42))
    tries = [c for c in fake.calls if c.method == "sendMessage"]
    assert [t.status for t in tries] == [400, 200]
    assert tries[0].params.get("parse_mode") == "HTML" and "parse_mode" not in tries[1].params
    assert fake.texts(42) == ["*it*"]


def test_a_long_reply_arrives_whole_in_parts_telegram_accepts(env):
    fake, b, tg = env
    text = ("Line with an emoji " + EMOJI + " and <html> & stuff.\n") * 400  # ~15,000 units
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": text, "kind": "text"})
    assert pump(tg, lambda: not tg.outq and fake.texts(42), timeout=10)
    parts = fake.texts(42)
    assert len(parts) >= 4 and all(c.status == 200 for c in fake.calls if c.method == "sendMessage")
    assert "\n".join(parts).count(EMOJI) == 400


def test_429_waits_retry_after(env):
    fake, b, tg = env
    fake.fail_429("sendMessage", retry_after=1)
    t0 = time.time()
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "later", "kind": "text"})
    assert pump(tg, lambda: fake.texts(42) == ["later"])
    assert time.time() - t0 >= 0.95


def test_webhook_conflict_is_cleared_and_polling_goes_on(env):
    fake, b, tg = env
    fake.set_webhook()
    assert pump(tg, lambda: any(c.method == "deleteWebhook" for c in fake.calls))
    fake.inject_text(42, "after the webhook")
    got = []
    assert pump(tg, lambda: got.extend(inbound(b)) or got, timeout=8)
    assert got[0]["text"] == "after the webhook"


def test_a_dropped_poll_backs_off_and_recovers(env):
    fake, b, tg = env
    fake.drop("getUpdates")
    fake.inject_text(42, "are you there?")
    got = []
    assert pump(tg, lambda: got.extend(inbound(b)) or got, timeout=8)
    assert tg.errors >= 1 and got[0]["text"] == "are you there?"


def test_typing_repeats_until_idle(env):
    fake, b, tg = env
    config.TG_TYPING_EVERY_MS = 200
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "", "kind": "typing"})
    pump(tg, lambda: False, timeout=1.0)
    n = len([c for c in fake.sent if c.method == "sendChatAction"])
    assert n >= 3
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "", "kind": "idle"})
    pump(tg, lambda: False, timeout=0.6)
    assert len([c for c in fake.sent if c.method == "sendChatAction"]) <= n + 1


def test_strangers_are_told_once_and_never_reach_the_agent(env):
    fake, b, tg = env
    fake.inject_text(99, "hi")
    fake.inject_text(99, "hello??")
    assert pump(tg, lambda: fake.texts(99))
    pump(tg, lambda: False, timeout=0.5)
    assert len(fake.texts(99)) == 1 and inbound(b) == []


def test_a_reboot_does_not_answer_twice(env):
    fake, b, tg = env
    fake.inject_text(42, "only once")
    got = []
    assert pump(tg, lambda: got.extend(inbound(b)) or got)
    tg.stop()  # the board resets
    tg2 = Telegram(bus.Bus(8, 16))
    b2 = tg2.bus
    pump(tg2, lambda: False, timeout=1.0)
    assert inbound(b2) == [] and fake.pending() == []
    tg2.stop()
