"""``python -m host_sim bench``: the firmware's own cost of a turn, under MicroPython.

For each heap size (``-X heapsize=256K`` and ``512K`` by default) a fresh ``micropython``
process (``host_sim/bench_board.py``) runs the firmware's agent, context builder and
storage, as ``mimi.app`` wires them, on a flash folder seeded from ``spiffs_seed/``
against a fake Anthropic server on loopback that answers at once. A turn alternates: a
plain question answered with text, and a question answered with a ``read_file`` call,
then text (two LLM requests). It prints:

- firmware time per turn: the CPU time of the micropython process (all its threads, from
  ``/proc/self/stat``), so the fake's latency is not in it; wall time per turn beside it,
  which includes the loopback round trips and the fake's own work;
- peak GC heap per turn: the highest ``gc.mem_alloc()`` while a turn runs, sampled every
  millisecond with the collector made to run every 4 KB, so it is live data; absolute and
  the turn's own share above the heap between turns;
- context build time (the 16 KB system prompt from the seeded files);
- session load time (the last 20 messages) of a 100-line and a 100,000-line session file;
- bytes written to flash per turn: every byte the firmware writes through
  ``mimi.storage.fs`` (the one module that writes files), counted by wrapping its
  ``_open``, and the files replaced (renames) per turn;
- with ``--soak N`` (default 500), N turns in a 256 KB heap, counting turns that ended in
  "Sorry" (the agent's answer to a MemoryError or any other failure);
- with ``--smallest N`` (default 100), the smallest heap, in 8 KB steps, that runs N
  turns without one failing;
- with ``--app`` (default 4096,16384), the whole app this time (``python -m host_sim run
  --runtime micropython``: both threads, the Telegram channel and its buffers, the agent)
  against the fake Telegram: the smallest heap, in 32 KB steps, that answers a reply of
  each size with every character delivered.
A turn that fails is reported, not hidden; the exit status is 1 only when the benchmark
itself could not run.

    python -m host_sim bench [--turns 40] [--peak-turns 10] [--soak 500] [--smallest 100] [--app 4096,16384] [--heaps 256K,512K]
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from host_sim import hostenv, launcher

BOARD = os.path.join(hostenv.ROOT, "host_sim", "bench_board.py")
_REPLY = ("Good morning! Everything is fine here: the board is up, the clock is set and "
          "nothing is waiting for you. Anything I can do? ") * 2


SUMMARY = ("Ann checks on the board each morning and asks what her memory file holds; it has the headings "
           "Owner, People, Plans and Preferences. She wants short answers. Open: nothing.")


def is_summary_request(req):
    """True for the agent's compaction call (``mimi.agent.compact``: its prompt, no tools)."""
    body = req.get("json") or {}
    return not body.get("tools") and "running summary" in str(body.get("system") or body.get("messages"))


def responder(req):
    """The fake model: a read_file call when asked about a file, text otherwise (and a
    summary when the agent asks for one)."""
    from host_sim.fakes.llm import Reply

    if is_summary_request(req):
        return Reply.text(SUMMARY, usage=(900, 40))
    msgs = (req.get("json") or {}).get("messages") or []
    last = msgs[-1] if msgs else {}
    content = last.get("content")
    if isinstance(content, list):  # tool results: the turn's second request
        n = sum(len(str(b.get("content", ""))) for b in content if isinstance(b, dict))
        return Reply.text("Your memory file holds %d characters; the headings are Owner, People, "
                          "Plans and Preferences." % n, usage=(3000, 40))
    if "file" in str(content):
        return Reply.tools([("read_file", {"path": "/data/memory/MEMORY.md"})], usage=(3000, 30))
    return Reply.text(_REPLY, usage=(2900, 60))


def session_file(path, n):
    """A session file of ``n`` valid lines: questions, tool exchanges, answers."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(n):
            k = i % 4
            if k == 0:
                m = {"role": "user", "content": "message %d: what is on my list today?" % i}
            elif k == 1:
                m = {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "toolu_%07d" % i, "name": "read_file", "input": {"path": "/data/memory/MEMORY.md"}}]}
            elif k == 2:
                m = {"role": "tool", "tool_call_id": "toolu_%07d" % (i - 1), "name": "read_file",
                     "content": "- buy milk\n- call Anna\n", "is_error": False}
            else:
                m = {"role": "assistant", "content": "Milk, and a call to Anna. Anything else?"}
            m["ts"] = 1767225600 + i
            f.write(json.dumps(m, separators=(",", ":")) + "\n")


def flash():
    """A new flash folder: the seed, plus the two session files the loads read."""
    root = tempfile.mkdtemp(prefix="mimi-bench-")
    launcher.seed_flash(root)
    session_file(os.path.join(root, "data", "sessions", "tg_s100.jsonl"), 100)
    session_file(os.path.join(root, "data", "sessions", "tg_s100000.jsonl"), 100000)
    return root


ROMFS = {}  # with --romfs: "path" of the package's image


def use_romfs(folder):
    """From now on boards import the package from its ROMFS image (built into ``folder``)."""
    from host_sim import romfs

    path = os.path.join(folder, "mimi.romfs")
    with open(path, "wb") as f:
        f.write(romfs.build())
    ROMFS["path"] = path


def run_board(url, heap, mode, turns, peak_turns=10, root=None, timeout_s=900):
    """Run ``bench_board.py`` once; returns (result dict or None, output text)."""
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=root or flash(),
               MIMI_BENCH_URL=url, MIMI_BENCH_MODE=mode, MIMI_BENCH_TURNS=str(turns),
               MIMI_BENCH_PEAK_TURNS=str(peak_turns))
    if ROMFS:
        env, heap = hostenv.romfs_board(env, heap, ROMFS["path"])
    p = subprocess.run([hostenv.micropython_exe(), "-X", "heapsize=" + heap, BOARD], env=env,
                       cwd=hostenv.ROOT, capture_output=True, text=True, timeout=timeout_s)
    out = p.stdout + p.stderr
    for line in p.stdout.splitlines():
        if line.startswith("@@BENCH "):
            return json.loads(line[8:]), out
    return None, out


def start_fake():
    from host_sim.fakes.llm import FakeAnthropic

    fake = FakeAnthropic().start()
    fake.responder = responder
    return fake


def _kb(n):
    return "%.1f KB" % (n / 1024)


def report(heap, r):
    print("micropython -X heapsize=%s (%s), heap %s:" % (heap, r["runtime"], _kb(r["heap_total"])))
    print("  heap held after init (modules, 16 KB context, reply buffer): %s" % _kb(r["heap_after_init"]))
    print("  context build: %.2f ms (%d bytes of system prompt)" % (r["context_build_us"] / 1000, r["context_bytes"]))
    print("  session load, last 20 messages: %.2f ms of a 100-line file, %.2f ms of a 100,000-line file"
          % (r["load_100_us"] / 1000, r["load_100000_us"] / 1000))
    if r["turns_failed"]:
        print("  TURNS THAT FAILED (out of memory or another error): %d of %d"
              % (r["turns_failed"], r["turns"] + r["peak_turns"]))
    if r["turns_failed"] >= r["turns"]:
        print("  (no turn figures: too few turns succeeded)")
        return
    print("  firmware time per turn (CPU of the process): %.1f ms; wall %.1f ms with the fake's round trips "
          "(mean of %d turns, half with a read_file call)" % (r["turn_cpu_ms"], r["turn_wall_us"] / 1000, r["turns"]))
    print("  peak GC heap during a turn: %s; the turn's own share: %s mean, %s max; between turns: %s"
          % (_kb(r["peak_heap"]), _kb(r["peak_share_mean"]), _kb(r["peak_share_max"]), _kb(r["heap_between_turns"])))
    print("  written to flash per turn: %d bytes mean (%d for a text turn, %d for a turn with a tool call); "
          "%.1f files replaced per turn" % (r["written_per_turn"], r["written_text_turn"], r["written_tool_turn"],
                                            r["renames_per_turn"]))


def smallest_heap(url, turns, lo_kb=64, hi_kb=512, step_kb=8):
    """The smallest ``-X heapsize`` (KB, to ``step_kb``) in which ``turns`` soak turns all
    succeed; None when even ``hi_kb`` fails."""

    def clean(kb):
        r, _ = run_board(url, "%dK" % kb, "soak", turns)
        return r is not None and "error" not in r and r["sorry"] == 0

    if not clean(hi_kb):
        return None
    while hi_kb - lo_kb > step_kb:
        mid = (lo_kb + hi_kb) // 2 // step_kb * step_kb
        if clean(mid):
            hi_kb = mid
        else:
            lo_kb = mid
    return hi_kb


def app_answers(heap_kb, reply_bytes, timeout_s=60):
    """True when the whole app (``python -m host_sim run --runtime micropython``: both
    threads, Telegram, the agent) in a ``heap_kb`` heap answers a short message and then
    one whose reply is ``reply_bytes`` long, every character delivered."""
    from host_sim.fakes.llm import Reply
    from host_sim.harness import Sim

    env = {"MIMI_ROMFS_IMAGE": ROMFS["path"]} if ROMFS else None
    sim = Sim(runtime="micropython", heap="%dK" % heap_kb, boot_timeout_s=15, env=env)
    try:
        sim.start()
        sim.llm.script(Reply.text("Hello."))
        sim.send("hi")
        if sim.wait_texts(1, timeout_s=timeout_s) != ["Hello."]:
            return False
        words = ("word%d " % i for i in range(reply_bytes))
        text = "".join(next(words) for _ in range(reply_bytes // 7))[:reply_bytes].strip()
        sim.llm.script(Reply.text(text))
        sim.send("tell me more")
        deadline = time.time() + timeout_s
        want = "".join(text.split())
        while time.time() < deadline:
            got = sim.texts()[1:]
            if any(t.startswith("Sorry") for t in got):
                return False
            if "".join("".join(got).split()) == want:
                return True
            if not sim.alive():
                return False
            time.sleep(0.05)
        return False
    except (AssertionError, RuntimeError):
        return False
    finally:
        try:
            sim.stop()
        except RuntimeError:
            pass


def app_smallest(reply_bytes, lo_kb=128, hi_kb=2048, step_kb=32):
    """The smallest heap (KB, to ``step_kb``) in which ``app_answers`` holds; None if not even ``hi_kb``."""
    if not app_answers(hi_kb, reply_bytes):
        return None
    while hi_kb - lo_kb > step_kb:
        mid = (lo_kb + hi_kb) // 2 // step_kb * step_kb
        if app_answers(mid, reply_bytes):
            hi_kb = mid
        else:
            lo_kb = mid
    return hi_kb


def main(heaps=("256K", "512K"), turns=40, peak_turns=10, soak=500, smallest=100, app=(4096, 16384), romfs=False):
    if not hostenv.micropython_exe():
        print("bench: %s" % hostenv.micropython_missing(), file=sys.stderr)
        return 2
    print("== micropython: %s" % hostenv.micropython_about(), flush=True)
    if romfs:
        folder = tempfile.mkdtemp(prefix="mimi-bench-romfs-")
        atexit.register(shutil.rmtree, folder, True)
        use_romfs(folder)
        print("The package from its ROMFS image (%d KB; in flash on a board, in the heap here: each heap below is "
              "given that much more and the figures leave it out)" % ((os.path.getsize(ROMFS["path"]) + 1023) // 1024))
    fake = start_fake()
    rc = 0
    try:
        for heap in heaps:
            r, out = run_board(fake.base_url, heap, "figures", turns, peak_turns)
            if r is None or "error" in r:
                print("heapsize %s: the benchmark failed:\n%s" % (heap, out[-3000:]))
                rc = 1
                continue
            report(heap, r)
        if soak:
            t0 = time.time()
            r, out = run_board(fake.base_url, "256K", "soak", soak)
            if r is None or "error" in r:
                print("soak: failed:\n%s" % out[-3000:])
                return 1
            print("%d turns in a 256 KB heap: %d answered, %d failed (MemoryError or other); lowest free heap "
                  "between turns %s; %.0f s" % (r["turns"], r["ok"], r["sorry"], _kb(r["lowest_free_between_turns"]),
                                               time.time() - t0))
            print("  longest free run (the largest block a turn can get): %s after init, %s at the least"
                  % (_kb(r["largest_free_run_at_start"]), _kb(r["smallest_largest_free_run"])))
        if smallest:
            kb = smallest_heap(fake.base_url, smallest)
            print("smallest heap that runs %d turns without a failure: %s (8 KB steps; the heap's layout moves it "
                  "by a step or two)" % (smallest, "%d KB" % kb if kb else "over 512 KB"))
        for n in app:
            try:
                import host_sim.fakes.telegram  # noqa: F401
            except ImportError:
                print("whole app: skipped (no fake Telegram)")
                break
            kb = app_smallest(n)
            print("whole app (both threads, Telegram, agent): smallest heap that answers a %d-byte reply: %s "
                  "(32 KB steps)" % (n, "%d KB" % kb if kb else "over 2 MB"))
    finally:
        fake.stop()
    return rc
