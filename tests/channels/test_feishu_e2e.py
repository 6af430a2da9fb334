"""The whole chain on both runtimes (host only): a Feishu message over the fake's long
connection -> the I/O thread -> the agent thread -> the fake OpenAI-compatible LLM, which
calls a tool -> the answer back as a Feishu post. The board runs as a subprocess, under
``python3`` (with host_sim's stand-ins) or under ``micropython``, with no Telegram token:
Feishu alone."""
import os
import subprocess
import sys
import threading

import pytest

from host_sim import hostenv
from host_sim.fakes.feishu import FakeFeishu
from host_sim.fakes.llm import FakeOpenAI, Reply

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMOJI = "\U0001F600"
USER = "ou_user0000000000000000000000000001"

SCRIPT = r'''
import os, sys
if sys.implementation.name != "micropython":
    sys.path.insert(0, %(root)r)
    from host_sim import hostenv
    hostenv.install(os.environ["MIMI_FLASH"])
from mimi import app, boot, commands, config, llm, seam

config.set("feishu_domain", "%(fs)s")
config.set("feishu_app_id", "%(app_id)s")
config.set("feishu_app_secret", "%(secret)s")
commands.allow("fs_%(user)s")
llm.switch(provider="openai", model="gpt-fake", base_url="%(llm)s")
llm.set_key("sk-FAKE-key")
boot.run()
assert app.init()
app.start()
t0 = seam.ticks_ms()
while seam.ticks_diff(seam.ticks_ms(), t0) < 60000:
    try:
        os.stat(seam.real_path("/stop"))
        break
    except OSError:
        seam.sleep_ms(20)
print("E2E-STOPPED", app.stop())
'''


@pytest.mark.parametrize("runtime", ["cpython", "micropython"])
def test_a_feishu_message_goes_through_the_agent_and_a_tool_and_back(tmp_path, runtime):
    fs = FakeFeishu().start()
    fake_llm = FakeOpenAI().start()
    fake_llm.script(Reply.tools([("get_current_time", {})], usage=(300, 20)),
                    Reply.text("It is **noon** " + EMOJI, usage=(340, 12)))
    flash = tmp_path / "flash"
    (flash / "data").mkdir(parents=True)
    script = tmp_path / "chain.py"
    script.write_text(SCRIPT % {"root": ROOT, "fs": fs.url, "app_id": fs.app_id, "secret": fs.app_secret,
                                "user": USER, "llm": fake_llm.base_url})
    if runtime == "micropython":
        cmd = [hostenv.micropython_exe(), "-X", "heapsize=1M", str(script)]
        env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=str(flash))
    else:
        cmd = [sys.executable, str(script)]
        env = dict(os.environ, MIMI_FLASH=str(flash))
    p = subprocess.Popen(cmd, env=env, cwd=str(flash), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    try:
        try:
            fs.wait_connected(timeout=30)
            fs.inject_text("what time is it?")
            fs.wait_sent(timeout=30)
            fs.inject_text("/status")
            fs.wait_sent(count=2, timeout=10)
            fs.wait_acks(2, timeout=5)
        finally:
            (flash / "stop").write_text("")
            p.wait(timeout=30)
            reader.join(5)
    except AssertionError as e:
        raise AssertionError("%s\n%s said:\n%s" % (e, runtime, "".join(lines)))
    finally:
        if p.poll() is None:
            p.kill()
        fs.stop()
        fake_llm.stop()
    out = "".join(lines)
    reply, status = fs.sent[0], fs.sent[1]
    assert reply["receive_id"] == USER and reply["receive_id_type"] == "open_id" and reply["msg_type"] == "post"
    assert reply["content"]["zh_cn"]["content"] == [[{"tag": "text", "text": "It is "},
                                                     {"tag": "text", "text": "noon", "style": ["bold"]},
                                                     {"tag": "text", "text": " " + EMOJI}]], out
    assert len(fake_llm.requests) == 2  # the tool round and the answer
    tool_msg = fake_llm.requests[1]["json"]["messages"][-1]
    assert tool_msg["role"] == "tool"  # the tool's result went back to the model
    st = status["content"]["text"]
    assert "Feishu: mimi, connected" in st and "tokens today: 640 in, 32 out" in st, st
    assert len(fs.acks) == 2 and all(a["payload"] == {"code": 200} for a in fs.acks)
    assert "E2E-STOPPED True" in out and "Traceback" not in out, out
