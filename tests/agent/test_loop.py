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

    def build(self, msg, extra=None, summary=None):
        b = ("system prompt for chat %s" % msg.get("chat_id") + ("\nEarlier: " + summary if summary else "")).encode()
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


def text(t, stop="end", usage_=(10, 2), **kw):
    d = {"text": t, "tool_calls": [], "stop": stop, "usage": usage_}
    d.update(kw)
    return d


def tools(*calls, **kw):
    out = []
    for i, c in enumerate(calls):
        d = {"id": "%s_%d" % (kw.get("prefix", "t"), i), "name": c[0], "input": c[1]}
        if len(c) > 2:
            d["error"] = c[2]
        out.append(d)
    d = {"text": kw.get("say", ""), "tool_calls": out, "stop": kw.get("stop", "tool_use"), "usage": (20, 5)}
    if "think" in kw:
        d["reasoning_content"] = kw["think"]
    return d


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


# -- real chats (issue 13) -----------------------------------------------------------------

def test_a_tool_call_cut_by_the_length_limit_never_runs():
    b = _setup()
    fs.write("/data/notes.md", "precious\n")
    registry.register(registry.Tool("write_file", "Write", {"type": "object", "properties": {}},
                                    lambda a, c: fs.write(a["path"], a["content"]) or "written", "file"))
    half = {"path": "/data/notes.md", "content": "half of the new te"}
    p = Scripted(tools(("write_file", half), stop="max_tokens", prefix="c1"), text("I will write it in parts."))
    assert _agent(b, p).handle(_msg("rewrite my notes")) == "I will write it in parts."
    assert fs.read("/data/notes.md", 100)[0] == b"precious\n"  # never ran
    second = p.requests[1]["messages"]
    _check_history(second)
    assert second[-2]["tool_calls"][0]["input"] == {}  # the half arguments are not kept
    res = second[-1]
    assert res["is_error"] and "length limit" in res["content"] and "smaller pieces" in res["content"]
    # cut twice in one turn: the person is told, nothing ran
    p = Scripted(tools(("write_file", half), stop="max_tokens", prefix="c2"),
                 tools(("write_file", half), stop="max_tokens", prefix="c3"), text("unused"))
    reply = _agent(b, p).handle(_msg("again"))
    assert "length limit" in reply and "write_file" in reply and len(p.requests) == 2
    assert fs.read("/data/notes.md", 100)[0] == b"precious\n"
    _check_history(sessions.load("tg_42", 50))


def test_a_refused_turn_is_kept_out_of_later_windows():
    b = _setup()
    a = _agent(b, Scripted(text("hello"), text("partial", stop="refusal"), tools(("echo", {"x": "1"}), prefix="r"),
                           text("", stop="refusal"), text("fine")))
    a.handle(_msg("first"))
    reply = a.handle(_msg("something the filter stops"))
    assert reply.startswith("partial") and "declined" in reply and "left that message out" in reply
    reply = a.handle(_msg("a turn with a tool, then refused"))
    assert "declined" in reply
    assert a.handle(_msg("next")) == "fine"
    last = a.provider().requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == ["first", "next"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]
    _check_history(last)
    saved = sessions.load("tg_42", 50)
    assert [m["content"] for m in saved if m["role"] == "user"] == ["first", "next"]
    data = fs.read("/data/sessions/tg_42.jsonl", 65536)[0]
    assert b"something the filter stops" in data  # the file still holds it, for the record


def test_the_same_call_repeated_is_stopped_with_a_note_then_a_word():
    b = _setup()
    same = [tools(("echo", {"x": "a"}), prefix="s%d" % i) for i in range(12)]
    p = Scripted(*same)
    reply = _agent(b, p).handle(_msg("loop"))
    assert [r[0] for r in ran] == ["a", "a"]  # the third is not run
    assert len(p.requests) == 4  # not the 10 rounds
    third = p.requests[3]["messages"][-1]
    assert third["is_error"] and "already made 2 times" in third["content"]
    assert "same call (echo)" in reply
    for r in p.requests:
        _check_history(r["messages"])
    # a note is enough when the model takes it; other calls, and arguments in another order, count apart
    b = _setup()
    p = Scripted(tools(("echo", {"x": "a", "pad": 1})), tools(("echo", {"pad": 1, "x": "a"}), prefix="u"),
                 tools(("echo", {"x": "b"}), prefix="v"), tools(("echo", {"x": "a", "pad": 1}), prefix="w"),
                 text("Here is what I found."))
    assert _agent(b, p).handle(_msg("go")) == "Here is what I found."
    assert [r[0] for r in ran] == ["a", "a", "b"]
    assert "already made" in p.requests[4]["messages"][-1]["content"]


def test_reasoning_content_is_kept_on_a_tool_turn_only():
    b = _setup()
    p = Scripted(tools(("echo", {"x": "a"}), think="I should echo."), text("done", reasoning_content="so, done"),
                 text("plain", reasoning_content="no tools here"), text("next"))
    a = _agent(b, p)
    a.handle(_msg("one"))
    a.handle(_msg("two"))
    a.handle(_msg("three"))
    msgs = p.requests[-1]["messages"]
    assistants = [m for m in msgs if m["role"] == "assistant"]
    assert assistants[0]["reasoning_content"] == "I should echo." and assistants[0]["tool_calls"]
    assert assistants[1]["reasoning_content"] == "so, done"  # the same turn's answer: DeepSeek wants it too
    assert "reasoning_content" not in assistants[2]  # a turn without tool calls: not needed, not kept
    long_ = "x" * 9000
    p = Scripted(tools(("echo", {"x": "a"}), think=long_), text("ok"))
    _agent(b, p).handle(_msg("four"))
    kept = [m for m in p.requests[1]["messages"] if m.get("reasoning_content")][-1]["reasoning_content"]
    assert 0 < len(kept) <= 4096


def test_a_request_too_long_for_the_context_is_shortened_once_then_explained():
    b = _setup()
    a = _agent(b, Scripted(*[text("answer %d" % i) for i in range(6)]))
    for i in range(6):
        a.handle(_msg("question %d" % i))
    full = common.LLMError("the request was refused (400): prompt is too long", 400)
    full.too_long = True
    p = Scripted(tools(("echo", {"x": "a", "pad": 3000})), full, text("short enough"))
    assert _agent(b, p).handle(_msg("big one")) == "short enough"
    tried, retried = p.requests[1]["messages"], p.requests[2]["messages"]
    assert len(tried) > 12 and [m["role"] for m in retried] == ["user", "assistant", "tool"]
    assert retried[0]["content"] == "big one" and len(retried[2]["content"]) <= 512
    _check_history(retried)
    p = Scripted(full, full)
    reply = _agent(b, p).handle(_msg("again"))
    assert "too long for the model" in reply and "/new" in reply and len(p.requests) == 2
    p = Scripted(full)  # a turn with nothing to take out: told at once
    sessions.clear("tg_42")
    assert "too long for the model" in _agent(b, p).handle(_msg("alone")) and len(p.requests) == 1


class Summarising(Scripted):
    """Answers each turn; a summary request (no tools) gets a summary naming what it read."""

    def chat(self, system, messages, tools, max_tokens):
        if not tools and "running summary" in str(bytes(system), "utf-8"):  # the agent's buffer, lent
            messages = [{"role": m["role"], "content": str(bytes(m["content"]), "utf-8")} for m in messages]
            self.requests.append({"system": str(bytes(system), "utf-8"), "messages": messages,
                                  "tools": [], "max_tokens": max_tokens, "summary": True})
            seen = [w for w in messages[0]["content"].split() if w.startswith("fact")]
            return text("Known: " + " ".join(seen), usage_=(100, 20))
        return Scripted.chat(self, system, messages, tools, max_tokens)


def test_a_damaged_summary_offset_starts_the_summary_again():
    # A summary file whose offset is negative (damaged by hand or on flash) must not stop
    # every later summary of the chat: the next one reads the history from the start.
    b = _setup()
    p = Summarising(*[text("noted") for _ in range(40)])
    a = _agent(b, p)
    fs.write(sessions.summary_path("tg_42"), json.dumps({"text": "old", "upto": -5, "gen": 0}))
    for i in range(12):
        a.handle(_msg("fact%d is worth keeping" % i))
    sums = [r for r in p.requests if r.get("summary")]
    assert sums and "fact0 " in sums[0]["messages"][0]["content"]
    assert sessions.summary("tg_42")["upto"] > 0


def test_a_summary_of_long_chinese_messages_fits_the_borrowed_buffer():
    # The summary call is written into the agent's 16 KB prompt buffer: its transcript is
    # capped in bytes (3 a character here), so the call is made, and holds the facts it kept.
    b = _setup()
    p = Summarising(*[text("记下了" * 100) for _ in range(40)])
    a = _agent(b, p)
    for i in range(12):
        a.handle(_msg("fact%d 这是一条很长的中文消息，" % i + "请记住它。" * 60))
    sums = [r for r in p.requests if r.get("summary")]
    assert sums and "User: fact" in sums[0]["messages"][0]["content"]
    for r in sums:
        assert len(r["messages"][0]["content"].encode()) <= 4096 + 1024 + 64
        assert "running summary" in r["system"]


def test_compaction_keeps_what_left_the_window():
    b = _setup()
    p = Summarising(*[text("noted") for _ in range(40)])
    a = _agent(b, p)
    for i in range(16):
        a.handle(_msg("fact%d is worth keeping" % i))
    sums = [r for r in p.requests if r.get("summary")]
    turns = [r for r in p.requests if not r.get("summary")]
    assert 1 <= len(sums) <= 16 // 5 + 1  # one small call at most every 5 turns
    assert sums[0]["max_tokens"] <= 400 and "fact0 " in sums[0]["messages"][0]["content"]
    assert "fact15" not in sums[-1]["messages"][0]["content"]  # the newest messages are not summarised yet
    last = turns[-1]
    assert "fact0" not in json.dumps(last["messages"])  # gone from the window...
    assert b"Earlier: Known: fact0" in last["system"]  # ...but in the summary the turn is given
    st = json.loads(fs.read(sessions.summary_path("tg_42"), 4096)[0])
    assert st["text"].startswith("Known: fact0") and st["upto"] > 0
    assert len(st["text"].encode()) <= 1024
    # /new clears it
    sessions.clear("tg_42")
    assert fs.size(sessions.summary_path("tg_42")) is None
    a.handle(_msg("hello after /new"))
    assert b"Earlier" not in p.requests[-1]["system"]


def test_compaction_off_makes_no_calls_and_gives_no_summary():
    b = _setup(compact="off")
    p = Summarising(*[text("noted") for _ in range(30)])
    a = _agent(b, p)
    for i in range(16):
        a.handle(_msg("fact%d" % i))
    assert not [r for r in p.requests if r.get("summary")] and len(p.requests) == 16
    fs.write(sessions.summary_path("tg_42"), json.dumps({"text": "old", "upto": 1, "gen": 0}))
    a.handle(_msg("x"))
    assert b"Earlier" not in p.requests[-1]["system"]


def test_a_failed_summary_call_is_not_the_users_problem():
    b = _setup()

    class Failing(Scripted):
        def chat(self, system, messages, tools, max_tokens):
            if not tools:
                raise common.LLMError("server error (500)", 500, True)
            return Scripted.chat(self, system, messages, tools, max_tokens)

    a = _agent(b, Failing(*[text("fine %d" % i) for i in range(14)]))
    for i in range(14):
        assert a.handle(_msg("m%d" % i)) == "fine %d" % i
    assert fs.size(sessions.summary_path("tg_42")) is None
