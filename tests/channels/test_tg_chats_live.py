"""Real chats end to end: photos, albums, voice notes, forum topics, replies to long
messages, a group migrated to a supergroup and a user who blocked the bot, through the
Telegram channel and the agent with their real wires, against the fake Bot API and the
fake LLMs (host only; each case of ``cases_tg_chats_live.py`` runs under CPython in
process and under MicroPython). The fakes' behaviours are vouched for in
``tests/fakes/test_fake_telegram_chats.py`` and ``test_fake_llm_media.py``.
"""
import os

import pytest

import mpcase
from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply
from host_sim.fakes.telegram import FakeTelegram

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases_tg_chats_live.py")
JPEG = b"\xff\xd8\xff\xe0" + os.urandom(60000)  # larger than every buffer on the way
LONG = "\u0436" * 4000  # 24 KB as Telegram writes it: over the 16 KB poll buffer


def _photo(tg, llm):
    tg.inject_photo_file(42, JPEG, caption="what is it?")
    llm.script(Reply.text("a cat"))


def _album(tg, llm):
    tg.inject_album(42, ["one", None, "three"], data=JPEG[:3000])
    llm.script(Reply.text("three photos"))


def _voice(tg, llm):
    tg.inject_voice_file(42, b"OggS" + os.urandom(5000))
    llm.transcript = "turn on the porch light"
    llm.script(Reply.text("done"))


def _no_vision(tg, llm):
    tg.inject_photo_file(42, JPEG[:2000], caption="what is it?")
    llm.vision = False


def _chats(tg, llm):
    t = tg.add_topic(-1009)
    tg.inject_topic_text(-1009, t, "@mimi_test_bot hello topic")
    said = {"message_id": 3, "from": dict(tg.me), "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "date": 1, "text": LONG + " the end"}
    tg.inject_reply(42, "why?", to=said, quote="the end")
    tg.migrate(-555, -100555)
    tg.inject_group_text(-100555, "@mimi_test_bot in the new group")
    tg.block(43)
    tg.inject_text(43, "hi")
    llm.script(Reply.text("in the topic"), Reply.text("because"), Reply.text("hello, supergroup"),
               Reply.text("x" * 5000))  # two chunks for 43: the first is refused, the second never tried


def _check_text(tg, llm, provider):
    assert tg.texts(42) == ["a cat"] and llm.images == []


def _check_photo(tg, llm, provider):
    assert llm.images == [("image/jpeg", JPEG)]
    assert tg.texts(42) == ["a cat"]
    user = llm.requests[0]["json"]["messages"][-1]["content"]
    assert user[-1] == {"type": "text", "text": "[photo]\nwhat is it?"}


def _check_album(tg, llm, provider):
    assert len(llm.requests) == 1 and len(llm.images) == 3
    assert [d for _, d in llm.images] == [JPEG[:3000] + b"-%d" % i for i in range(3)]
    assert tg.texts(42) == ["three photos"]


def _check_voice(tg, llm, provider):
    if provider == "openai":
        assert [a[0] for a in llm.audio] == ["gpt-4o-mini-transcribe"] and llm.audio[0][3][:4] == b"OggS"
        assert tg.texts(42) == ["done"]
    else:
        assert llm.requests == [] and "cannot listen to voice notes with anthropic" in tg.texts(42)[0]


def _check_no_vision(tg, llm, provider, requests):
    t = tg.texts(42)
    assert len(t) == 1 and t[0].startswith("test-model cannot look at images"), t
    assert len(llm.requests) == requests and llm.images == []


def _check_chats(tg, llm, provider):
    sent = [c for c in tg.calls if c.method == "sendMessage"]
    topic = [c for c in sent if c.params["chat_id"] == -1009]
    assert len(topic) == 1 and topic[0].ok and topic[0].params["message_thread_id"] == 100
    assert tg.texts(42) == ["because"]
    assert tg.texts(-100555) == ["hello, supergroup"]
    to43 = [c for c in sent if c.params["chat_id"] == 43]
    assert [c.status for c in to43] == [403], to43
    assert not [c for c in sent if c.params["chat_id"] == -555]
    asked = [r["json"]["messages"][-1]["content"] for r in llm.requests]
    quoted = [a for a in asked if "why?" in str(a)][0]
    assert '"the end"]' in str(quoted) and LONG[:50] not in str(quoted)


def _text(tg, llm):
    tg.inject_text(42, "what is it?")
    llm.script(Reply.text("a cat"))


CASE = {
    "test_a_text_turn": (_text, _check_text),
    "test_a_photo_reaches_the_model_and_the_history_keeps_a_placeholder": (_photo, _check_photo),
    "test_an_album_is_one_turn_with_all_its_captions": (_album, _check_album),
    "test_a_voice_note_is_transcribed_or_the_user_told": (_voice, _check_voice),
    "test_deepseek_is_given_no_image": (_no_vision, lambda tg, llm, p: _check_no_vision(tg, llm, p, 0)),
    "test_a_model_refusing_images_gets_a_plain_answer":
        (_no_vision, lambda tg, llm, p: _check_no_vision(tg, llm, p, 1)),
    "test_topics_replies_migration_and_a_blocked_user": (_chats, _check_chats),
}


@pytest.mark.parametrize("provider", ("openai", "anthropic"))
@pytest.mark.parametrize("runtime", ("cpython", "micropython"))
@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_live(name, runtime, provider, monkeypatch):
    if name == "test_deepseek_is_given_no_image" and provider == "anthropic":
        pytest.skip("the deepseek preset and text-only models speak the OpenAI wire")
    tg = FakeTelegram().start()
    llm = (FakeOpenAI if provider == "openai" else FakeAnthropic)().start()
    try:
        prepare, check = CASE[name]
        prepare(tg, llm)
        env = {"MIMI_T_TG": tg.url, "MIMI_T_TOKEN": tg.token, "MIMI_T_PROVIDER": provider,
               "MIMI_T_LLM": llm.base_url}
        if runtime == "cpython":
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            mpcase.run_cpython(CASES, name)
        else:
            ok, out = mpcase.run(CASES, name, env)
            assert ok, out
        check(tg, llm, provider)
    finally:
        tg.stop()
        llm.stop()
