"""Figures for the Feishu channel under MicroPython: the heap it holds and a chat round
trip through both threads against the fake Feishu (long connection in, open API out).

    python3 tools/bench_feishu.py [heapsize] [messages]

Boots the app under ``micropython -X heapsize=...`` (default 512K, the simulator's) with
an echo handler as the agent, twice: Telegram only (no Feishu app set: the Feishu
modules and buffers are not loaded), then Feishu only. For the second, ``messages``
(default 50) go one after another and the round trip is timed (event pushed -> reply
accepted, as the fake sees it). Prints the heap after ``init()``, the highest
``gc.mem_alloc()`` seen while the messages went through, and the difference between the
two runs. TLS is not in these figures: the fake speaks plain ws:// and http:// on
loopback (on the board the long connection is one more TLS session, README "Feishu").
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
from host_sim.fakes.feishu import FakeFeishu  # noqa: E402

APP = r'''
import gc, os, time
from mimi import app, boot, commands, config, seam
if "%(fs)s":
    config.set("feishu_domain", "%(fs)s")
    config.set("feishu_app_id", "%(app_id)s")
    config.set("feishu_app_secret", "%(secret)s")
commands.allow("fs_%(user)s")

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
USER = "ou_user0000000000000000000000000001"


def run(exe, heap, n, fs):
    tmp = tempfile.mkdtemp(prefix="mimi-bench-fs-")
    os.makedirs(tmp + "/data")
    with open(tmp + "/app.py", "w") as f:
        f.write(APP % {"fs": fs.url if fs else "", "app_id": fs.app_id if fs else "",
                       "secret": fs.app_secret if fs else "", "user": USER})
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=tmp)
    p = subprocess.Popen([exe, "-X", "heapsize=" + heap, tmp + "/app.py"], env=env, cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    times = []
    try:
        if fs:
            fs.wait_connected(timeout=20)
            for i in range(n):
                t0 = time.time()
                fs.inject_text("message %d \U0001F600" % i)
                fs.wait_sent(count=i + 1, timeout=20)
                times.append((time.time() - t0) * 1000)
        else:
            time.sleep(3)
    finally:
        open(tmp + "/stop", "w").close()
        out, _ = p.communicate(timeout=30)
    line = [ln for ln in out.splitlines() if ln.startswith("HEAP")]
    if not line:
        raise SystemExit(out[-3000:])
    f = line[0].split()
    return {"after": int(f[4]), "peak": int(f[6])}, times, out


def main():
    heap = sys.argv[1] if len(sys.argv) > 1 else "512K"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    exe = hostenv.micropython_exe()
    print("== app under micropython -X heapsize=%s, Telegram only (no Feishu app set)" % heap, flush=True)
    base, _, _ = run(exe, heap, n, None)
    print("heap after init %d B, peak %d B" % (base["after"], base["peak"]))
    print("== the same with a Feishu app, %d messages over the long connection" % n, flush=True)
    fs = FakeFeishu().start()
    try:
        got, times, out = run(exe, heap, n, fs)
    finally:
        fs.stop()
    print("heap after init %d B, peak %d B" % (got["after"], got["peak"]))
    print("Feishu's share: %+d B after init (modules and buffers), %+d B at the peak"
          % (got["after"] - base["after"], got["peak"] - base["peak"]))
    print("round trip (event in -> reply accepted): median %.1f ms, p90 %.1f ms, max %.1f ms"
          % (statistics.median(times), sorted(times)[int(len(times) * 0.9) - 1], max(times)))
    print("acknowledged %d of %d events; replies %d" % (len(fs.acks), n, len(fs.sent)))
    errors = [ln for ln in out.splitlines() if ln.startswith("E ") or "Traceback" in ln]
    if errors:
        print("errors:\n" + "\n".join(errors[:10]))


if __name__ == "__main__":
    main()
