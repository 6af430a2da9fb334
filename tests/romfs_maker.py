"""A small ROMFS image writer for the update tests, on both runtimes (MicroPython's
extmod/vfs_rom.c format, as mpremote's ``romfs.VfsRomWriter`` writes it)."""


def uint(v):
    """A varuint: big-endian, 7 bits a byte, high bit on all but the last."""
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.insert(0, 0x80 | (v & 0x7F))
        v >>= 7
    return bytes(out)


def record(kind, payload):
    return uint(kind) + uint(len(payload)) + payload


def file(name, data):
    n = name.encode()
    return record(5, uint(len(n)) + n + record(2, data))


def folder(name, *records):
    n = name.encode()
    return record(4, uint(len(n)) + n + b"".join(records))


def image(*records):
    payload = b"".join(records)
    return b"\xd2\xcd\x31" + uint(len(payload)) + payload


def mimi_image(version="test-new", extra=(), pad=0):
    """A ROMFS image of a small mimi package: what an update must at least hold
    (``mimi_image``'s modules as .py), ``build.txt`` with ``version``, plus ``extra``
    records inside ``mimi/`` and ``pad`` bytes of a data file (a bigger image)."""
    if pad:
        extra = tuple(extra) + (file("pad.bin", bytes(range(256)) * (pad // 256) + b"p" * (pad % 256)),)
    return image(folder("mimi", file("__init__.py", b"VERSION = '9.9.9'\n"), file("boot.py", b"# boot\n"),
                        file("app.py", b"# app\n"), file("ota.py", b"# ota\n"),
                        folder("agent", file("rules.md", b"# rules\n" * 300)),
                        file("build.txt", version.encode() + b"\n"), *extra))
