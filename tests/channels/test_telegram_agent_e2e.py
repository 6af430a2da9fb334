"""The whole chain under ``micropython``: fake Telegram -> I/O thread -> agent thread ->
fake OpenAI-compatible LLM -> a tool -> reply on Telegram (host only).

Needs the agent and the LLM fakes (another part); skipped until they are installed.
"""
import os
import subprocess
import threading

import pytest

from host_sim import hostenv
from host_sim.fakes.telegram import FakeTelegram

llm_fakes = pytest.importorskip("host_sim.fakes.llm")
pytest.importorskip("mimi.agent.loop")
pytest.importorskip("mimi.llm")

EMOJI = "\U0001F600"

SCRIPT = r'''
import os, time
from mimi import app, boot, commands, config, llm, seam

config.set("tg_api_base", "%(tg)s")
config.set("tg_token", "%(token)s")
commands.allow(42)
llm.switch(provider="openai", model="gpt-fake", base_url="%(llm)s")
llm.set_key("sk-FAKE-key")
boot.run()
assert app.init()
app.start()
t0 = time.ticks_ms()
while time.ticks_diff(time.ticks_ms(), t0) < 60000:
    try:
        os.stat(seam.real_path("/stop"))
        break
    except OSError:
        time.sleep_ms(20)
print("E2E-STOPPED", app.stop())
'''


def test_a_question_goes_through_the_agent_and_a_tool_and_back(tmp_path):
    exe = hostenv.micropython_exe()
    tg = FakeTelegram().start()
    fake_llm = llm_fakes.FakeOpenAI().start()
    fake_llm.script(llm_fakes.Reply.tools([("get_current_time", {})], usage=(300, 20)),
                    llm_fakes.Reply.text("It is **noon** " + EMOJI, usage=(340, 12)))
    flash = tmp_path / "flash"
    (flash / "data").mkdir(parents=True)
    script = tmp_path / "chain.py"
    script.write_text(SCRIPT % {"tg": tg.url, "token": tg.token, "llm": fake_llm.base_url})
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=str(flash))
    p = subprocess.Popen([exe, "-X", "heapsize=1M", str(script)], env=env, cwd=str(flash),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    try:
        try:
            tg.wait_sent(lambda c: c.method == "setMyCommands", timeout=20)
            tg.inject_text(42, "what time is it?")
            tg.wait_sent(lambda c: c.method == "sendMessage", timeout=30)
            tg.inject_text(42, "/status")
            tg.wait_sent(lambda c: c.method == "sendMessage", count=2, timeout=10)
        finally:
            (flash / "stop").write_text("")
            p.wait(timeout=30)
            reader.join(5)
    except AssertionError as e:
        raise AssertionError("%s\nmicropython said:\n%s" % (e, "".join(lines)))
    finally:
        if p.poll() is None:
            p.kill()
        tg.stop()
        fake_llm.stop()
    out = "".join(lines)
    texts = tg.texts(42)
    assert texts[0] == "It is noon " + EMOJI, out
    reply = [c for c in tg.sent if c.method == "sendMessage"][0]
    assert reply.result["entities"][0]["type"] == "bold"
    assert any(c.method == "sendChatAction" for c in tg.sent)  # typing while the agent worked
    assert len(fake_llm.requests) == 2  # the tool round and the answer
    assert "tokens today: 640 in, 32 out" in texts[1], texts[1]
    assert "E2E-STOPPED True" in out and "Traceback" not in out, out
