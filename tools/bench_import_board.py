"""The MicroPython side of ``tools/bench_import.py``, which runs it (see there for how).

A file of its own so that the driver's CPython code is not compiled here: every name in
a script becomes an interned name, and the pool grows in chunks (docs/heap.md).
"""
import sys

import gc
import os

# Modules the app never imports: tools/flash.sh runs them, into whatever heap is free then.
# Imported and printed after the totals, which are what the app holds.
NOT_THE_APP = ("mimi.doctor",)


def modules(folder, pkg):
    out = []
    for name in sorted(os.listdir(folder)):
        path = folder + "/" + name
        stem = name.rsplit(".", 1)[0]
        if name.endswith(".py") or name.endswith(".mpy"):
            out.append(pkg if stem == "__init__" else pkg + "." + stem)
        elif "." not in name and name != "__pycache__":
            for init in ("/__init__.py", "/__init__.mpy"):
                try:
                    os.stat(path + init)
                    out.extend(modules(path, pkg + "." + name))
                    break
                except OSError:
                    pass
    return out


def main():
    import _romfs  # host_sim/stubs: the image into the heap, mounted at /rom

    image = os.getenv("MIMI_ROMFS_IMAGE")
    held = _romfs.mount(image)
    base = None
    for p in sys.path:
        try:
            os.stat(p + "/mimi")
            base = p + "/mimi"
            break
        except OSError:
            pass
    names = [n for n in modules(base, "mimi") if n not in NOT_THE_APP]
    gc.collect()
    start = gc.mem_alloc()
    prev = start
    for name in names:
        __import__(name)
        gc.collect()
        now = gc.mem_alloc()
        print("%-34s %+7d B" % (name, now - prev))
        prev = now
        where = sys.modules[name].__file__
        if image and not where.startswith("/rom/"):
            raise SystemExit("%s came from %s, not the image" % (name, where))
    gc.collect()
    total = gc.mem_alloc() - held
    print("modules: %d" % len(names))
    if image:
        print("heap after import: %d B (%.1f KB), of which mimi: %d B; gc.mem_alloc() %d B less the image's %d B"
              " of heap (flash on a board); free: %d B" % (total, total / 1024, total - start + held, total + held, held,
                                                   gc.mem_free()))
    else:
        print("heap after import from .py files: %d B (%.1f KB), of which mimi: %d B; free: %d B"
              % (total, total / 1024, total - start, gc.mem_free()))
    for name in NOT_THE_APP:
        prev = gc.mem_alloc()
        try:
            __import__(name)
        except MemoryError:  # the app's modules left no room in this heap (a board's grows)
            print("%-34s no room left in this heap (not the app's: tools/flash.sh only)" % name)
            continue
        gc.collect()
        print("%-34s %+7d B (not the app's: tools/flash.sh only, not in the total)" % (name, gc.mem_alloc() - prev))


main()
