# The board side of `python -m host_sim bench`: runs under `micropython -X heapsize=...`
# (MICROPYPATH = stand-ins + firmware), started by host_sim/bench.py, which also runs the
# fake LLM at MIMI_BENCH_URL and prepared the flash folder MIMI_FLASH. Host code, not
# firmware: it drives the firmware's own agent, context and storage, as mimi.app does.
#
# MIMI_BENCH_MODE:
#   "figures": context builds, session loads, MIMI_BENCH_TURNS timed turns (normal GC),
#              then MIMI_BENCH_PEAK_TURNS turns with the live heap sampled;
#   "soak":    MIMI_BENCH_TURNS turns back to back, counting out-of-memory answers.
# Prints one line "@@BENCH <json>" at the end.
import gc
import json
import os
import sys

import micropython  # noqa: F401

import _romfs  # noqa: E402 - host_sim/stubs

# With MIMI_ROMFS_IMAGE the package comes from its ROMFS image (flash on a board, here
# the heap's first block: bench.py gave the heap that much more, and the figures leave
# it out).
ROM_HELD = _romfs.mount()
gc.collect()
heap_start = gc.mem_alloc() - ROM_HELD

# Large buffers first, before the heap fragments (as mimi.app.init does).
import mimi.llm as llm  # noqa: E402
from mimi import config, seam  # noqa: E402

seam.set_flash_root(os.getenv("MIMI_FLASH"))
# The board's LittleFS has no symbolic links: the check of them a desktop's flash folder gets
# on this runtime is not the board's cost (nor its garbage), so it is off here.
seam._links = None
config.set("owner_chat", "1001")  # the turns are the owner's (what the other chats may: docs/trust.md)
llm.init()
from mimi.agent.context import Context  # noqa: E402

ctx = Context(config.AGENT_CONTEXT_BYTES)

import _thread  # noqa: E402

from mimi import bus as busmod  # noqa: E402
from mimi.agent import loop  # noqa: E402
from mimi.storage import fs, sessions  # noqa: E402

# What a turn loads on first use, loaded now one by one with a collection after each (as
# mimi.app.init does): compiling on the first turn, in a heap already holding everything
# else, can find no room.
for _name in getattr(config, "APP_PRELOAD", ()):
    try:
        __import__(_name)
    except ImportError:
        pass
    gc.collect()

_TOOL_MODULES = ("files", "memory_tools", "clock", "cron_tools", "messaging", "web")


def register_tools():
    """The app's tools, as ``mimi.app.register_tools`` registers them (older firmware: each
    module's ``register_all``, for the benchmarks that compare commits)."""
    from mimi.tools import registry

    if hasattr(registry, "load_app"):  # as mimi.app.register_tools
        registry.load_app()
        return
    for name in getattr(config, "APP_TOOL_MODULES", _TOOL_MODULES):
        try:
            mod = __import__("mimi.tools." + name, None, None, ("register_all",))
        except ImportError:
            continue
        mod.register_all()


def cpu_ms():
    """CPU time of this process (all threads), ms: /proc/self/stat utime + stime."""
    with open("/proc/self/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) * 10  # clock ticks of 10 ms (USER_HZ 100)


class _Counted:
    """A file opened for writing whose writes are counted (what reaches the flash)."""

    def __init__(self, f):
        self.f = f

    def write(self, b):
        _io[0] += len(b)
        return self.f.write(b)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.f.close()


_io = [0, 0]  # bytes written, files renamed into place
_real_open = fs._open
_real_rename = fs._rename


def _open_counted(path, mode="r"):
    f = _real_open(path, mode)
    return _Counted(f) if ("w" in mode or "a" in mode) else f


def _rename_counted(a, b):
    _io[1] += 1
    return _real_rename(a, b)


# Every file the firmware writes goes through mimi.storage.fs, which opens and renames
# through these two names (its power-cut tests swap them too).
fs._open = _open_counted
fs._rename = _rename_counted


def message(i):
    # Every second turn asks for a file (the fake answers with a read_file call first).
    text = ("turn %d: what is in my memory file?" % i) if i % 2 else ("turn %d: good morning, how are you?" % i)
    return {"channel": "telegram", "chat_id": "1001", "text": text, "session": "tg_1001",
            "user": "Ann", "message_id": i, "is_group": False}


def mean(xs):
    return sum(xs) / len(xs) if xs else 0


class Sampler:
    """A thread that keeps the highest ``gc.mem_alloc()`` seen, every millisecond."""

    def __init__(self):
        self.on = False
        self.peak = 0
        self.alive = True
        _thread.start_new_thread(self._run, ())

    def _run(self):
        while self.alive:
            if self.on:
                a = gc.mem_alloc()
                if a > self.peak:
                    self.peak = a
            seam.sleep_ms(1)


def figures(agent, b, turns, peak_turns):
    res = {}
    # Context build (the seeded files; the flash as a new board has it).
    m = message(0)
    times = []
    for _ in range(20):
        t0 = seam.ticks_us()
        ctx.build(m)
        times.append(seam.ticks_diff(seam.ticks_us(), t0))
    res["context_build_us"] = mean(times[2:])
    res["context_bytes"] = ctx.n
    # Session loads: the last 20 messages of a 100-line and a 100,000-line file.
    for key in ("tg_s100", "tg_s100000"):
        times = []
        for _ in range(10):
            gc.collect()
            t0 = seam.ticks_us()
            msgs = sessions.load(key)
            times.append(seam.ticks_diff(seam.ticks_us(), t0))
            msgs = None
        res["load_%s_us" % key[4:]] = mean(times[1:])
    # Timed turns, normal GC (as on the board: the agent thread collects between turns).
    walls, wrote, renames = [], [], []
    failed = 0
    c0 = cpu_ms()
    for i in range(turns):
        gc.collect()
        w0, r0 = _io[0], _io[1]
        t0 = seam.ticks_us()
        reply = agent.handle(message(i)) or ""
        walls.append(seam.ticks_diff(seam.ticks_us(), t0))
        wrote.append(_io[0] - w0)
        renames.append(_io[1] - r0)
        b.outbound.clear()
        if reply.startswith("Sorry"):
            failed += 1
            print("turn %d: %s" % (i, reply[:120]))
    res["turns"] = turns
    res["turns_failed"] = failed
    res["turn_wall_us"] = mean(walls)
    res["turn_cpu_ms"] = (cpu_ms() - c0) / turns  # includes the collection between turns
    res["written_per_turn"] = mean(wrote)
    res["written_text_turn"] = mean(wrote[0::2])
    res["written_tool_turn"] = mean(wrote[1::2])
    res["renames_per_turn"] = mean(renames)
    # Live heap peak per turn: the collector runs after every 4 KB allocated, so what the
    # sampler sees is what is live, not garbage waiting for a collection.
    s = Sampler()
    peaks, shares = [], []
    for i in range(turns, turns + peak_turns):
        gc.collect()
        base = gc.mem_alloc()
        s.peak = base
        gc.threshold(4096)
        s.on = True
        reply = agent.handle(message(i)) or ""
        s.on = False
        if reply.startswith("Sorry"):
            failed += 1
            print("turn %d (heap sampled): %s" % (i, reply[:120]))
        gc.threshold(-1)
        b.outbound.clear()
        peaks.append(s.peak)
        shares.append(s.peak - base)
    s.alive = False
    gc.collect()
    res["turns_failed"] = failed
    res["peak_turns"] = peak_turns
    res["peak_heap"] = max(peaks) - ROM_HELD
    res["peak_share_mean"] = mean(shares)
    res["peak_share_max"] = max(shares)
    res["heap_between_turns"] = gc.mem_alloc() - ROM_HELD
    return res


def largest_free_run():
    """The longest bytearray the heap can give now (bytes, to 64): how fragmented it is."""
    lo, hi = 0, gc.mem_free()
    while hi - lo > 64:
        mid = (lo + hi) // 2
        try:
            bytearray(mid)
            lo = mid
        except MemoryError:
            hi = mid
    gc.collect()
    return lo


def soak(agent, b, turns):
    ok = sorry = first = settled = 0
    low_free = gc.mem_free()
    run0 = low_run = largest_free_run()
    for i in range(turns):
        reply = agent.handle(message(i)) or ""
        b.outbound.clear()
        if reply.startswith("Sorry"):
            sorry += 1
            print("turn %d: %s" % (i, reply[:120]))
        else:
            ok += 1
        gc.collect()
        f = gc.mem_free()
        if f < low_free:
            low_free = f
        if i == 1:
            first = gc.mem_alloc() - ROM_HELD  # after one turn of each kind: the modules a turn loads are in
        if i == 49:  # the chat's window kept in RAM (mimi.storage.sessions) is full by now, as in any long chat
            settled = gc.mem_alloc() - ROM_HELD
        if i % 50 == 1:
            low_run = min(low_run, largest_free_run())
    return {"turns": turns, "ok": ok, "sorry": sorry, "lowest_free_between_turns": low_free,
            "largest_free_run_at_start": run0, "smallest_largest_free_run": low_run,
            "heap_after_two_turns": first, "heap_after_fifty_turns": settled,
            "heap_between_turns": gc.mem_alloc() - ROM_HELD}


def main():
    url = os.getenv("MIMI_BENCH_URL")
    llm.set_key("sk-FAKE-bench", "anthropic")
    llm.switch("anthropic", "bench-model", url)
    register_tools()
    b = busmod.Bus(config.BUS_INBOUND_MAX, config.BUS_OUTBOUND_MAX)
    agent = loop.Agent(b, ctx)
    if hasattr(loop, "warm"):
        loop.warm(ctx)  # as mimi.app.init: what turns keep, made before the first
    gc.collect()
    res = {"heap_total": gc.mem_alloc() + gc.mem_free() - ROM_HELD, "heap_after_init": gc.mem_alloc() - ROM_HELD,
           "heap_before_init": heap_start, "runtime": seam.describe() + (", package from ROMFS" if ROM_HELD else "")}
    turns = int(os.getenv("MIMI_BENCH_TURNS") or "40")
    if os.getenv("MIMI_BENCH_MODE") == "soak":
        res.update(soak(agent, b, turns))
    else:
        res.update(figures(agent, b, turns, int(os.getenv("MIMI_BENCH_PEAK_TURNS") or "10")))
    print("@@BENCH " + json.dumps(res))


try:
    main()
except MemoryError as e:
    sys.print_exception(e)
    print("@@BENCH " + json.dumps({"error": "MemoryError: %s" % e}))
    sys.exit(1)
