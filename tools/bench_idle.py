"""What the assistant costs while nobody writes: its threads' waits and CPU per idle minute.

    python3 tools/bench_idle.py [seconds]

Boots the app under ``micropython`` (the unix port, ``-X heapsize=2M``: the simulator's)
against the fake Telegram, whose long polls are held open as the real Bot API holds them,
and lets it idle for ``seconds`` (default 20) twice: once with the waits as they were
(``time.sleep_ms``), once as they are (``seam.wait_ms``). For each it prints, per idle
minute: the I/O loop's passes, the waits of all threads, the time the I/O loop's steps
take (``ticks_us`` around each: WiFi upkeep, Telegram, cron, heartbeat, supervision),
the process's CPU time on this machine (``/proc/PID/stat``), and what the waits would
spin on the chip.

The last figure is a model, from ports/esp32/mphalport.c (v1.28.0): ``mp_hal_delay_ms``
sleeps whole FreeRTOS ticks (10 ms) and spins the rest with the interpreter lock held.
A wait of 10 ms or more spins between 0 and 10 ms, 5 ms on average (its start falls
anywhere within a tick); a shorter one spins all of it. ``select.poll`` with a timeout,
what ``seam.wait_ms`` uses there, sleeps tick by tick and spins nothing. The unix port's
``sleep_ms`` does not spin, so this machine's CPU figure is the loop's own work.
"""
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import hostenv  # noqa: E402
from host_sim.fakes.telegram import FakeTelegram  # noqa: E402

APP = r'''
import os, time, _thread
from mimi import app, boot, commands, config, seam
config.set("tg_api_base", "%(url)s")
config.set("tg_token", "%(token)s")
commands.allow(42)
count = {"waits": 0, "wait_ms": 0, "spin_ms": 0, "passes": 0, "on": False}
OLD = %(old)d
real_sleep, real_wait = time.sleep_ms, seam.wait_ms

def chip_spin(ms):  # ports/esp32/mphalport.c mp_hal_delay_ms, on average
    return ms if ms < 10 else 5

def wait(ms):
    if count["on"]:
        count["waits"] += 1
        count["wait_ms"] += ms
        if OLD:
            count["spin_ms"] += chip_spin(ms)
    (real_sleep if OLD else real_wait)(ms)

def sleep(ms):
    if count["on"]:
        count["waits"] += 1
        count["wait_ms"] += ms
        count["spin_ms"] += chip_spin(ms)
    real_sleep(ms)

seam.wait_ms, seam.sleep_ms = wait, sleep
from mimi import services
from mimi.channels import telegram
work = [0]  # microseconds in the I/O loop's steps (its waits excluded)
def timed(owner, name, passes=False):
    f = getattr(owner, name)
    def g(*a):
        t = time.ticks_us()
        r = f(*a)
        if count["on"]:
            work[0] += time.ticks_diff(time.ticks_us(), t)
            if passes:
                count["passes"] += 1
        return r
    setattr(owner, name, g)
timed(boot.NetKeeper, "tick", True)  # once per pass
timed(telegram.Telegram, "tick")
timed(services.Cron, "tick")
timed(services.Heartbeat, "tick")
timed(app, "watch")

boot.run()
app.init()
app.start()
def flag(name):
    try:
        os.stat(seam.real_path("/" + name))
        return True
    except OSError:
        return False
while not flag("go"):  # this main thread waits by poll, whatever the mode: only the app's waits differ
    real_wait(50)
count["on"] = True
print("GO")
while not flag("stop"):
    real_wait(500)
count["on"] = False
print("COUNT %%d %%d %%d %%d %%d" %% (count["passes"], count["waits"], count["wait_ms"], count["spin_ms"], work[0]))
app.stop()
'''


def _cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")  # utime + stime


def run(seconds, old):
    exe = hostenv.micropython_exe()
    tmp = tempfile.mkdtemp(prefix="mimi-bench-idle-")
    os.makedirs(tmp + "/data")
    fake = FakeTelegram().start()
    with open(tmp + "/app.py", "w") as f:
        f.write(APP % {"url": fake.url, "token": fake.token, "old": 1 if old else 0})
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=tmp)
    p = subprocess.Popen([exe, "-X", "heapsize=2M", tmp + "/app.py"], env=env, cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        fake.wait_sent(lambda c: c.method == "setMyCommands", timeout=30)
        time.sleep(2)  # settled: the long poll is open, nothing else is due
        open(tmp + "/go", "w").close()
        time.sleep(0.2)
        c0, t0 = _cpu_ms(p.pid), time.time()
        time.sleep(seconds)
        c1, t1 = _cpu_ms(p.pid), time.time()
    finally:
        open(tmp + "/stop", "w").close()
        out, _ = p.communicate(timeout=30)
        fake.stop()
    line = [ln for ln in out.splitlines() if ln.startswith("COUNT ")]
    if not line:
        raise SystemExit(out[-3000:])
    passes, waits, wait_ms, spin_ms, work_us = (int(x) for x in line[0].split()[1:])
    per_min = 60.0 / (t1 - t0)
    return {"passes": passes * per_min, "waits": waits * per_min, "wait_ms": wait_ms * per_min,
            "spin_ms": spin_ms * per_min, "cpu_ms": (c1 - c0) * per_min, "work_ms": work_us / 1000 * per_min}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20
    print("Idle app under micropython (unix port), fake Telegram holding its long polls; %g s each; "
          "figures per idle minute" % seconds)
    print("%-24s %10s %8s %11s %13s %15s %16s" % ("waits", "I/O passes", "waits", "asked (ms)", "I/O work (ms)",
                                                  "process CPU (ms)", "chip spin (ms)"))
    rows = []
    for old, name in ((True, "time.sleep_ms (before)"), (False, "seam.wait_ms (now)")):
        r = run(seconds, old)
        rows.append(r)
        print("%-24s %10.0f %8.0f %11.0f %13.0f %15.0f %16.0f" % (name, r["passes"], r["waits"], r["wait_ms"],
                                                                 r["work_ms"], r["cpu_ms"], r["spin_ms"]))
    b, a = rows
    print("chip: spinning with the interpreter lock held, %.1f s of every idle minute before (%.0f%% of one core), "
          "%.1f s now" % (b["spin_ms"] / 1000, b["spin_ms"] / 600, a["spin_ms"] / 1000))
    print("here: the I/O loop's own steps take %.0f ms per idle minute (%.0f us a pass); the whole process %.0f ms "
          "of CPU, %.0f ms with sleep_ms (the unix port's sleep_ms wakes every millisecond)"
          % (a["work_ms"], a["work_ms"] * 1000 / max(1, a["passes"]), a["cpu_ms"], b["cpu_ms"]))


if __name__ == "__main__":
    main()
