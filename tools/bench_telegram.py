"""Figures for the runtime under MicroPython: Telegram formatting cost, the heap the app
holds, and a chat round trip through both threads against the fake Bot API.

    python3 tools/bench_telegram.py [heapsize] [messages]

Part 1 runs ``micropython`` on the formatting functions (a 4 KB reply, a 16 KB reply, a
text full of emoji from JSON escapes). Part 2 boots the app under ``micropython -X
heapsize=...`` (default 512K, the simulator's) with an echo handler as the agent, against the fake Telegram
on the host, sends ``messages`` (default 100) one after another and prints the round trip
(update in -> reply out, as the fake sees it) and the heap: after ``init()``, and the
highest ``gc.mem_alloc()`` seen while the messages went through.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import hostenv  # noqa: E402
from host_sim.fakes.telegram import FakeTelegram  # noqa: E402

FORMAT = r'''
import gc, json, time
from mimi.channels import tgformat as f
para = "Here is **the plan** for `today`, with a [link](https://example.org) & more.\n" * 3
reply4k = (para + "\n") * 16
reply16k = reply4k * 4
emoji = json.loads('"' + "hi \\ud83d\\ude00 " * 400 + '"')
def t(name, fn, n):
    gc.collect()
    t0 = time.ticks_us()
    for _ in range(n):
        fn()
    dt = time.ticks_diff(time.ticks_us(), t0) / n / 1000
    print("%-44s %8.2f ms" % (name, dt))
t("md_to_html, %d-byte reply" % len(reply4k), lambda: f.md_to_html(reply4k), 20)
t("split, %d-byte reply" % len(reply16k), lambda: f.split(reply16k), 20)
t("split + md_to_html of every chunk, 16 KB", lambda: [f.md_to_html(c) for c in f.split(reply16k)], 10)
t("fix_surrogates, 400 emoji from JSON escapes", lambda: f.fix_surrogates(emoji), 20)
t("utf16_len, 16 KB", lambda: f.utf16_len(reply16k), 20)
# A poll answer holding one update (a reply to a long message), read through the pruner in
# 512-byte pieces as telegram.updates does: the bytes parsed per update (issue 17).
from mimi.channels import tgupdate
upd = {"update_id": 734519102, "message": {"message_id": 4821, "from": {"id": 5551234567, "is_bot": False,
       "first_name": "Ann", "username": "annlee", "language_code": "en"}, "chat": {"id": 5551234567,
       "first_name": "Ann", "type": "private"}, "date": 1765000000, "text": "could you switch the porch light on?",
       "reply_to_message": {"message_id": 4820, "from": {"id": 7000000001, "is_bot": True, "first_name": "mimi"},
       "chat": {"id": 5551234567, "type": "private"}, "date": 1764999000, "text": "Good morning! \u00e9\n" * 30},
       "entities": [{"offset": 0, "length": 5, "type": "bold"}]}}
poll = json.dumps({"ok": True, "result": [upd]}).encode()
pbuf = bytearray(16384)
def prune():
    pr = tgupdate.Pruner(pbuf)
    for i in range(0, len(poll), 512):
        pr.feed(memoryview(poll)[i:i + 512])
t("tgupdate.Pruner, a %d-byte poll answer" % len(poll), prune, 50)
'''

APP = r'''
import gc, os, time
from mimi import app, boot, config, seam
from mimi import commands
config.set("tg_api_base", "%(url)s")
config.set("tg_token", "%(token)s")
commands.allow(42)

class Echo:
    def __init__(self, b):
        self.bus = b
    def run(self, stop):
        while not stop():
            m = self.bus.inbound.get(20)
            if m is not None:
                self.bus.send(m["channel"], m["chat_id"], "echo: **" + m["text"] + "**")

boot.run()
gc.collect()
before = gc.mem_alloc()
app.init(agent_factory=Echo)
gc.collect()
after = gc.mem_alloc()
app.start()
peak = 0
while True:
    try:
        os.stat(seam.real_path("/stop"))
        break
    except OSError:
        pass
    peak = max(peak, gc.mem_alloc())
    time.sleep_ms(5)
app.stop()
gc.collect()
print("HEAP before-init %%d after-init %%d peak %%d end %%d free %%d" %% (before, after, peak, gc.mem_alloc(), gc.mem_free()))
'''


def env(flash):
    return dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=flash)


def main():
    heap = sys.argv[1] if len(sys.argv) > 1 else "512K"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    exe = hostenv.micropython_exe()
    if not exe:
        print("%s: %s" % (os.path.basename(__file__), hostenv.micropython_missing()), file=sys.stderr)
        return 2
    print("== micropython: %s" % hostenv.micropython_about(exe), flush=True)
    tmp = tempfile.mkdtemp(prefix="mimi-bench-tg-")
    os.makedirs(tmp + "/data")
    print("== formatting (micropython)", flush=True)
    with open(tmp + "/fmt.py", "w") as f:
        f.write(FORMAT)
    subprocess.run([exe, "-X", "heapsize=" + heap, tmp + "/fmt.py"], env=env(tmp), check=True)

    print("== app under micropython -X heapsize=%s, %d messages through both threads" % (heap, n), flush=True)
    fake = FakeTelegram().start()
    with open(tmp + "/app.py", "w") as f:
        f.write(APP % {"url": fake.url, "token": fake.token})
    p = subprocess.Popen([exe, "-X", "heapsize=" + heap, tmp + "/app.py"], env=env(tmp), cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        fake.wait_sent(lambda c: c.method == "setMyCommands", timeout=20)
        time.sleep(0.2)  # the first long poll is open
        times = []
        for i in range(n):
            t0 = time.time()
            fake.inject_text(42, "message %d \U0001F600" % i)
            fake.wait_sent(lambda c: c.method == "sendMessage", count=i + 1, timeout=20)
            times.append((time.time() - t0) * 1000)
    except AssertionError:
        open(tmp + "/stop", "w").close()
        print(p.communicate(timeout=30)[0][-3000:])
        raise
    finally:
        open(tmp + "/stop", "w").close()
        out, _ = p.communicate(timeout=30)
        fake.stop()
    heap_line = [line for line in out.splitlines() if line.startswith("HEAP")]
    errors = [line for line in out.splitlines() if line.startswith("E ") or "Traceback" in line]
    print("round trip (update in -> reply out): median %.1f ms, p90 %.1f ms, max %.1f ms"
          % (statistics.median(times), sorted(times)[int(len(times) * 0.9) - 1], max(times)))
    print("replies: %d, all accepted by the fake: %s" % (len(fake.texts(42)), len(fake.texts(42)) == n))
    print(heap_line[0] if heap_line else out[-2000:])
    if errors:
        print("errors:\n" + "\n".join(errors[:10]))


if __name__ == "__main__":
    main()
