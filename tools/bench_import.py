"""Import the whole ``mimi`` package under MicroPython and print the GC heap it holds.

    python3 tools/bench_import.py [HEAP]          (HEAP: 256K unless given)

runs ``micropython -X heapsize=HEAP`` twice and prints one line per module with the heap
it added, then the totals (budget: 96 KB after import, issue 2):

1. ROMFS, as ``tools/flash.sh deploy`` puts the package on a board: the package's ROMFS
   image (``host_sim/romfs.py``: .mpy files, built with mpremote's writer) mounted at
   ``/rom`` with ``vfs.VfsRom``. On a board the image is memory-mapped flash and the
   bytecode and strings run from there ("Working with ROMFS", MicroPython docs). The
   unix port has no flash to map, so the image is read into the GC heap first: the line
   ``heap after import:`` is ``gc.mem_alloc()`` less the image's own blocks, measured
   before the import. This figure is the budgeted one.
2. Plain ``.py`` files (the host simulator's way, and a board without a ROMFS
   partition): the line ``heap after import from .py files:``.
"""
import sys

if sys.implementation.name != "micropython":
    import os
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from host_sim import hostenv, romfs

    heap = sys.argv[1] if len(sys.argv) > 1 else "256K"
    exe = hostenv.micropython_exe()
    base = dict(os.environ, MIMI_FLASH=tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix="mimi-bench-import-") as d:
        image = os.path.join(d, "mimi.romfs")
        with open(image, "wb") as f:
            f.write(romfs.build())
        print("== ROMFS image (%d B) mounted at /rom, micropython -X heapsize=%s" % (os.path.getsize(image), heap))
        # No firmware/ on the path: every mimi module must come from the image.
        env = dict(base, MICROPYPATH=os.pathsep.join((hostenv.STUBS, ".frozen")), MIMI_ROMFS_IMAGE=image)
        rc = subprocess.call([exe, "-X", "heapsize=" + heap, __file__], env=env, cwd=d)
    if rc == 0:
        print("== .py files from firmware/, micropython -X heapsize=%s" % heap)
        env = dict(base, MICROPYPATH=hostenv.micropython_path())
        rc = subprocess.call([exe, "-X", "heapsize=" + heap, __file__], env=env, cwd=root)
    raise SystemExit(rc)

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
        where = sys.modules[name].__file__
        if image and not where.startswith("/rom/"):
            raise SystemExit("%s came from %s, not the image" % (name, where))
    gc.collect()
    total = gc.mem_alloc() - held
    print("modules: %d" % len(names))
    if image:
        print("heap after import: %d B (%.1f KB), of which mimi: %d B; gc.mem_alloc() %d B less the image's %d B"
              " (flash on a board); free: %d B" % (total, total / 1024, total - start + held, total + held, held,
                                                   gc.mem_free()))
    else:
        print("heap after import from .py files: %d B (%.1f KB), of which mimi: %d B; free: %d B"
              % (total, total / 1024, total - start, gc.mem_free()))


main()
