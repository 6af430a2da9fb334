"""Time the hardware fast path against an agent turn, under MicroPython.

    python3 tools/bench_fastpath.py [N]

Run with CPython: it starts the fake Anthropic server (``host_sim.fakes.llm``), prepares a
scratch flash (the shipped datasheets, the board's file with one owner alias added,
``porch_light: 4``) and runs this same file under ``micropython -X heapsize=512K`` (the
unix port, the virtual board), which prints microseconds per message (mean and median;
``time.ticks_us``):
- ``try_handle``, handled: "turn on the porch light" / "porch light off", alternating
  (parse, alias lookup with the datasheet folder check, pin policy, pin write, reply);
- ``try_handle``, declined: what every other message pays before the agent runs;
- ``retrieval.for_message`` on a hardware question (keywords, reading every chunk);
- ``Agent.handle`` on "turn on the porch light": the fast path end to end (typing/idle
  on the bus, the exchange saved to the session file, the reply);
- ``Agent.handle`` on "could you switch the porch light on for me": the fast path declines
  (extra words), so a full turn runs: 16 KB context with the hardware notes, two LLM
  requests to the fake (a ``gpio_write`` call, then the answer), the tool, the session.
The ratio compares the two ``Agent.handle`` figures. The fake answers at once over
loopback, so the agent figure is the firmware's own share of a turn; a real LLM adds
seconds per request, and the ratio then grows by orders of magnitude. Host figures: an
ESP32-S3 at 240 MHz is roughly 10-20 times slower for the same bytecode.
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
    from host_sim.fakes.llm import FakeAnthropic, Reply

    def answer(req):
        """A tool call for a new question, the final text once the tool result is back."""
        last = req["json"]["messages"][-1]
        content = last.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return Reply.text("Done: the porch light (GPIO4) is on.")
        return Reply.tools([("gpio_write", {"pin": 4, "level": 1})])

    def main():
        if not hostenv.micropython_exe():
            print("bench_fastpath: %s" % hostenv.micropython_missing(), file=sys.stderr)
            return 2
        print("== micropython: %s" % hostenv.micropython_about(), flush=True)
        flash = tempfile.mkdtemp(prefix="mimi-bench-fast-")
        shutil.copytree(os.path.join(hostenv.SEED, "datasheets"), os.path.join(flash, "data", "datasheets"))
        with open(os.path.join(flash, "data", "datasheets", "esp32-s3-devkitc-1.md"), "a") as f:
            f.write("\n## Pin Aliases (my wiring)\n\nporch_light: 4\n")
        fake = FakeAnthropic().start()
        fake.responder = answer
        env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=flash, MIMI_BENCH_URL=fake.base_url)
        try:
            return subprocess.call([hostenv.micropython_exe(), "-X", "heapsize=512K", __file__] + sys.argv[1:],
                                   env=env, cwd=root)
        finally:
            fake.stop()
            shutil.rmtree(flash, ignore_errors=True)

    raise SystemExit(main())

import gc
import os
import time

# Large buffers first, as app.init does.
import mimi.llm as llm  # noqa: E402

llm.init()
from mimi.agent.context import Context  # noqa: E402

_ctx = Context()


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
    from mimi import bus as busmod, log
    from mimi.agent import loop
    from mimi.hw import fastpath, gpio, retrieval
    from mimi.tools import gpio as gpio_tools, registry

    log.level = log.WARN  # every turn logs at INFO: keep the console out of the figures
    registry.clear()
    gpio_tools.register_all()
    llm.set_key("sk-ant-FAKE-bench", "anthropic")
    llm.switch("anthropic", "bench-model", os.getenv("MIMI_BENCH_URL"))
    cmds = ("turn on the porch light", "porch light off")
    assert fastpath.try_handle(cmds[0]) == "Turned porch light (GPIO4) on.", fastpath.try_handle(cmds[0])
    gc.collect()
    handled = _time(lambda i: fastpath.try_handle({"text": cmds[i & 1]}), n)
    declined = _time(lambda i: fastpath.try_handle({"text": "what's on my calendar tomorrow?"}), n)
    q = "which pin drives the onboard RGB LED?"
    notes = retrieval.for_message(q, 3072)
    rag = _time(lambda i: retrieval.for_message(q, 3072), max(20, n // 10))

    bus = busmod.Bus(8, 64)
    agent = loop.Agent(bus, _ctx)

    def turn(text):
        msg = {"channel": "telegram", "chat_id": "1", "text": text, "session": "tg_1"}
        reply = agent.handle(msg)
        while bus.outbound.get(0) is not None:  # the I/O thread's part: drain what was sent
            pass
        return reply

    assert turn(cmds[0]) == "Turned porch light (GPIO4) on."
    slow = "could you switch the porch light on for me"
    first = turn(slow)
    assert first == "Done: the porch light (GPIO4) is on.", first
    assert gpio.state(4) == ("out", 1)
    gc.collect()
    fast_turns = _time(lambda i: turn(cmds[i & 1]), max(20, n // 5))
    gc.collect()
    agent_turns = _time(lambda i: turn(slow), max(10, n // 15))
    gpio.reset()

    print("MicroPython unix port, heap 512K, N=%d" % n)
    for name, s in (("try_handle, handled", handled), ("try_handle, declined", declined),
                    ("for_message (%d B of notes)" % len(notes.encode()), rag),
                    ("Agent.handle, fast path", fast_turns), ("Agent.handle, LLM turn (fake)", agent_turns)):
        mean, med = _stats(s)
        print("%-32s mean %8.0f us  median %8d us" % (name, mean, med))
    print("ratio, agent turn / fast path (Agent.handle, medians): %.0f x" % (
        _stats(agent_turns)[1] / _stats(fast_turns)[1]))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
