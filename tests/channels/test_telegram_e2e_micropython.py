"""End to end under the ``micropython`` command: the firmware's app (boot, two threads,
Telegram over mimi's HTTP client) against the fake Bot API on the host (host only).

An echo handler stands in for the agent. The heap is 512 KB, the simulator's default
(every module is compiled from .py on a 64-bit port: about twice the board's RAM).
"""
import os
import subprocess
import threading

from host_sim import hostenv
from host_sim.fakes.telegram import FakeTelegram

EMOJI = "\U0001F600"

SCRIPT = r'''
import gc, os, time
from mimi import app, boot, commands, config, seam

config.set("tg_api_base", "%(url)s")
config.set("tg_token", "%(token)s")
commands.allow(42)
commands.allow(-100500)


class Echo:
    def __init__(self, b):
        self.bus = b

    def handle(self, m):
        self.bus.send(m["channel"], m["chat_id"], "", "typing")
        time.sleep_ms(500)  # the agent at work (an LLM call): long enough for the I/O loop to show typing
        self.bus.send(m["channel"], m["chat_id"], "echo: **" + m["text"] + "**")
        self.bus.send(m["channel"], m["chat_id"], "", "idle")

    def run(self, stop):
        while not stop():
            m = self.bus.inbound.get(50)
            if m is not None:
                self.handle(m)


boot.run()
assert app.init(agent_factory=Echo)
gc.collect()
base = gc.mem_alloc()
app.start()
t0 = time.ticks_ms()
peak = 0
while time.ticks_diff(time.ticks_ms(), t0) < 40000:
    try:
        os.stat(seam.real_path("/stop"))
        break
    except OSError:
        pass
    peak = max(peak, gc.mem_alloc())
    time.sleep_ms(20)
ok = app.stop()
gc.collect()
print("E2E-STOPPED", ok, "heap-after-init", base, "peak", peak, "free", gc.mem_free())
'''


def test_firmware_under_micropython_talks_to_the_fake(tmp_path):
    exe = hostenv.micropython_exe()
    assert exe, "the micropython command is missing"
    fake = FakeTelegram().start()
    flash = tmp_path / "flash"
    (flash / "data").mkdir(parents=True)
    script = tmp_path / "e2e.py"
    script.write_text(SCRIPT % {"url": fake.url, "token": fake.token})
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=str(flash))
    p = subprocess.Popen([exe, "-X", "heapsize=512K", str(script)], env=env, cwd=str(flash),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    try:
        try:
            fake.wait_sent(lambda c: c.method == "setMyCommands", timeout=15)
            fake.inject_text(42, "hello " + EMOJI)
            fake.inject_group_text(-100500, "@mimi_test_bot group " + EMOJI)
            fake.inject_sticker(42)
            fake.wait_sent(lambda c: c.method == "sendMessage", count=3, timeout=15)
            fake.wait_sent(lambda c: c.method == "sendChatAction", timeout=5)
        finally:
            (flash / "stop").write_text("")
            p.wait(timeout=30)
            reader.join(5)
    except AssertionError as e:
        raise AssertionError("%s\nmicropython said:\n%s" % (e, "".join(lines)))
    finally:
        if p.poll() is None:
            p.kill()
        fake.stop()
    out = "".join(lines)
    texts = fake.texts(42)
    assert "echo: hello " + EMOJI in texts, out  # bold text, emoji whole (UTF-16 offsets right)
    assert "I can read text only" in " ".join(texts)
    assert fake.texts(-100500) == ["echo: group " + EMOJI]
    bold = [c for c in fake.sent if c.method == "sendMessage" and c.result.get("entities")]
    assert bold and bold[0].result["entities"][0]["type"] == "bold"
    assert "E2E-STOPPED True" in out, out
    assert "Traceback" not in out, out
    print(out.splitlines()[-1])  # heap figures, for the report
