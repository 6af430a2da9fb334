"""Figures for MQTT and Home Assistant under MicroPython: the heap they hold and a command
round trip (Home Assistant switches a pin, the board publishes the new state).

    python3 tools/bench_mqtt.py [heapsize] [commands]

Starts a mosquitto (Debian's; the tests' ``tests/net/brokers.py``) and boots the app under
``micropython -X heapsize=...`` (default 512K, the simulator's; ``MIMI_MICROPYTHON`` picks
the binary, e.g. ../shared/tools/micropython32) with an echo agent and the seed datasheet,
twice: without ``mqtt_url`` (nothing of MQTT is loaded), then with it. For the second,
paho-mqtt (as Home Assistant) waits for the discovery, then sends ``commands`` (default 40)
ON/OFF commands to the LED's switch one after another, each timed from sending to the
state coming back; then each idles 20 s, its CPU time measured. Prints the heap after ``init()`` and, after a collection, while running
(connected, after the commands), and the differences. Plain ``mqtt://`` on loopback: a
board's ``mqtts://`` adds one TLS session in internal RAM, not GC heap (docs/heap.md).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))

from host_sim import hostenv  # noqa: E402

APP = r'''
import gc, os, time
from mimi import app, boot, config, seam
if "%(url)s":
    config.set("mqtt_url", "%(url)s")

class Echo:
    def __init__(self, b):
        self.bus = b
    def run(self, stop):
        while not stop():
            m = self.bus.inbound.get(20)
            if m is not None:
                self.bus.send(m["channel"], m["chat_id"], "echo: " + m["text"])

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
gc.collect()
connected = gc.mem_alloc()
app.stop()
gc.collect()
print("HEAP before-init %%d after-init %%d peak %%d connected %%d free %%d" %% (before, after, peak, connected, gc.mem_free()))
'''
NODE = "7cdfa100511a"  # host_sim's machine.unique_id()


IDLE_S = 20  # the idle window whose CPU time is measured


def _cpu_s(pid):
    """User plus system CPU seconds of process ``pid`` so far (Linux's /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(exe, heap, n, broker):
    tmp = tempfile.mkdtemp(prefix="mimi-bench-mqtt-")
    shutil.copytree(os.path.join(ROOT, "spiffs_seed"), tmp + "/data")
    with open(tmp + "/app.py", "w") as f:
        f.write(APP % {"url": broker.url if broker else ""})
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=tmp)
    p = subprocess.Popen([exe, "-X", "heapsize=" + heap, tmp + "/app.py"], env=env, cwd=tmp,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    times = []
    try:
        if broker:
            from brokers import Ha

            ha = Ha(broker)
            base = "mimi/%s/onboard_led/" % NODE
            json.loads(ha.wait("homeassistant/switch/mimi_%s/onboard_led/config" % NODE, timeout_s=60))
            ha.wait(base + "state", b"OFF")
            for i in range(n):
                want = b"ON" if i % 2 == 0 else b"OFF"
                k = len(ha.seen)
                t0 = time.time()
                ha.send(base + "set", want)
                ha.wait(base + "state", want, after=k)
                times.append((time.time() - t0) * 1000)
            ha.stop()
        else:
            time.sleep(3)
        c0 = _cpu_s(p.pid)
        time.sleep(IDLE_S)  # idle: nobody writes, nothing switches (inputs polled, keep-alive)
        cpu = (_cpu_s(p.pid) - c0) / IDLE_S * 60
    finally:
        open(tmp + "/stop", "w").close()
        out, _ = p.communicate(timeout=30)
    line = [ln for ln in out.splitlines() if ln.startswith("HEAP")]
    if not line:
        raise SystemExit(out[-3000:])
    f = line[0].split()
    return {"after": int(f[4]), "peak": int(f[6]), "connected": int(f[8]), "cpu": cpu}, times, out


def main():
    heap = sys.argv[1] if len(sys.argv) > 1 else "512K"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    exe = hostenv.micropython_exe()
    print("== %s -X heapsize=%s, no mqtt_url" % (exe, heap), flush=True)
    base, _, _ = run(exe, heap, n, None)
    print("heap after init %d B, running (after a collection) %d B; idle CPU %.2f s a minute"
          % (base["after"], base["connected"], base["cpu"]))
    from brokers import Broker

    broker = Broker()
    try:
        print("== the same with mqtt_url (mosquitto on loopback), %d commands from Home Assistant" % n, flush=True)
        got, times, out = run(exe, heap, n, broker)
    finally:
        broker.stop()
    print("heap after init %d B, connected (after a collection) %d B; idle CPU %.2f s a minute"
          % (got["after"], got["connected"], got["cpu"]))
    print("MQTT's share: %+d B after init (modules, umqtt, the tool), %+d B while connected"
          % (got["after"] - base["after"], got["connected"] - base["connected"]))
    print("command round trip (HA's set -> the board's state): median %.1f ms, p90 %.1f ms, max %.1f ms"
          % (statistics.median(times), sorted(times)[int(len(times) * 0.9) - 1], max(times)))
    errors = [ln for ln in out.splitlines() if ln.startswith("E ") or "Traceback" in ln]
    if errors:
        print("errors:\n" + "\n".join(errors[:10]))


if __name__ == "__main__":
    main()
