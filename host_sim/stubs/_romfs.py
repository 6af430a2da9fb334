"""Host-only: mount a ROMFS image file at /rom, as a board's firmware mounts its partition.

On a board the ROMFS partition is memory-mapped flash and the port mounts it at boot
(MicroPython docs, "Working with ROMFS"). The unix port has no flash to map, so the image
is read into one bytearray of the GC heap, allocated before anything else so that the
rest of the heap is laid out as a board's would be; callers give the heap that much more
(``-X heapsize``) and subtract ``held`` from their figures.
"""
import gc
import os
import sys


def mount(path=None):
    """Mount the image at ``path`` (default ``$MIMI_ROMFS_IMAGE``) at /rom, first on sys.path.

    Returns the heap the image holds (B), 0 when there is no image to mount.
    """
    import vfs

    path = path or os.getenv("MIMI_ROMFS_IMAGE")
    if not path:
        return 0
    gc.collect()
    before = gc.mem_alloc()
    img = bytearray(os.stat(path)[6])
    with open(path, "rb") as f:
        f.readinto(img)
    gc.collect()
    held = gc.mem_alloc() - before
    vfs.mount(vfs.VfsRom(img), "/rom")
    sys.path.insert(0, "/rom")
    return held
