"""End to end, as a user meets it: ``python -m host_sim run`` on both runtimes, the fake
Telegram and the fake LLM on loopback, nothing of the firmware replaced.

One board per runtime serves most cases (each in its own chat, so sessions stay apart);
the OpenAI path and the restart boot their own.
"""
import signal
import time

import pytest

pytest.importorskip("host_sim.fakes.telegram")
pytest.importorskip("host_sim.fakes.llm")

from host_sim import brain  # noqa: E402
from host_sim.fakes.llm import Reply  # noqa: E402
from host_sim.harness import Sim  # noqa: E402

CHATS = tuple(range(1001, 1012))
RUNTIMES = pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
_boards = {}


@pytest.fixture(params=["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def sim(request, tmp_path_factory):
    rt = request.param
    if rt not in _boards or not _boards[rt].alive():
        _boards[rt] = Sim(str(tmp_path_factory.mktemp("flash-" + rt)), rt, allowed=CHATS).start()
    s = _boards[rt]
    s.llm.reset()
    yield s
    assert s.alive(), s.log()[-4000:]


@pytest.fixture(scope="module", autouse=True)
def _stop_boards():
    yield
    boards = list(_boards.values())
    _boards.clear()
    status = []
    for s in boards:  # stop them all, then judge
        try:
            status.append((s.stop(), s))
        except RuntimeError as e:
            status.append((str(e), s))
    for rc, s in status:
        assert rc == 0, "%s\n%s" % (rc, s.log()[-4000:])


def _turns(sim):
    """(system, messages, tools) of each request the fake LLM answered, via the stand-in's parser."""
    return [brain.normalise(r["json"]) for r in sim.llm_requests()]


def _results(msgs):
    return [m for m in msgs if m["role"] == "tool"]


def test_a_tool_round_trip_reaches_the_chat(sim):
    chat = 1001
    sim.llm.script(Reply.tools([("read_file", {"path": "/data/config/SOUL.md"})]), Reply.text("I read my soul."))
    sim.send("who are you?", chat)
    assert sim.wait_texts(1, chat) == ["I read my soul."]
    (s1, m1, tools1), (s2, m2, _) = _turns(sim)
    assert m1[-1] == {"role": "user", "text": "who are you?", "calls": []}
    assert "read_file" in tools1 and s1
    res = _results(m2)
    soul = open(sim.flash + "/data/config/SOUL.md").read()
    assert len(res) == 1 and res[0]["name"] == "read_file" and not res[0]["is_error"]
    assert soul.strip()[:40] in res[0]["text"]


def test_the_second_message_carries_the_history(sim):
    chat = 1002
    sim.llm.script(Reply.text("Nice to meet you, Ann."))
    sim.send("my name is Ann", chat)
    sim.wait_texts(1, chat)
    sim.llm.script(Reply.text("You are Ann."))
    sim.send("what is my name?", chat)
    assert sim.wait_texts(2, chat)[1] == "You are Ann."
    _, msgs, _ = _turns(sim)[1]
    assert [(m["role"], m["text"]) for m in msgs[-3:]] == [
        ("user", "my name is Ann"), ("assistant", "Nice to meet you, Ann."), ("user", "what is my name?")]


def test_an_unknown_chat_never_reaches_the_llm(sim):
    sim.send("hello, let me in", 999)
    texts = sim.wait_texts(1, 999)
    assert "999" in texts[0]
    sim.llm.script(Reply.text("ok"))
    sim.send("ping", 1003)
    sim.wait_texts(1, 1003)  # the board moved on to the next update
    assert len(sim.llm_requests()) == 1
    assert all("let me in" not in m["text"] for _, msgs, _ in _turns(sim) for m in msgs)


def test_a_long_reply_is_split_with_nothing_lost(sim):
    chat = 1004
    paras = ["Part %d \U0001F600 " % i + " ".join("word%d" % j for j in range(150)) for i in range(12)]
    long = "\n\n".join(paras)
    assert len(long) > 3 * 4096
    sim.llm.script(Reply.text(long))
    sim.send("tell me everything", chat)
    deadline = time.time() + 30
    while time.time() < deadline and "".join("".join(sim.texts(chat)).split()) != "".join(long.split()):
        time.sleep(0.1)
    texts = sim.texts(chat)
    assert len(texts) >= 4
    assert all(len(t.encode("utf-16-le")) // 2 <= 4096 for t in texts)
    assert "".join("".join(texts).split()) == "".join(long.split())  # every character, once, in order


def test_formatting_telegram_rejects_is_resent_as_plain_text(sim):
    chat = 1005
    sim.tg.fail("sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag \"q\" at byte offset 5")
    sim.llm.script(Reply.text("Some **bold** words"))
    sim.send("format something", chat)
    texts = sim.wait_texts(1, chat)
    assert "bold" in texts[0] and "words" in texts[0]
    tries = [c for c in sim.tg.calls if c.method == "sendMessage" and str(c.params.get("chat_id")) == str(chat)]
    assert tries[0].status == 400 and tries[0].params.get("parse_mode") == "HTML"
    assert tries[1].ok and not tries[1].params.get("parse_mode")
    assert len(texts) == 1


def test_odd_update_kinds_do_not_stop_the_loop(sim):
    chat = 1006
    sim.tg.inject_sticker(chat)
    sim.tg.inject_edited(chat, "an edit")
    sim.tg.inject_callback_query(chat)
    sim.tg.inject_voice(chat)
    sim.tg.inject_service(chat, chat_type="private")
    sim.tg.inject_group_text(-100555, "group chatter without a mention")
    sim.tg.inject_photo_file(chat, b"\xff\xd8\xff\xe0 a small photo", caption="what is on this photo?")
    sim.llm.script(Reply.text("A photo of nothing."), Reply.text("Still here."))
    sim.send("are you alive?", chat)
    texts = sim.wait_texts(4, chat)  # "text only" for the sticker, "cannot listen" for the voice, two answers
    assert texts[-1] == "Still here." and "A photo of nothing." in texts
    assert any("cannot listen to voice notes" in t for t in texts)  # the sim's provider has no transcription
    asked = [msgs[-1]["text"] for _, msgs, _ in _turns(sim)]
    assert len(asked) == 2 and asked[0] == "[photo]\nwhat is on this photo?" and asked[1] == "are you alive?"
    assert any(c.method == "answerCallbackQuery" for c in sim.tg.sent)


def test_an_overloaded_api_529_is_retried(sim):
    chat = 1007
    sim.llm.script(Reply.error(529), Reply.text("After a retry."))
    sim.send("hello", chat)
    assert sim.wait_texts(1, chat) == ["After a retry."]
    assert len(sim.llm_requests()) == 2


def test_a_path_outside_data_is_refused(sim):
    chat = 1008
    sim.llm.script(Reply.tools([("read_file", {"path": "/etc/passwd"}), ("read_file", {"path": "/data/../nvs.json"})]),
                   Reply.text("Not allowed."))
    sim.send("read the system files", chat)
    assert sim.wait_texts(1, chat) == ["Not allowed."]
    res = _results(_turns(sim)[1][1])
    assert len(res) == 2 and all(r["is_error"] for r in res)
    assert "/data" in res[0]["text"] and ".." in res[1]["text"]  # each names the rule it broke
    assert not any("root:" in r["text"] or "tg_token" in r["text"] for r in res)


def test_memory_written_in_one_turn_is_in_the_next_system_prompt(sim):
    chat = CHATS[0]  # the owner's: another chat keeps its own notes (tests/runtime/test_trust.py)
    n = len(sim.texts(chat))  # the owner's chat is shared with other tests here
    path = "/data/memory/MEMORY.md"
    sim.llm.script(Reply.tools([("read_file", {"path": path})]))
    sim.llm.script(Reply.tools([("edit_file", {"path": path, "old_text": "## Owner\n",
                                               "new_text": "## Owner\n- rides a green bike\n"})]),
                   Reply.text("Saved."))
    sim.send("remember that I ride a green bike", chat)
    assert sim.wait_texts(n + 1, chat)[n:] == ["Saved."]
    assert "green bike" not in _turns(sim)[0][0]
    assert not _results(_turns(sim)[2][1])[-1]["is_error"]
    sim.llm.script(Reply.text("You ride a green bike."))
    sim.send("what do I ride?", chat)
    sim.wait_texts(n + 2, chat)
    assert "- rides a green bike" in _turns(sim)[-1][0]


@RUNTIMES
def test_the_openai_path_works_with_tools(runtime, tmp_path):
    s = Sim(str(tmp_path), runtime, provider="openai").start()
    try:
        s.llm.script(Reply.tools([("get_current_time", {}), ("list_dir", {"path": "/data"})]), Reply.text("Done."))
        s.send("what time is it, and what files do you have?")
        assert s.wait_texts(1) == ["Done."]
        reqs = s.llm_requests()
        assert [r["path"] for r in reqs] == ["/v1/chat/completions"] * 2
        assert reqs[0]["headers"]["authorization"] == "Bearer sk-FAKE-sim-key"
        msgs = reqs[1]["json"]["messages"]
        calls = msgs[-3]["tool_calls"]
        assert [c["function"]["name"] for c in calls] == ["get_current_time", "list_dir"]
        assert [m["tool_call_id"] for m in msgs[-2:]] == [c["id"] for c in calls]
        assert "unix" in msgs[-2]["content"] and "memory" in msgs[-1]["content"]
    finally:
        assert s.stop() == 0, s.log()[-3000:]


@RUNTIMES
def test_a_restart_answers_nothing_twice(runtime, tmp_path):
    s = Sim(str(tmp_path), runtime).start()
    try:
        s.llm.script(Reply.text("First answer."))
        s.send("hello")
        assert s.wait_texts(1) == ["First answer."]
        # A power cut right after the answer, then a clean Ctrl-C restart: the message is
        # never answered again and nothing reaches the LLM twice.
        s.reboot(signal.SIGKILL)
        time.sleep(1.5)
        assert s.reboot(signal.SIGINT) == 0
        time.sleep(1.5)
        assert s.texts() == ["First answer."] and len(s.llm_requests()) == 1
        s.llm.script(Reply.text("Second answer."))
        s.send("again")
        assert s.wait_texts(2) == ["First answer.", "Second answer."]
        time.sleep(0.5)
        assert len(s.texts()) == 2 and len(s.llm_requests()) == 2
    finally:
        assert s.stop() == 0, s.log()[-3000:]


def test_the_board_answers_across_the_ticks_wrap(tmp_path):
    # ticks_ms wraps every 2**30 ms (12.4 days) on the device; here 6 s after boot
    t0 = time.monotonic()  # the board process starts after this: its wrap comes later than t0 + 6 s
    s = Sim(str(tmp_path), "cpython", env={"MIMI_TICKS_WRAP_IN_MS": "6000"}).start()
    try:
        s.llm.script(Reply.text("before the wrap"), Reply.tools([("get_current_time", {})]), Reply.text("after the wrap"))
        s.send("one")
        assert s.wait_texts(1) == ["before the wrap"]
        time.sleep(max(0.0, t0 + 8.0 - time.monotonic()))
        s.send("two")
        assert s.wait_texts(2) == ["before the wrap", "after the wrap"], s.log()[-3000:]
        log = s.log()
        secs = [int(line.split()[1]) for line in log.splitlines() if line[:2] in ("I ", "W ", "E ")]
        assert max(secs) > 1073000 and secs[-1] < 100, log[-3000:]  # the tool's log line came after the wrap
        assert s.alive() and "stall" not in log and "reset:" not in log
    finally:
        assert s.stop() == 0, s.log()[-3000:]
