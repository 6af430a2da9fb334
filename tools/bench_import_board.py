"""The MicroPython side of ``tools/bench_import.py``, which runs it (see there for how).

A file of its own so that the driver's CPython code is not compiled here: every name in
a script becomes an interned name, and the pool grows in chunks (docs/heap.md).
"""
import sys

import gc
import os


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
    # The modules MIMI_BENCH_LATER names (the Feishu channel's, imported only when it is set
    # up) are measured apart, after the budgeted figure. From the environment, without a
    # name of their own: every name in this script and on its command line is an interned
    # name in the figure.
    names = [n for n in modules(base, "mimi") if n not in os.getenv("MIMI_BENCH_LATER", "").split()]
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
    print("optional, the Feishu channel, MQTT (and mimi.doctor, flash.sh's), the web app (and microdot):")
    try:
        for name in os.getenv("MIMI_BENCH_LATER", "").split():
            __import__(name)
            gc.collect()
            now = gc.mem_alloc()
            print("%-34s %+7d B" % (name, now - prev))
            prev = now
            where = sys.modules[name].__file__
            if image and not where.startswith("/rom/"):
                raise SystemExit("%s came from %s, not the image" % (name, where))
    except MemoryError:  # .py files in a small heap: compiling needs room the modules then free
        print("no room to compile them in this heap")
        return
    gc.collect()
    print("heap with the Feishu channel and the web app too: %d B (%.1f KB)" % (gc.mem_alloc() - held, (gc.mem_alloc() - held) / 1024))


main()
