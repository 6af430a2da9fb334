"""Client half of the real-chat tests: the Telegram channel and the agent, with their real
wires (mimi's HTTP client), against the fake Bot API and a fake LLM that
``test_tg_chats_live.py`` started and primed (updates injected, replies scripted). Each
function runs under CPython (in process) and MicroPython (``mpcase``); the host checks
what reached the fakes afterwards. Parameters from the environment: MIMI_T_TG,
MIMI_T_TOKEN, MIMI_T_LLM (the fake LLM's base URL for the provider), MIMI_T_PROVIDER.
"""
import os

import support

from mimi import bus, commands, config, seam
from mimi.agent import loop
from mimi.channels.telegram import Telegram
from mimi.storage import fs, sessions
import mimi.llm as llm


class Ctx:
    def build(self, msg, extra=None):
        return 5

    def view(self):
        return memoryview(b"rules")


def _chain(allowed=("42",), provider=None):
    support.fresh_flash()
    config.set("tg_api_base", os.getenv("MIMI_T_TG"))
    config.set("tg_token", os.getenv("MIMI_T_TOKEN"))
    for c in allowed:
        commands.allow(c)
    provider = provider or os.getenv("MIMI_T_PROVIDER")
    llm.set_key("sk-FAKE-0123456789", provider)
    llm.switch(provider, "test-model", os.getenv("MIMI_T_LLM"))
    b = bus.Bus(8, 16)
    return b, Telegram(b), loop.Agent(b, Ctx())


def _run(b, tg, agent, turns, real_ms=30000, settle=3):
    """Tick the channel (a clock that jumps past back-offs and album waits), hand each
    inbound message to the agent and each outbound one to the channel, until ``turns``
    turns ran and ``settle`` quiet passes followed. Returns the inbound messages."""
    t = t0 = seam.ticks_ms()
    got = []
    quiet = 0
    while len(got) < turns or quiet < settle:
        assert seam.ticks_diff(seam.ticks_ms(), t0) < real_ms, "not done in time: %d turns" % len(got)
        busy = tg.tick(t)
        m = b.inbound.get(0)
        if m is not None:
            got.append(m)
            agent.handle(m)
        while True:
            o = b.outbound.get(0)
            if o is None:
                break
            tg.deliver(o)
        quiet = 0 if busy or m is not None or tg.outq else quiet + 1
        t = seam.ticks_add(t, 2000)
        seam.sleep_ms(5)
    tg.stop()
    return got


def _history(chat):
    return [m.get("content") for m in sessions.load(sessions.key_for("telegram", chat))]


def test_a_photo_reaches_the_model_and_the_history_keeps_a_placeholder():
    b, tg, agent = _chain()
    got = _run(b, tg, agent, 1)
    assert got[0]["media"][0]["kind"] == "image" and got[0]["text"] == "what is it?"
    h = _history("42")
    assert h == ["[photo]\nwhat is it?", "a cat"], h
    assert fs.listdir("/data/state") == [] or not [n for n in fs.listdir("/data/state") if n[0][:6] == "media_"]


def test_an_album_is_one_turn_with_all_its_captions():
    b, tg, agent = _chain()
    got = _run(b, tg, agent, 1)
    assert len(got) == 1 and len(got[0]["media"]) == 3 and got[0]["text"] == "one\nthree", got
    assert _history("42")[0] == "[3 photos]\none\nthree"


def test_a_voice_note_is_transcribed_or_the_user_told():
    b, tg, agent = _chain()
    _run(b, tg, agent, 1)
    h = _history("42")
    if os.getenv("MIMI_T_PROVIDER") == "openai":
        assert h == ["[voice note, transcribed:] turn on the porch light", "done"], h
    else:
        assert h == [], h  # no turn: the user was told


def test_deepseek_is_given_no_image():
    b, tg, agent = _chain(provider="deepseek")  # its API takes no images: no request at all
    _run(b, tg, agent, 1)


def test_a_model_refusing_images_gets_a_plain_answer():
    b, tg, agent = _chain()  # the fake refuses images as a text-only model does
    _run(b, tg, agent, 1)


def test_topics_replies_migration_and_a_blocked_user():
    b, tg, agent = _chain(allowed=("42", "-1009", "-555", "43"))
    got = _run(b, tg, agent, 4)
    by = {}
    for m in got:
        by[m["chat_id"]] = m
    topic = [c for c in by if c.startswith("-1009:")]
    assert len(topic) == 1 and by[topic[0]]["session"] == sessions.key_for("telegram", topic[0])
    q = by["42"]["text"]
    assert q.startswith("[Replying to your (the assistant's) message, quoting the part (quoted") and \
        q.endswith('"]\nwhy?'), q
    assert commands.allowed() == ["42", "-1009", "-100555", "43"], commands.allowed()
    assert by["-100555"]["text"] == "in the new group"
    assert "43" in tg.blocked


def test_a_text_turn():
    """(For tools/bench_media.py: the same chain with a text message, to compare heaps.)"""
    b, tg, agent = _chain()
    _run(b, tg, agent, 1)
