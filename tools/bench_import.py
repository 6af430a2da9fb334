"""Import the whole ``mimi`` package under MicroPython and print the GC heap it holds.

    MICROPYPATH=host_sim/stubs:firmware micropython -X heapsize=256K tools/bench_import.py

(``python tools/bench_import.py`` sets that up and runs it.) Budget: 96 KB after import
(issue 2). Prints one line per module with the heap it added, then the total.
"""
import sys

if sys.implementation.name != "micropython":
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from host_sim import hostenv

    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH="/tmp")
    heap = sys.argv[1] if len(sys.argv) > 1 else "256K"
    raise SystemExit(subprocess.call([hostenv.micropython_exe(), "-X", "heapsize=" + heap, __file__], env=env, cwd=root))

import gc
import os


def modules(folder, pkg):
    out = []
    for name in sorted(os.listdir(folder)):
        path = folder + "/" + name
        if name.endswith(".py"):
            out.append(pkg if name == "__init__.py" else pkg + "." + name[:-3])
        elif "." not in name and name != "__pycache__":
            try:
                os.stat(path + "/__init__.py")
                out.extend(modules(path, pkg + "." + name))
            except OSError:
                pass
    return out


def main():
    base = None
    for p in sys.path:
        try:
            os.stat(p + "/mimi/__init__.py")
            base = p + "/mimi"
            break
        except OSError:
            pass
    names = modules(base, "mimi")
    gc.collect()
    start = gc.mem_alloc()
    prev = start
    for name in names:
        __import__(name)
        gc.collect()
        now = gc.mem_alloc()
        print("%-34s %+7d B" % (name, now - prev))
        prev = now
    gc.collect()
    total = gc.mem_alloc()
    print("modules: %d" % len(names))
    print("heap after import: %d B (%.1f KB), of which mimi: %d B; free: %d B" % (total, total / 1024, total - start, gc.mem_free()))


main()
