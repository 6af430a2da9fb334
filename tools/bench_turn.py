"""Peak GC heap of agent turns under MicroPython, against a local fake LLM server (issue 4).

    python tools/bench_turn.py [heapsize] [anthropic|openai] [--smallest] [--reply=BYTES]
    python tools/bench_turn.py [heapsize] [anthropic|openai] --chat=TURNS [--smallest]

One turn (default): a 16 KB system prompt, 20 messages of history and a 32 KB reply
(``--reply=4096`` for a more usual one). ``--chat=20``: the design's chat benchmark
(../shared/DESIGN.md, "Budgets"): a fresh chat of that many turns with the same 16 KB
system prompt, the file tools registered, and every second turn one ``read_file`` call
before the answer (replies of about 300 B), the window growing to its 20 messages.

Run with CPython: it starts the fake (``host_sim.fakes.llm``) and runs this same file
under ``micropython -X heapsize=...`` (default 256K), which prints:
- the heap held by the buffers (the 16 KB context and the reply buffer, allocated first,
  as ``app.init`` must) and by the modules a turn needs, imported one by one with a
  collection after each (as ``app.init`` should: without it the compiler's garbage leaves
  the heap in small holes, and a 256 KB heap has plenty of free bytes but no 4 KB run);
- the peak GC heap during the turn(s), sampled every millisecond by a second thread
  (``gc.mem_alloc``) while ``gc.threshold`` makes the collector run after every 4 KB
  allocated, so the figure is what is live, not garbage waiting for a collection; and
  the turns' own share (peak minus the heap before). ``micropython.mem_peak`` is no use
  here: it never subtracts what the collector frees;
- the time per turn with the fake answering at once (the firmware's share of a turn).
``--smallest`` also tries smaller heaps, 8 KB at a time, down to the first that fails,
and prints the last that ran clean (a fragmented heap can fail at one size and pass at a
smaller one, so this is the size from which every larger one was seen to work).
"""
import sys

REPLY_BYTES = 32768
SYSTEM_BYTES = 16384
CHAT_TURNS = 0
for _a in sys.argv[1:]:
    if _a.startswith("--reply="):
        REPLY_BYTES = int(_a[8:])
    elif _a.startswith("--chat="):
        CHAT_TURNS = int(_a[7:])
CHAT_REPLY = "Sure. The porch light is on GPIO 5 and the garden lights follow the timer you set. " * 4
CHAT_AFTER_TOOL = "Your list says: buy milk, call mum, water the tomatoes. Anything else?"
TODO = "- buy milk\n- call mum\n- water the tomatoes\n" * 8

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
        p = subprocess.run([exe, "-X", "heapsize=" + heap, __file__] + sys.argv[1:], env=env, cwd=root,
                           capture_output=True, text=True, timeout=1800)
        return p.returncode == 0 and "turns ok" in p.stdout, p.stdout + p.stderr

    def responder(req):
        if not CHAT_TURNS:
            return Reply.text(("lorem ipsum dolor sit amet " * 1300)[:REPLY_BYTES])
        last = req["json"]["messages"][-1]
        content = last.get("content")
        if last["role"] == "tool" or isinstance(content, list):  # a tool result came back (either protocol)
            return Reply.text(CHAT_AFTER_TOOL)
        if int(content.split()[1].rstrip(":")) % 2:  # "turn N: ...": every second turn reads a file first
            return Reply.tools([("read_file", {"path": "/data/notes/todo.md"})])
        return Reply.text(CHAT_REPLY)

    def main():
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
        heap = args[0] if args else "256K"
        proto = args[1] if len(args) > 1 else "anthropic"
        fake = (FakeAnthropic if proto == "anthropic" else FakeOpenAI)().start()
        fake.responder = responder
        exe = hostenv.micropython_exe()
        if not exe:
            fake.stop()
            print("bench_turn: %s" % hostenv.micropython_missing(), file=sys.stderr)
            return 2
        print("== micropython: %s" % hostenv.micropython_about(exe), flush=True)
        try:
            ok, out = run_mp(exe, heap, proto, fake.base_url)
            print(out.strip())
            if not ok:
                return 1
            req = fake.requests[-1]
            print("last request body sent: %d B (%d messages)" % (len(req["body"]), len(req["json"]["messages"])))
            if "--smallest" in sys.argv:
                kb = last = int(heap.rstrip("K"))
                while kb > 8 and run_mp(exe, "%dK" % kb, proto, fake.base_url)[0]:
                    last = kb
                    kb -= 8
                print("smallest heap that runs it (every 8 KB step from %s down to it ran): %d KB" % (heap, last))
        finally:
            fake.stop()
        return 0

    raise SystemExit(main())

import _thread
import gc
import os

gc.collect()
t_imp = gc.mem_alloc()
# Large buffers first, before the heap fragments (as app.init must).
import mimi.llm as llm  # noqa: E402  (light: no HTTP client yet)
from mimi import config  # noqa: E402

gc.collect()
t_buf = gc.mem_alloc()
llm.init()
_ctx_buf = bytearray(SYSTEM_BYTES)
gc.collect()
buffers = gc.mem_alloc() - t_buf
for _m in ("mimi.seam", "mimi.log", "mimi.bus", "mimi.clock", "mimi.storage.fs", "mimi.storage.sessions",
           "mimi.storage.memory", "mimi.storage.skills", "mimi.tools.registry", "mimi.tools.files", "mimi.llm.usage",
           "mimi.net.http", "mimi.llm.wire", "mimi.llm.common", "mimi.agent.loop"):
    __import__(_m)
    gc.collect()  # between imports, as app.init should: the compiler's garbage is freed before the next one
from mimi import bus as busmod, seam  # noqa: E402
from mimi.agent import loop  # noqa: E402
from mimi.storage import sessions  # noqa: E402
from mimi.tools import files, registry  # noqa: E402

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
    if CHAT_TURNS:
        from mimi.storage import fs
        fs.write("/data/notes/todo.md", TODO)
        files.register_all()
    else:
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
    turns = CHAT_TURNS or 1
    t_us = 0
    for i in range(turns):
        text = "turn %d: what is on my list?" % i if CHAT_TURNS else "tell me everything"
        t0 = seam.ticks_us()
        reply = agent.handle({"channel": "telegram", "chat_id": "1", "text": text, "session": "tg_1"})
        t_us += seam.ticks_diff(seam.ticks_us(), t0)
        want = (CHAT_AFTER_TOOL if i % 2 else CHAT_REPLY.strip()) if CHAT_TURNS else None
        assert reply == want if want else len(reply) >= REPLY_BYTES - 64, (i, len(reply), reply[:200])
        while b.outbound.get(0) is not None:  # the channel would send these
            pass
        reply = None
        gc.collect()  # between turns, as Agent.run does
    gc.threshold(-1)
    state[0] = False
    while len(state) < 3:
        seam.sleep_ms(1)
    peak = state[1]
    if CHAT_TURNS:
        print("chat: %d turns, every second one with a read_file call" % turns)
    else:
        print("reply: %d B of text" % REPLY_BYTES)
    print("heapsize: %d KB (%s, %s protocol)" % ((gc.mem_alloc() + gc.mem_free()) // 1024, seam.describe(), proto))
    print("buffers allocated first (16 KB context + %d KB reply): %d B" % (
        config.LLM_RESPONSE_MAX_BYTES // 1024, buffers))
    imp = after_import - t_imp - buffers
    print("heap held by the modules a turn imports (.py): %d B (%d KB)" % (imp, imp // 1024))
    print("heap before the turns (+ session, bus, agent): %d B" % before)
    print("peak GC heap during the turns: %d B (%d KB); the turns' own share: %d B (%d KB)" % (
        peak, peak // 1024, peak - before, (peak - before) // 1024))
    print("time per turn, fake answering at once: %d ms (with the frequent collections)" % (t_us // turns // 1000))
    print("turns ok: %d" % turns)


main()
