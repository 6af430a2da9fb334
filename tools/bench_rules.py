"""What the automations cost in RAM and CPU, under MicroPython (issue 18).

    python3 tools/bench_rules.py

Run with CPython: it prepares a scratch flash (a datasheet with a button, outputs and
sensors in its Pin Aliases table) and runs this same file under ``micropython -X
heapsize=512K`` (the unix port, 64-bit) and, when it is there, under
``../shared/tools/micropython32`` (32-bit, as the ESP32-S3's pointers are). Each prints,
from ``gc.mem_alloc()`` after a collection:
- the 7 rule tools registered (``registry.load``), what every app holds (init), and
  ``mimi.rules.chat`` (the tools' bodies), ``.engine``, ``.store`` and ``.actions``, loaded
  once a rule tool is called or ``/data/rules.json`` exists (``mimi.rules.tick``);
- ``mimi.hw.sensors`` and ``mimi.hw.gpio``, loaded once a rule reads a sensor or drives a pin;
- 16 rules (the most there may be: 4 pin edges, 4 sensor thresholds, 4 daily, 2 every,
  2 MQTT) loaded by the engine with their running state, after a few ticks;
- the microseconds of one engine tick with those 16 rules when nothing fires (mean of
  2000; ``time.ticks_us``), and of one tick that reloads the file (after a change).
The host is roughly 10-20 times faster than an ESP32-S3 at 240 MHz for the same bytecode.
"""
import sys

if sys.implementation.name != "micropython":
    import os
    import shutil
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from host_sim import hostenv

    _SHEET = ("# Bench board\n\n## Pin Aliases\n| b1 | 1 | in |\n| b2 | 2 | in |\n| b3 | 4 | in |\n| b4 | 5 | in |\n"
              "| fan | 6 |\n| lamp | 7 |\n| room | 8 | dht22 |\n| tank | 9 | ds18b20 |\n| light | 10 | adc |\n")

    def main():
        exes = []
        if hostenv.micropython_exe():
            exes.append(("64-bit", hostenv.micropython_exe()))
        m32 = os.path.join(os.path.dirname(root), "shared", "tools", "micropython32")
        if not os.path.exists(m32):
            m32 = "/work/shared/tools/micropython32"
        if os.path.exists(m32):
            exes.append(("32-bit", m32))
        if not exes:
            print("bench_rules: %s" % hostenv.micropython_missing(), file=sys.stderr)
            return 2
        rc = 0
        for name, exe in exes:
            flash = tempfile.mkdtemp(prefix="mimi-bench-rules-")
            os.makedirs(os.path.join(flash, "data", "datasheets"))
            with open(os.path.join(flash, "data", "datasheets", "esp32-s3-devkitc-1.md"), "w") as f:
                f.write(_SHEET)
            print("== micropython %s: %s" % (name, exe), flush=True)
            env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=flash)
            try:
                rc = subprocess.call([exe, "-X", "heapsize=512K", __file__], env=env, cwd=root) or rc
            finally:
                shutil.rmtree(flash, ignore_errors=True)
        return rc

    raise SystemExit(main())

import gc
import time

# What the app has loaded anyway before the rules (app.init, APP_PRELOAD).
from mimi import bus, clock, commands, config, log, seam  # noqa: E402, F401
from mimi.hw import datasheets, pins  # noqa: E402, F401
from mimi.storage import fs, sessions  # noqa: E402, F401
from mimi.tools import registry  # noqa: E402, F401

import dht  # noqa: E402
import ds18x20  # noqa: E402
import machine  # noqa: E402

log.level = 40  # errors only: the figures stay readable
T0 = 1767225600


def used():
    gc.collect()
    gc.collect()
    return gc.mem_alloc()


config.set("tz", "+08:00")
config.set("owner_chat", "42")
datasheets.aliases()  # the index, built before measuring
m0 = used()
from mimi.tools import registry  # noqa: E402

registry.load(("mimi.rules.chat",))
m1 = used()
from mimi.rules import actions, chat, engine, store  # noqa: E402, F401

m2 = used()
from mimi.hw import gpio, sensors  # noqa: E402, F401

m3 = used()
print("modules: the 7 rule tools registered %.1f KB (every app, at init); rules.chat, .engine, "
      ".store, .actions %.1f KB (once a rule tool is called or there are rules), hw.sensors + hw.gpio %.1f KB (once a rule uses hardware)"
      % ((m1 - m0) / 1024, (m2 - m1) / 1024, (m3 - m2) / 1024))

dht.sim_set(8, 21.5, 40)
ds18x20.sim_set(9, 15.0)
machine.sim_adc(10, 900)
specs = []
for i, b in enumerate(("b1", "b2", "b3", "b4")):
    specs.append({"name": "button %d" % i, "when": {"pin": b, "edge": "falling", "pull": "up"},
                  "do": [{"pin": "fan", "value": 1}, {"message": "button %d pressed at {time}" % i}]})
for i, s in enumerate(("room", "tank", "light", "room.humidity")):
    specs.append({"name": "sensor %d" % i, "when": {"sensor": s, "above": 1000 if s == "light" else 30,
                                                    "hysteresis": 0.5, "every_s": 5},
                  "if": [{"between": ["22:00", "06:00"]}], "do": [{"message": "%s is {value}" % s}]})
for i in range(4):
    specs.append({"name": "daily %d" % i, "when": {"daily": "%02d:30" % (6 + i)},
                  "if": [{"sensor": "room", "above": 28}], "do": [{"pin": "lamp", "value": i % 2},
                                                                  {"message": "good morning, it is {room} °C"}]})
for i in range(2):
    specs.append({"name": "every %d" % i, "when": {"every_s": 600 * (i + 1)}, "do": [{"prompt": "look at the tank"}]})
for i in range(2):
    specs.append({"name": "mqtt %d" % i, "when": {"mqtt": "home/door/%d" % i, "payload": "open"},
                  "do": [{"mqtt": "home/light/%d" % i, "payload": "on"}]})
for s in specs:
    s["chat_id"] = "42"
    store.add(s)
b = bus.Bus(8, 16)
engine.init(b)
for ms in range(0, 20000, 20):  # 20 s of I/O loop passes at the idle pace
    engine.tick(ms, T0)
specs = s = None
m4 = used()
print("16 rules loaded, with their running state: %.1f KB (rules.json %d bytes on flash)" % (
    (m4 - m3) / 1024, fs.size(config.RULES_PATH)))

n = 2000
t = time.ticks_us()
for i in range(n):
    engine.tick(20000 + i * 20, T0 + 20)
idle = time.ticks_diff(time.ticks_us(), t) / n
t = time.ticks_us()
store.changes[0] += 1
engine.tick(70000, T0 + 70)
reload = time.ticks_diff(time.ticks_us(), t)
print("one tick with 16 rules, nothing firing: %.0f us (mean of %d); one tick that reloads rules.json: %d us"
      % (idle, n, reload))
