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
