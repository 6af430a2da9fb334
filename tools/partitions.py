"""Read and rewrite the ESP-IDF partition table of a MicroPython image, adding a ROMFS partition.

    python3 tools/partitions.py FIRMWARE.bin [--romfs-kb 512] [-o OUT.bin] [--if-supported]
    python3 tools/partitions.py --show FIRMWARE.bin

The first prints the image's table and the new one, then writes the image with the new
table to OUT.bin (default: FIRMWARE-romfs.bin beside the input), and ends with the line
``romfs: offset 0x..., size 0x... (N KiB)`` (``flash.sh flash`` reads it). The second
prints the table only, and whether the firmware has ROMFS (``supports_romfs``). Exit
status 2, with the reason on stderr, when the image has no valid table or no room for
the partition; with ``--if-supported``, status 3 and nothing written when the firmware
has no ROMFS (the partition would be flash taken from the file system for nothing).

Why: MicroPython (1.25+) mounts a ``data`` partition labelled ``romfs`` at /rom at boot
and runs the .mpy files there in place (``vfs.VfsRom``); the stock ESP32_GENERIC_S3
table has none. Since MicroPython 1.26 the stock tables have no filesystem entry either
(v1.28.0's ports/esp32/partitions-4MiBplus.csv: nvs, phy_init, factory up to 0x200000):
at every boot the port registers a ``vfs`` partition from the end of the last partition
to the end of the flash it detects (ports/esp32/main.c, boardctrl_startup). Such a table
gets the ``romfs`` partition right after its last partition, so the run-time ``vfs``
starts after it; the filesystem is then what the flash size in the image's header (at
least) leaves. An older table with a ``vfs`` (or TinyUF2's ``ffat``) entry gives up the
start of that partition instead.

Format (ESP-IDF "Partition Tables", components/partition_table/gen_esp32part.py): at
offset 0x8000 of a merged image (bootloader at 0x0, table at 0x8000, app at 0x10000: the
micropython.org .bin), at most 0xC00 bytes; entries of 32 bytes, ``<2sBBLL16sL``: magic
AA 50, type (0 app, 1 data), subtype, offset, size (bytes), label (NUL-padded), flags;
then EB EB, 14 bytes FF and the MD5 of all the entry bytes before it; FF to the end.
Host-side CPython only (stdlib).
"""
import argparse
import collections
import hashlib
import os
import struct
import sys

TABLE_OFFSET = 0x8000  # ESP-IDF's default CONFIG_PARTITION_TABLE_OFFSET, MicroPython's too
TABLE_BYTES = 0xC00
ROMFS_BYTES = 0x80000  # 512 KiB: the package as .mpy with room to grow
FLASH_ROMFS_BYTES = 0x100000  # what tools/flash.sh flash asks for first: two slots of the package (docs/updates.md)
MIN_FS_BYTES = 0x100000  # what the filesystem (/data, settings files) keeps at least
SECTOR_BYTES = 0x1000  # flash erase unit; data partitions start and end on one
# Byte 3 of the image header (at 0x0), high nibble: the flash size the image was built
# for (esptool's ESP32S3ROM.FLASH_SIZES). The port measures the real size at boot; a
# board has at least this much.
FLASH_SIZES = {0x0: 0x100000, 0x1: 0x200000, 0x2: 0x400000, 0x3: 0x800000, 0x4: 0x1000000,
               0x5: 0x2000000, 0x6: 0x4000000, 0x7: 0x8000000}

_ENTRY = struct.Struct("<2sBBLL16sL")
_MAGIC = b"\xAA\x50"
_MD5_HEAD = b"\xEB\xEB" + b"\xFF" * 14
_MAX_ENTRIES = TABLE_BYTES // _ENTRY.size - 1  # one slot holds the MD5

TYPE_APP = 0x00
TYPE_DATA = 0x01
SUBTYPE_ROMFS = 0x8F  # what upstream's ports/esp32/partitions-4MiB-romfs.csv uses; the label counts
FS_LABELS = ("vfs", "ffat")  # MicroPython's filesystem partition; ffat on TinyUF2 tables

_TYPES = {TYPE_APP: "app", TYPE_DATA: "data"}
_SUBTYPES = {
    TYPE_APP: {0x00: "factory", 0x20: "test", **{0x10 + n: "ota_%d" % n for n in range(16)}},
    TYPE_DATA: {0x00: "ota", 0x01: "phy", 0x02: "nvs", 0x03: "coredump", 0x04: "nvs_keys",
                0x05: "efuse", 0x06: "undefined", 0x81: "fat", 0x82: "spiffs", 0x83: "littlefs"},
}

Entry = collections.namedtuple("Entry", "label type subtype offset size flags")
Entry.__doc__ = """One partition: label (str), type and subtype (ints), offset and size (bytes), flags (int)."""


def parse(table_bytes):
    """The entries of a binary partition table, in table order.

    table_bytes: the table (at least up to its MD5 entry; normally the 0xC00 bytes at
    0x8000). Returns a list of ``Entry``. Raises ``ValueError`` when the first entry lacks
    the magic AA 50, an entry is neither a partition nor the MD5 entry, the MD5 entry is
    missing or its digest does not match the entries before it.
    """
    entries = []
    for pos in range(0, min(len(table_bytes), TABLE_BYTES), _ENTRY.size):
        raw = bytes(table_bytes[pos:pos + _ENTRY.size])
        if len(raw) < _ENTRY.size or (entries and raw == b"\xFF" * _ENTRY.size):
            break
        if raw.startswith(_MD5_HEAD):
            want = hashlib.md5(bytes(table_bytes[:pos])).digest()
            if raw[16:] != want:
                raise ValueError("partition table: MD5 mismatch (the table is damaged or was edited without its MD5)")
            if not entries:
                raise ValueError("partition table: no partitions before the MD5 entry")
            return entries
        magic, ptype, subtype, offset, size, label, flags = _ENTRY.unpack(raw)
        if magic != _MAGIC:
            if not entries:
                raise ValueError("no partition table: magic AA 50 expected, found %s" % raw[:2].hex(" ").upper())
            raise ValueError("partition table: entry %d at +0x%X is neither a partition nor the MD5 entry"
                             % (len(entries), pos))
        entries.append(Entry(label.rstrip(b"\0").decode("ascii", "replace"), ptype, subtype, offset, size, flags))
    raise ValueError("partition table: no MD5 entry after %d partitions (MicroPython's tables have one)" % len(entries))


def pack(entries):
    """The binary table (0xC00 bytes) for ``entries`` (``Entry`` or 6-tuples), MD5 entry included.

    Raises ``ValueError`` on more than 95 entries or a label longer than 16 bytes.
    """
    if len(entries) > _MAX_ENTRIES:
        raise ValueError("partition table: %d entries, at most %d fit" % (len(entries), _MAX_ENTRIES))
    out = bytearray()
    for e in entries:
        e = Entry(*e)
        label = e.label.encode("ascii")
        if len(label) > 16:
            raise ValueError("partition label %r: longer than 16 bytes" % e.label)
        out += _ENTRY.pack(_MAGIC, e.type, e.subtype, e.offset, e.size, label, e.flags)
    out += _MD5_HEAD + hashlib.md5(bytes(out)).digest()
    return bytes(out + b"\xFF" * (TABLE_BYTES - len(out)))


def with_romfs(entries, size=ROMFS_BYTES, flash_bytes=None):
    """``entries`` with a ROMFS partition added, taken from the filesystem's flash.

    size: bytes for the ROMFS, a positive multiple of 4096. When a data partition labelled
    ``romfs`` exists, returns ``entries`` unchanged (as a new list). When the table has a
    filesystem partition (data, labelled ``vfs``, else ``ffat``: MicroPython before 1.26,
    TinyUF2), that partition gives up its first ``size`` bytes: the new entry (label
    ``romfs``, type data, subtype 0x8F) takes its offset and sits just before it; the
    filesystem moves up by ``size`` and shrinks by as much. When it has none (MicroPython
    1.26 and later, whose port makes ``vfs`` at boot from the end of the last partition to
    the end of flash), the new entry goes after the last partition (at the next 4 KiB
    boundary), and ``flash_bytes`` (the flash size the image names) must leave the
    run-time ``vfs`` at least 1 MiB after it. Raises ``ValueError`` on a bad size, a
    ``romfs`` label on a non-data partition, a filesystem that would keep less than 1 MiB,
    or, with no filesystem partition, no ``flash_bytes``.
    """
    entries = [Entry(*e) for e in entries]
    if size <= 0 or size % SECTOR_BYTES:
        raise ValueError("ROMFS size %d bytes: must be a positive multiple of 4 KiB" % size)
    for e in entries:
        if e.label == "romfs":
            if e.type != TYPE_DATA:
                raise ValueError("a partition labelled romfs exists but is not a data partition")
            return entries
    for label in FS_LABELS:
        idx = [i for i, e in enumerate(entries) if e.label == label and e.type == TYPE_DATA]
        if idx:
            break
    else:
        return _romfs_after_last(entries, size, flash_bytes)
    i = idx[0]
    fs = entries[i]
    if fs.size - size < MIN_FS_BYTES:
        raise ValueError("the %s partition has 0x%X bytes (%d KiB): after a %d KiB ROMFS it would keep less than %d KiB"
                         % (fs.label, fs.size, fs.size // 1024, size // 1024, MIN_FS_BYTES // 1024))
    romfs = Entry("romfs", TYPE_DATA, SUBTYPE_ROMFS, fs.offset, size, 0)
    return entries[:i] + [romfs, fs._replace(offset=fs.offset + size, size=fs.size - size)] + entries[i + 1:]


def _romfs_after_last(entries, size, flash_bytes):
    # MicroPython 1.26+: no filesystem entry; the port's vfs starts where the last
    # partition ends (ports/esp32/main.c), so the romfs goes there and vfs follows it.
    if not entries:
        raise ValueError("partition table: no partitions")
    if flash_bytes is None:
        raise ValueError("no filesystem partition (vfs or ffat) in the table, and no flash size to place the ROMFS by")
    end = max(e.offset + e.size for e in entries)
    start = (end + SECTOR_BYTES - 1) // SECTOR_BYTES * SECTOR_BYTES
    left = flash_bytes - (start + size)
    if left < MIN_FS_BYTES:
        raise ValueError("a %d KiB ROMFS at 0x%X would leave the file system %d KiB of this %d KiB flash, less than %d KiB"
                         % (size // 1024, start, max(left, 0) // 1024, flash_bytes // 1024, MIN_FS_BYTES // 1024))
    return entries + [Entry("romfs", TYPE_DATA, SUBTYPE_ROMFS, start, size, 0)]


def flash_size(image_bytes):
    """The flash size in bytes named by a merged image's header (byte 3, high nibble), or None."""
    if len(image_bytes) < 4 or image_bytes[0] != 0xE9:
        return None
    return FLASH_SIZES.get(image_bytes[3] >> 4)


def table_of(image_bytes):
    """The entries of the table at 0x8000 of a merged image; ``ValueError`` if there is none."""
    if len(image_bytes) < TABLE_OFFSET + TABLE_BYTES:
        raise ValueError("no partition table at 0x8000: the image has only 0x%X bytes (an app-only image? "
                         "use the merged .bin from micropython.org, written at 0x0)" % len(image_bytes))
    try:
        return parse(image_bytes[TABLE_OFFSET:TABLE_OFFSET + TABLE_BYTES])
    except ValueError as e:
        raise ValueError("no valid partition table at 0x8000 (%s): not a merged image? "
                         "use the .bin from micropython.org, written at 0x0" % e) from None


def patch_image(image_bytes, size=ROMFS_BYTES):
    """The merged image with its table at 0x8000 rewritten by ``with_romfs(table, size)``.

    image_bytes: a whole merged image (bytes); its header's flash size places the ROMFS of
    a table without a filesystem partition. Returns bytes of the same length; every byte
    outside 0x8000..0x8C00 is the input's. Raises ``ValueError`` when there is no valid
    table at 0x8000 (e.g. an app-only image) or ``with_romfs`` refuses.
    """
    old = table_of(image_bytes)
    new = with_romfs(old, size, flash_size(image_bytes))
    if new == old:
        return bytes(image_bytes)  # byte for byte, whatever follows the MD5 entry
    return bytes(image_bytes[:TABLE_OFFSET]) + pack(new) + bytes(image_bytes[TABLE_OFFSET + TABLE_BYTES:])


def supports_romfs(image_bytes):
    """True when the firmware in ``image_bytes`` was built with ROMFS (``vfs.rom_ioctl``).

    MicroPython keeps its interned names as plain strings in the image, and ``rom_ioctl``
    is one only in a build with ``MICROPY_VFS_ROM_IOCTL``, which is what mounts the
    partition at boot and what ``mpremote romfs deploy`` writes through. The
    micropython.org ESP32_GENERIC_S3 builds seem to lack it (boards/MIMI_ESP32_S3_ROMFS).
    """
    return b"rom_ioctl\x00" in image_bytes


def romfs_entry(entries):
    """The data partition labelled ``romfs`` in ``entries``, or None."""
    for e in entries:
        if e.label == "romfs" and e.type == TYPE_DATA:
            return Entry(*e)
    return None


def describe(entries):
    """The table as text: one line a partition (label, type, subtype, offset, size in hex and KiB),
    and, for a table without a filesystem partition, where MicroPython puts it at boot."""
    lines = ["%-16s %-5s %-10s %10s %10s %9s" % ("name", "type", "subtype", "offset", "size", "KiB")]
    for e in entries:
        sub = _SUBTYPES.get(e.type, {}).get(e.subtype, "0x%02x" % e.subtype)
        lines.append("%-16s %-5s %-10s %#10x %#10x %9d" % (e.label, _TYPES.get(e.type, "0x%02x" % e.type), sub,
                                                        e.offset, e.size, e.size // 1024))
    if entries and not any(e.label in FS_LABELS and e.type == TYPE_DATA for e in entries):
        end = max(e.offset + e.size for e in entries)
        lines.append("(no vfs entry: MicroPython 1.26+ makes the vfs file system at boot, from %#x to the end of flash)"
                     % ((end + SECTOR_BYTES - 1) // SECTOR_BYTES * SECTOR_BYTES))
    return "\n".join(lines)


def _where(entries):
    # Where with_romfs put the romfs, and where the file system is, in words.
    for e in entries:
        if e.label in FS_LABELS and e.type == TYPE_DATA:
            return "romfs from the start of the filesystem partition"
    return "romfs after the last partition; MicroPython makes the vfs file system after it at boot"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="partitions.py", allow_abbrev=False, description="Add a ROMFS partition to a MicroPython "
                                 "image's partition table (see the module docstring).")
    ap.add_argument("image", help="a merged MicroPython image (ESP32_GENERIC_S3-....bin)")
    ap.add_argument("--show", action="store_true", help="print the table and stop")
    ap.add_argument("--romfs-kb", type=int, default=ROMFS_BYTES // 1024, help="ROMFS size in KiB (default 512)")
    ap.add_argument("-o", "--output", help="where to write the new image (default IMAGE-romfs.bin)")
    ap.add_argument("--if-supported", action="store_true",
                    help="only if the firmware has ROMFS (vfs.rom_ioctl); else write nothing, exit status 3")
    args = ap.parse_args(argv)
    try:
        with open(args.image, "rb") as f:
            image = f.read()
        old = table_of(image)
        support = supports_romfs(image)
        if args.show:
            print(describe(old))
            print("ROMFS in this firmware: %s" % ("yes" if support else "no (no vfs.rom_ioctl)"))
            return 0
        if args.if_supported and not support:
            print("romfs: this firmware has no ROMFS (no vfs.rom_ioctl); nothing written")
            return 3
        patched = patch_image(image, args.romfs_kb * 1024)
        new = table_of(patched)
        out = args.output or os.path.splitext(args.image)[0] + "-romfs.bin"
    except (OSError, ValueError) as e:
        print("partitions.py: %s" % e, file=sys.stderr)
        return 2
    print("Partition table of %s:\n%s\n" % (args.image, describe(old)))
    if new == old:
        print("It already has a romfs partition; the image is written unchanged.\n")
    else:
        print("New table (%s):\n%s\n" % (_where(new), describe(new)))
    try:
        with open(out, "wb") as f:
            f.write(patched)
    except OSError as e:
        print("partitions.py: %s" % e, file=sys.stderr)
        return 2
    print("Written: %s" % out)
    print("ROMFS in this firmware: %s" % ("yes" if support else "no (no vfs.rom_ioctl)"))
    r = romfs_entry(new)
    print("romfs: offset %#x, size %#x (%d KiB)" % (r.offset, r.size, r.size // 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
