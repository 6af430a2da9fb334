"""What an update over WiFi costs on the board's side, under MicroPython: heap and time.

    python3 tools/bench_ota.py

Builds this checkout's package image (``host_sim.romfs``), then under the ``micropython``
command (the unix port, ``-X heapsize=512K``, the package as ``.py`` files, a flash
folder without ROMFS: the path that also unpacks) streams it through
``mimi.ota_image.Upload`` in 4 KiB chunks, as ``mimi.web.update_route`` does with the
HTTP body, and prints:

- the heap the update modules hold once imported (``mimi.ota``, ``mimi.ota_image``,
  ``mimi_slot``; ``gc.mem_alloc()`` after a collection);
- the heap an upload holds while it runs (the ``Upload``, its open file, one chunk) and
  what ``finish`` holds at most (its 4 KiB buffer), each after a collection;
- what ``finish`` allocated (the heap just after it, less before: a floor, as the
  collector may have run), garbage once it returns;
- the time each step takes on this machine (a board's flash is slower: docs/updates.md).
The 64-bit unix port's objects are about twice the ESP32's.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_BOARD = r'''
import gc, os, time, hashlib, binascii
from mimi import seam, log
gc.collect(); a0 = gc.mem_alloc()
import mimi_slot
from mimi import ota, ota_flash, ota_image
gc.collect(); a1 = gc.mem_alloc()
print("modules (mimi.ota, mimi.ota_image, mimi.ota_flash, mimi_slot; seam and log loaded before): %d B" % (a1 - a0))
img = os.getenv("BENCH_IMAGE")
size = os.stat(img)[6]
h = hashlib.sha256()
with open(img, "rb") as f:
    while True:
        b = f.read(4096)
        if not b:
            break
        h.update(b)
sha = binascii.hexlify(h.digest()).decode()
f = open(img, "rb")
gc.collect(); base = gc.mem_alloc()
t0 = time.ticks_ms()
u = ota_image.Upload(size, sha)
gc.collect(); held_begin = gc.mem_alloc() - base
chunk = f.read(4096)
held = 0
n = 0
while chunk:
    u.write(chunk)
    n += 1
    if n == 20:
        gc.collect(); held = gc.mem_alloc() - base
    chunk = f.read(4096)
t1 = time.ticks_ms()
gc.enable()
gc.collect(); g1 = gc.mem_alloc()
v = u.finish()
g2 = gc.mem_alloc()
gc.collect()
t2 = time.ticks_ms()
print("image: %d B, version %s" % (size, v))
print("held while receiving (Upload, its file, one 4 KiB chunk): %d B (after begin: %d B)" % (held, held_begin))
print("allocated by finish (SHA-256 read-back, walk, unpack), at most, garbage after: %d B" % (g2 - g1))
print("held after finish: %d B" % (gc.mem_alloc() - base))
print("time: receive %d ms, finish (hash, walk, unpack) %d ms" % (time.ticks_diff(t1, t0), time.ticks_diff(t2, t1)))
'''


def main():
    sys.path.insert(0, ROOT)
    from host_sim import hostenv, romfs

    exe = hostenv.micropython_exe()
    if not exe:
        print("bench_ota: %s" % hostenv.micropython_missing(), file=sys.stderr)
        return 2
    print("== micropython: %s" % hostenv.micropython_about(exe), flush=True)
    with tempfile.TemporaryDirectory(prefix="mimi-bench-ota-") as d:
        image = os.path.join(d, "mimi.romfs")
        with open(image, "wb") as f:
            f.write(romfs.build())
        flash = os.path.join(d, "flash")
        os.makedirs(os.path.join(flash, "data"))
        script = os.path.join(d, "bench.py")
        with open(script, "w") as f:
            f.write(_BOARD)
        env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=flash, BENCH_IMAGE=image)
        return subprocess.call([exe, "-X", "heapsize=512K", script], env=env, cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
