"""The agent loop with a scripted provider, a real bus, real sessions and tools (both runtimes)."""
import json

from mimi import bus as busmod, config
from mimi.agent import loop
from mimi.llm import common, usage
from mimi.storage import fs, sessions
from mimi.tools import registry
import support

RUNTIMES = ("cpython", "micropython")


class FakeContext:
    def __init__(self):
        self.buf = bytearray(16384)
        self.n = 0
        self.built = []

    def build(self, msg, extra=None):
        b = ("system prompt for chat %s" % msg.get("chat_id")).encode()
        self.buf[:len(b)] = b
        self.n = len(b)
        self.built.append(extra)
        return self.n

    def view(self):
        return memoryview(self.buf)[:self.n]


class Scripted:
    """A provider popping queued replies (dicts) or exceptions; records every request."""

    name = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, system, messages, tools, max_tokens):
        self.requests.append({"system": bytes(system), "messages": json.loads(json.dumps(messages)),
                              "tools": [t.name for t in tools], "max_tokens": max_tokens})
        r = self.replies.pop(0) if self.replies else text("(script ran out)")
        if isinstance(r, BaseException):
            raise r
        return r


def text(t, stop="end", usage_=(10, 2)):
    return {"text": t, "tool_calls": [], "stop": stop, "usage": usage_}


def tools(*calls, **kw):
    out = []
    for i, c in enumerate(calls):
        d = {"id": "%s_%d" % (kw.get("prefix", "t"), i), "name": c[0], "input": c[1]}
        if len(c) > 2:
            d["error"] = c[2]
        out.append(d)
    return {"text": kw.get("say", ""), "tool_calls": out, "stop": "tool_use", "usage": (20, 5)}


ran = []


def _setup(**settings):
    support.fresh_flash()
    usage.forget()
    registry.clear()
    del ran[:]

    def echo(args, ctx):
        ran.append((args.get("x"), ctx["chat_id"], ctx["session"]))
        return "echo:" + str(args.get("x")) + ("#" * args.get("pad", 0))

    def boom(args, ctx):
        raise ValueError("boom")
    registry.register(registry.Tool("echo", "Echo x", {"type": "object", "properties": {
        "x": {"type": "string"}, "pad": {"type": "integer"}}, "required": ["x"]}, echo, "time"))
    registry.register(registry.Tool("fileish", "Touch files", {"type": "object", "properties": {}}, echo, "file"))
    registry.register(registry.Tool("boom", "Fails", {"type": "object", "properties": {}}, boom, "time"))
    for k in settings:
        config.set(k, settings[k])
    return busmod.Bus(8, 64)


def _agent(b, provider):
    return loop.Agent(b, FakeContext(), lambda: provider)


def _msg(text_, chat="42", **kw):
    m = {"channel": "telegram", "chat_id": chat, "text": text_, "session": "tg_" + chat}
    m.update(kw)
    return m


def _out(b):
    return [(x["kind"], x["text"]) for x in support.take_all(b.outbound)]


def _check_history(messages):
    """What every request must satisfy: each call answered right after it, ids unique."""
    seen = set()
    open_ids = []
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_ids, m
            open_ids.remove(m["tool_call_id"])
            continue
        assert not open_ids, ("unanswered", open_ids)
        for c in m.get("tool_calls") or ():
            assert c["id"] not in seen
            seen.add(c["id"])
            open_ids.append(c["id"])
    assert not open_ids


def test_plain_reply_typing_idle_and_session():
    b = _setup()
    p = Scripted(text("Hello!"))
    assert _agent(b, p).handle(_msg("hi")) == "Hello!"
    assert _out(b) == [("typing", ""), ("text", "Hello!"), ("idle", "")]
    req = p.requests[0]
    assert req["system"] == b"system prompt for chat 42"
    assert [m["content"] for m in req["messages"]] == ["hi"]
    assert req["max_tokens"] == config.LLM_MAX_TOKENS
    saved = sessions.load("tg_42")
    assert [(m["role"], m["content"]) for m in saved] == [("user", "hi"), ("assistant", "Hello!")]
    assert usage.today() == (10, 2, 1)


def test_tools_run_in_order_and_results_fed_back_and_saved():
    b = _setup()
    p = Scripted(tools(("echo", {"x": "a"}), ("echo", {"x": "b"}), ("boom", {}), say="Checking."),
                 text("done: a, b"))
    assert _agent(b, p).handle(_msg("go")) == "done: a, b"
    assert ran == [("a", "42", "tg_42"), ("b", "42", "tg_42")]
    second = p.requests[1]["messages"]
    _check_history(second)
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool", "tool"]
    assert second[1]["content"] == "Checking."
    assert [m["content"] for m in second[2:4]] == ["echo:a", "echo:b"]
    assert second[4]["is_error"] and "boom" in second[4]["content"]
    saved = sessions.load("tg_42")
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert usage.today() == (30, 7, 2)


def test_invalid_json_arguments_become_an_error_result_not_a_run():
    b = _setup()
    p = Scripted(tools(("echo", {}, "arguments were not valid JSON: bad")), text("sorry"))
    _agent(b, p).handle(_msg("go"))
    assert ran == []
    res = p.requests[1]["messages"][-1]
    assert res["role"] == "tool" and res["is_error"]
    assert "not valid JSON" in res["content"] and "again" in res["content"]


def test_round_limit_tells_the_user_and_one_note_is_sent():
    b = _setup()
    p = Scripted(*[tools(("echo", {"x": str(i)}), prefix="r%d" % i) for i in range(12)])
    reply = _agent(b, p).handle(_msg("loop forever"))
    assert len(p.requests) == config.AGENT_MAX_ROUNDS
    assert "stopped after 10 rounds (tools: echo)" in reply
    kinds = [k for k, _ in _out(b)]
    assert kinds.count("note") == 1 and kinds[-2:] == ["text", "idle"]
    for r in p.requests:
        _check_history(r["messages"])


def test_llm_errors_and_crashes_become_short_messages():
    b = _setup()
    a = _agent(b, Scripted(common.LLMError("the API key was rejected (401)", 401)))
    assert a.handle(_msg("hi")) == "Sorry, I could not answer: the API key was rejected (401)."
    assert _out(b)[-1] == ("idle", "")
    p = Scripted(KeyError("internal"), text("fine again"))
    a = _agent(b, p)
    r = a.handle(_msg("hi"))
    assert r.startswith("Sorry, something went wrong") and "KeyError" in r and "Traceback" not in r
    assert a.handle(_msg("again")) == "fine again"


def test_max_tokens_and_refusal_texts():
    b = _setup()
    a = _agent(b, Scripted(text("partial answer", stop="max_tokens")))
    r = a.handle(_msg("x"))
    assert r.startswith("partial answer") and "cut off" in r
    a = _agent(b, Scripted(text("", stop="refusal")))
    assert "declined" in a.handle(_msg("x"))
    a = _agent(b, Scripted(text("", stop="end")))
    assert a.handle(_msg("x")) == "(no reply)"


def test_pause_turn_continues():
    b = _setup()
    p = Scripted(text("thinking so far", stop="pause_turn"), text("final"))
    assert _agent(b, p).handle(_msg("x")) == "final"
    assert p.requests[1]["messages"][-1] == {"role": "assistant", "content": "thinking so far",
                                             "ts": p.requests[1]["messages"][-1]["ts"]}


def test_a_server_that_pauses_every_round_gets_a_plain_message():
    b = _setup()
    p = Scripted(*[text("", stop="pause_turn")] * 12)
    reply = _agent(b, p).handle(_msg("x"))
    assert len(p.requests) == config.AGENT_MAX_ROUNDS
    assert reply == 'I stopped after 10 rounds (the server paused its turn each time). Say "continue" to go on.'


def test_group_chats_do_not_get_file_tools_unless_allowed():
    b = _setup()
    p = Scripted(tools(("fileish", {})), text("ok"))
    _agent(b, p).handle(_msg("x", chat="-100", is_group=True))
    assert "fileish" not in p.requests[0]["tools"] and "echo" in p.requests[0]["tools"]
    assert ran == []  # the call to a withheld tool did not run
    assert "not available in this chat" in p.requests[1]["messages"][-1]["content"]
    config.set("group_tools", "file")
    p = Scripted(text("ok"))
    _agent(b, p).handle(_msg("x", chat="-100", is_group=True))
    assert "fileish" in p.requests[0]["tools"]
    p = Scripted(text("ok"))
    _agent(b, p).handle(_msg("x", chat="7"))
    assert "fileish" in p.requests[0]["tools"]


def test_tools_learn_whether_the_chat_is_a_group():
    # cron_add records it, so a job made in a group runs with the group's tool limits
    b = _setup()
    seen = []
    registry.register(registry.Tool("who", "Who asks", {"type": "object", "properties": {}},
                                    lambda a, c: seen.append(c.get("is_group")) or "ok", "time"))
    for m in (_msg("x", chat="-100", is_group=True), _msg("x", chat="7")):
        _agent(b, Scripted(tools(("who", {})), text("ok"))).handle(m)
    assert seen == [True, None]
    assert loop.denied_groups({"channel": "cron", "is_group": True}) == ["file", "gpio", "cron"]


def test_crash_between_call_and_result_is_repaired_on_next_load():
    b = _setup()
    sessions.append("tg_42", {"role": "user", "content": "earlier"})
    sessions.append("tg_42", {"role": "assistant", "content": "", "tool_calls": [
        {"id": "lost_1", "name": "echo", "input": {"x": "z"}}]})
    p = Scripted(text("recovered"))
    _agent(b, p).handle(_msg("hello again"))
    msgs = p.requests[0]["messages"]
    _check_history(msgs)
    assert msgs[2]["role"] == "tool" and msgs[2]["tool_call_id"] == "lost_1" and msgs[2]["is_error"]
    assert msgs[-1]["content"] == "hello again"


def test_reused_and_missing_tool_call_ids_get_fresh_ones():
    # Servers that number calls per reply (call_0 every round) or send none: without fresh
    # ids, repair drops the later call and its result and the model asks again for ever.
    b = _setup()
    none = tools(("echo", {"x": "c"}), ("echo", {"x": "d"}))
    for c in none["tool_calls"]:
        c["id"] = ""
    dup = tools(("echo", {"x": "e"}), ("echo", {"x": "f"}))
    for c in dup["tool_calls"]:
        c["id"] = "dup"  # twice in one reply
    none["tool_calls"][1]["id"] = 5  # not a string: repair would drop it
    p = Scripted(tools(("echo", {"x": "a"}), prefix="call"), tools(("echo", {"x": "b"}), prefix="call"), none, dup,
                 text("done"))
    a = _agent(b, p)
    assert a.handle(_msg("go")) == "done"
    assert [r[0] for r in ran] == ["a", "b", "c", "d", "e", "f"]
    for r in p.requests:
        _check_history(r["messages"])
    last = p.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == ["echo:" + x for x in "abcdef"]
    ids = [c["id"] for m in last for c in m.get("tool_calls") or ()]
    assert ids[0] == "call_0" and ids[1].startswith("call_") and ids[1] != "call_0" and len(set(ids)) == 6
    # the next turn, and the next load from flash, keep every result too
    p = Scripted(tools(("echo", {"x": "g"}), prefix="call"), text("again"))
    assert _agent(b, p).handle(_msg("more")) == "again"
    msgs = p.requests[-1]["messages"]
    _check_history(msgs)
    assert [m["content"] for m in msgs if m["role"] == "tool"][-7:] == ["echo:" + x for x in "abcdefg"]
    assert sessions.repair(sessions.load("tg_42", 50))[1] == 0


def test_earlier_round_results_are_cut_in_ram_latest_kept_whole():
    b = _setup()
    big = {"x": "a", "pad": 3000}
    p = Scripted(tools(("echo", big), prefix="r1"), tools(("echo", big), prefix="r2"), text("ok"))
    _agent(b, p).handle(_msg("go"))
    second = p.requests[1]["messages"]
    assert len(second[-1]["content"]) > 3000  # the model sees the newest result whole
    third = p.requests[2]["messages"]
    first_result = third[2]
    assert first_result["tool_call_id"] == "r1_0"
    assert len(first_result["content"].encode()) <= config.SESSION_TOOL_RESULT_MAX_BYTES
    assert "cut to" in first_result["content"]
    assert len(third[-1]["content"]) > 3000


def test_run_takes_messages_until_stopped_and_saves_usage():
    b = _setup()
    p = Scripted(text("one"), text("two"))
    a = _agent(b, p)
    b.inbound.put(_msg("a"))
    b.inbound.put(_msg("b", chat="43"))
    count = [0]

    def stop():
        count[0] += 1
        return len(p.requests) >= 2 and not len(b.inbound)
    a.run(stop)
    texts = [t for k, t in _out(b) if k == "text"]
    assert texts == ["one", "two"]
    data, _, _ = fs.read(config.USAGE_PATH, 4096)
    assert json.loads(data)  # counts written when the loop stopped
    usage.forget()
    assert usage.today() == (20, 4, 2)  # read back from flash


def test_empty_text_gets_a_plain_answer_without_llm():
    b = _setup()
    p = Scripted()
    assert "text" in _agent(b, p).handle(_msg("   "))
    assert p.requests == []


def test_a_full_flash_still_answers_and_says_the_chat_was_not_saved():
    b = _setup()
    real_open = fs._open

    def full(path, mode="r"):
        if "w" in mode or "a" in mode:
            if "sessions" in path:
                raise OSError(28, "No space left on device")
        return real_open(path, mode)

    fs._open = full
    try:
        p = Scripted(tools(("echo", {"x": "a"})), text("The answer."))
        reply = _agent(b, p).handle(_msg("hi"))
    finally:
        fs._open = real_open
    assert reply.startswith("The answer.\n\n[This chat could not be saved (no space left)")
    assert ran == [("a", "42", "tg_42")] and len(p.requests) == 2  # the turn went on
    assert [k for k, _ in _out(b)] == ["typing", "text", "idle"]
    assert sessions.load("tg_42") == []
    p = Scripted(text("Saved again."))  # room again: no note
    assert _agent(b, p).handle(_msg("hello")) == "Saved again."
