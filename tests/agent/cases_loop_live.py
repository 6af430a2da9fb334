"""Client half of the agent's end-to-end test: the loop, a real provider, the real file
tools and sessions, against the fake LLM servers (run by ``test_loop_live.py`` under
CPython and MicroPython)."""
import os
import sys

from mimi import bus as busmod, config
from mimi.agent import loop
from mimi.llm import common
from mimi.tools import files, registry
import mimi.llm as llm
import support

sys.path.append((os.getenv("MIMI_TESTS") or "tests") + "/llm")
import fakectl  # noqa: E402


class Ctx:
    """A 16 KB system prompt (the context builder is tested on its own)."""

    def __init__(self):
        self.buf = bytearray(16384)
        line = "rule: be brief, read before you write. ü\n".encode()
        n = 0
        while n + len(line) <= len(self.buf):
            self.buf[n:n + len(line)] = line
            n += len(line)
        self.n = n

    def build(self, msg, extra=None):
        return self.n

    def view(self):
        return memoryview(self.buf)[:self.n]


def _run(provider, base_url):
    root = support.fresh_flash()
    config.set("owner_chat", "5")  # the owner's chat reads /data/notes (tests/runtime/test_trust.py: the others)
    support.write(root + "/data/notes/todo.md", "- buy milk\n- call mum\n")
    registry.clear()
    files.register_all()
    common._sleep_ms = lambda ms: None
    llm.set_key("sk-FAKE-0123456789", provider)
    llm.switch(provider, "test-model", base_url)
    url = base_url[:-3] if base_url.endswith("/v1") else base_url
    fakectl.reset(url)
    fakectl.script(url, fakectl.reply("tools", calls=[["read_file", {"path": "/data/notes/todo.md"}]]),
                   fakectl.reply("text", text="You have 2 things: milk and mum."))
    b = busmod.Bus(8, 16)
    a = loop.Agent(b, Ctx())
    reply = a.handle({"channel": "telegram", "chat_id": "5", "text": "what is on my list?", "session": "tg_5"})
    assert reply == "You have 2 things: milk and mum.", reply
    reqs = fakectl.requests(url)
    assert len(reqs) == 2
    return reqs


def test_anthropic_end_to_end_with_read_file():
    reqs = _run("anthropic", os.getenv("MIMI_T_ANTHROPIC"))
    body = reqs[1]["json"]
    assert body["model"] == "test-model" and len(body["system"].encode()) > 16000
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["content"] == "- buy milk\n- call mum\n"
    assert "read_file" in [t["name"] for t in body["tools"]]


def test_openai_compatible_end_to_end_with_read_file():
    reqs = _run("custom", os.getenv("MIMI_T_OPENAI") + "/v1")
    msgs = reqs[1]["json"]["messages"]
    assert msgs[0]["role"] == "system"
    assert msgs[-1]["role"] == "tool" and msgs[-1]["content"] == "- buy milk\n- call mum\n"


def test_real_context_reaches_the_request():
    from mimi.agent.context import Context
    root = support.fresh_flash()
    support.write(root + "/data/config/SOUL.md", "# Soul\nI am mimi-under-test, fond of radishes.\n")
    registry.clear()
    common._sleep_ms = lambda ms: None
    url = os.getenv("MIMI_T_ANTHROPIC")
    llm.set_key("sk-FAKE-0123456789", "anthropic")
    llm.switch("anthropic", "test-model", url)
    fakectl.reset(url)
    fakectl.script(url, fakectl.reply("text", text="Radishes, always."))
    a = loop.Agent(busmod.Bus(8, 16), Context())
    assert a.handle({"channel": "telegram", "chat_id": "9", "text": "favourite food?", "session": "tg_9"}) \
        == "Radishes, always."
    system = fakectl.requests(url)[0]["json"]["system"]
    assert "fond of radishes" in system
    assert "9" in system  # the turn block names the chat


# -- real chats (issue 13) -----------------------------------------------------------------

REFUSAL_TRIGGER = "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL_1FAEFB6177B4672DEE07F9D3AFC62588CCD2631EDCF22E8CCC1FB35B501C9C86"


def _agent_for(provider, base_url, chat):
    root = support.fresh_flash()
    config.set("owner_chat", chat)  # the owner's chat (the other chats' reach: tests/runtime/test_trust.py)
    support.write(root + "/data/notes/todo.md", "- buy milk\n- call mum\n")
    registry.clear()
    files.register_all()
    common._sleep_ms = lambda ms: None
    llm.set_key("sk-FAKE-0123456789", provider)
    llm.switch(provider, "test-model", base_url)
    url = base_url[:-3] if base_url.endswith("/v1") else base_url
    fakectl.reset(url)
    a = loop.Agent(busmod.Bus(8, 64), Ctx())

    def ask(text):
        return a.handle({"channel": "telegram", "chat_id": chat, "text": text, "session": "tg_" + chat})
    return url, ask


def test_deepseek_thinking_mode_gets_its_reasoning_back():
    url, ask = _agent_for("deepseek", os.getenv("MIMI_T_OPENAI") + "/v1", "21")
    fakectl.config(url, thinking=True)  # the fake answers 400 as DeepSeek does when reasoning_content is missing
    fakectl.script(url, fakectl.reply("tools", calls=[["read_file", {"path": "/data/notes/todo.md"}]],
                                      reasoning="The list is in notes."),
                   fakectl.reply("text", text="Milk and mum."), fakectl.reply("text", text="You are welcome."))
    assert ask("what is on my list?") == "Milk and mum."
    assert ask("thanks") == "You are welcome."
    reqs = fakectl.requests(url)
    assert len(reqs) == 3
    calls = [m for m in reqs[2]["json"]["messages"] if m.get("tool_calls")]
    assert calls[0]["reasoning_content"] == "The list is in notes."


def test_a_refused_message_does_not_make_the_next_ones_refused():
    url, ask = _agent_for("anthropic", os.getenv("MIMI_T_ANTHROPIC"), "22")
    fakectl.script(url, fakectl.reply("text", text="Hello!"))
    reply = ask("say " + REFUSAL_TRIGGER)  # the fake refuses every request that still holds it
    assert "declined" in reply, reply
    assert ask("hi again") == "Hello!"
    last = fakectl.requests(url)[-1]["json"]["messages"]
    assert REFUSAL_TRIGGER not in str(last) and len(last) == 1


def test_a_cut_write_file_never_touches_the_file():
    url, ask = _agent_for("anthropic", os.getenv("MIMI_T_ANTHROPIC"), "23")
    fakectl.script(url, fakectl.reply("tools", stop="max_tokens", calls=[
        ["write_file", {"path": "/data/notes/todo.md", "content": "- buy"}]]),
        fakectl.reply("text", text="I will write it in two parts."))
    assert ask("rewrite my list") == "I will write it in two parts."
    from mimi.storage import fs
    assert fs.read("/data/notes/todo.md", 100)[0] == b"- buy milk\n- call mum\n"  # untouched
    result = fakectl.requests(url)[1]["json"]["messages"][-1]["content"][0]
    assert result["is_error"] and "length limit" in result["content"]


def test_a_tool_call_written_as_text_runs():
    url, ask = _agent_for("custom", os.getenv("MIMI_T_OPENAI") + "/v1", "24")
    fakectl.script(url, fakectl.reply("text", text='Checking.\n<tool_call>\n{"name": "read_file", "arguments": '
                                                   '{"path": "/data/notes/todo.md"}}\n</tool_call>'),
                   fakectl.reply("text", text="Milk, then mum."))
    assert ask("my list?") == "Milk, then mum."
    msgs = fakectl.requests(url)[1]["json"]["messages"]
    assert msgs[-1]["role"] == "tool" and msgs[-1]["content"] == "- buy milk\n- call mum\n"
    assert msgs[-2]["content"] == "Checking." and msgs[-2]["tool_calls"][0]["function"]["name"] == "read_file"


def test_an_error_object_in_a_200_reaches_the_user():
    url, ask = _agent_for("openrouter", os.getenv("MIMI_T_OPENAI") + "/v1", "25")
    fakectl.script(url, *[fakectl.reply("body_error", code=502, message="Upstream provider is down")] * 3)
    reply = ask("hi")
    assert reply == "Sorry, I could not answer: openrouter reported an error (502).", reply  # not its words
    assert len(fakectl.requests(url)) == 3  # a 502 is worth the retries


def test_a_full_context_is_shortened_and_answered():
    url, ask = _agent_for("custom", os.getenv("MIMI_T_OPENAI") + "/v1", "26")
    from mimi.storage import sessions
    for i in range(8):
        sessions.append("tg_26", {"role": "user", "content": "question %d" % i})
        sessions.append("tg_26", {"role": "assistant", "content": ("a long answer %d. " % i) * 60})
    fakectl.config(url, context_tokens=6000)  # the 16 KB prompt and this turn fit; with the history, not
    fakectl.script(url, fakectl.reply("text", text="Short answer."))
    assert ask("and now?") == "Short answer."
    reqs = fakectl.requests(url)
    assert len(reqs) == 2 and len(reqs[1]["json"]["messages"]) == 2  # the system prompt and this question
    fakectl.config(url, context_tokens=1000)  # even this turn alone does not fit: the user is told
    reply = ask("and now?")
    assert "too long for the model" in reply and "maximum context length" not in reply, reply  # no raw words
