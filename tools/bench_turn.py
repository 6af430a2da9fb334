"""Peak GC heap of one agent turn under MicroPython: a 16 KB system prompt, 20 messages of
history and a 32 KB reply, against a local fake LLM server (issue 4).

    python tools/bench_turn.py [heapsize] [anthropic|openai] [--smallest] [--reply=BYTES]

Run with CPython: it starts the fake (``host_sim.fakes.llm``) and runs this same file
under ``micropython -X heapsize=...`` (default 256K), which prints:
- heap after import (the modules a turn needs), and after ``init`` (the 16 KB context
  buffer and the reply buffer, allocated once);
- the peak GC heap during the turn, sampled every millisecond by a second thread
  (``gc.mem_alloc``) while ``gc.threshold`` makes the collector run after every 4 KB
  allocated, so the figure is what is live, not garbage waiting for a collection; and
  the turn's own share (peak minus the heap before the turn). ``micropython.mem_peak``
  is no use here: it never subtracts what the collector frees;
- the turn's time with the fake answering at once (the firmware's share of a turn).
``--smallest`` also halves its way to the smallest heap that still runs the turn (which
also needs one free run as long as the reply: ``json.loads`` builds the text in one piece).
``--reply=4096`` measures a more usual reply instead of 32 KB.
"""
import sys

REPLY_BYTES = 32768
SYSTEM_BYTES = 16384
for _a in sys.argv[1:]:
    if _a.startswith("--reply="):
        REPLY_BYTES = int(_a[8:])

if sys.implementation.name != "micropython":
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    import tempfile

    from host_sim import hostenv
    from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply

    def run_mp(exe, heap, proto, url):
        env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(),
                   MIMI_FLASH=tempfile.mkdtemp(prefix="mimi-bench-"), MIMI_BENCH_URL=url, MIMI_BENCH_PROTO=proto)
        p = subprocess.run([exe, "-X", "heapsize=" + heap, __file__, "--reply=%d" % REPLY_BYTES], env=env, cwd=root, capture_output=True,
                           text=True, timeout=120)
        return p.returncode == 0 and "turn ok" in p.stdout, p.stdout + p.stderr

    def main():
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
        heap = args[0] if args else "256K"
        proto = args[1] if len(args) > 1 else "anthropic"
        fake = (FakeAnthropic if proto == "anthropic" else FakeOpenAI)().start()
        fake.responder = lambda req: Reply.text(("lorem ipsum dolor sit amet " * 1300)[:REPLY_BYTES])
        exe = hostenv.micropython_exe()
        try:
            ok, out = run_mp(exe, heap, proto, fake.base_url)
            print(out.strip())
            if not ok:
                return 1
            req = fake.requests[-1]
            print("request body sent: %d B (%d history messages + the question)" % (
                len(req["body"]), len(req["json"]["messages"]) - (1 if proto == "openai" else 0)))
            if "--smallest" in sys.argv:
                lo, hi = 32, int(heap.rstrip("K"))
                while hi - lo > 4:
                    mid = (lo + hi) // 2
                    if run_mp(exe, "%dK" % mid, proto, fake.base_url)[0]:
                        hi = mid
                    else:
                        lo = mid
                print("smallest heap that runs the turn: %d KB (to 4 KB)" % hi)
        finally:
            fake.stop()
        return 0

    raise SystemExit(main())

import _thread
import gc
import os

gc.collect()
t_imp = gc.mem_alloc()
# Large buffers first, before the heap fragments (as app.init must): importing the
# modules first leaves lots of free bytes on a 256 KB heap but no 36 KB run.
import mimi.llm as llm  # noqa: E402  (light: no HTTP client yet)
from mimi import config  # noqa: E402

gc.collect()
t_buf = gc.mem_alloc()
llm.init()
_ctx_buf = bytearray(SYSTEM_BYTES)
gc.collect()
buffers = gc.mem_alloc() - t_buf
from mimi import bus as busmod, seam  # noqa: E402
from mimi.agent import loop  # noqa: E402
from mimi.storage import sessions  # noqa: E402
from mimi.tools import registry  # noqa: E402
import mimi.llm.common  # noqa: E402,F401
import mimi.llm.wire  # noqa: E402,F401

gc.collect()
after_import = gc.mem_alloc()


class Ctx:
    """A full 16 KB system prompt (the context builder's buffer, filled)."""

    def __init__(self):
        self.buf = _ctx_buf
        line = b"- rule: read before you write; keep MEMORY.md short; never guess a pin.\n"
        n = 0
        while n + len(line) <= SYSTEM_BYTES:
            self.buf[n:n + len(line)] = line
            n += len(line)
        self.n = n

    def build(self, msg, extra=None):
        return self.n

    def view(self):
        return memoryview(self.buf)[:self.n]


def history(key):
    """20 stored messages: questions, answers, and two tool exchanges with 1 KB results."""
    for i in range(7):
        sessions.append(key, {"role": "user", "content": "question %d: " % i + "what about the garden lights? " * 6})
        if i in (2, 5):
            sessions.append(key, {"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": "toolu_%02d" % i, "name": "read_file", "input": {"path": "/data/memory/MEMORY.md"}}]})
            sessions.append(key, {"role": "tool", "tool_call_id": "toolu_%02d" % i, "name": "read_file",
                                  "content": "note line\n" * 102, "is_error": False})
        sessions.append(key, {"role": "assistant", "content": "answer %d: " % i + "the lights are on GPIO 5. " * 20})


def main():
    ctx = Ctx()
    url = os.getenv("MIMI_BENCH_URL")
    proto = os.getenv("MIMI_BENCH_PROTO") or "anthropic"
    seam.set_flash_root(os.getenv("MIMI_FLASH"))
    os.mkdir(os.getenv("MIMI_FLASH") + "/data")
    registry.clear()
    llm.set_key("sk-FAKE-bench", proto if proto == "anthropic" else "custom")
    llm.switch(proto if proto == "anthropic" else "custom", "bench-model", url)
    history("tg_1")
    b = busmod.Bus(8, 16)
    agent = loop.Agent(b, ctx)
    gc.collect()
    before = gc.mem_alloc()
    state = [True, before]

    def sample():
        while state[0]:
            a = gc.mem_alloc()
            if a > state[1]:
                state[1] = a
            seam.sleep_ms(1)
        state.append(1)
    _thread.start_new_thread(sample, ())
    gc.threshold(4096)
    t0 = seam.ticks_us()
    reply = agent.handle({"channel": "telegram", "chat_id": "1", "text": "tell me everything", "session": "tg_1"})
    dt = seam.ticks_diff(seam.ticks_us(), t0)
    gc.threshold(-1)
    state[0] = False
    while len(state) < 3:
        seam.sleep_ms(1)
    peak = state[1]
    assert len(reply) >= REPLY_BYTES - 64, (len(reply), reply[:200])
    print("reply: %d B of text" % REPLY_BYTES)
    print("heapsize: %d KB (%s, %s protocol)" % ((gc.mem_alloc() + gc.mem_free()) // 1024, seam.describe(), proto))
    print("buffers allocated first (16 KB context + %d KB reply): %d B" % (config.LLM_RESPONSE_MAX_BYTES // 1024, buffers))
    imp = after_import - t_imp - buffers
    print("heap held by the modules a turn imports (.py): %d B (%d KB)" % (imp, imp // 1024))
    print("heap before the turn (+ 20-message session on flash, bus, agent): %d B" % before)
    print("peak GC heap during the turn: %d B (%d KB); the turn's own share: %d B (%d KB)" % (
        peak, peak // 1024, peak - before, (peak - before) // 1024))
    print("turn time, fake answering at once: %d ms (with the frequent collections)" % (dt // 1000))
    print("turn ok: reply %d B" % len(reply))


main()
