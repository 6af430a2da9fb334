"""Updates over WiFi: the flash partitions an update writes, where they differ by port.

- the ROMFS partition, whose two halves are the package's update slots
  (``RomPartition``, ``rom_partition()``);
- the app partitions, where the table has OTA slots, for MicroPython itself
  (``app_partition()``, ``app_header()``, ``app_boot()``, ``app_confirm()``);
- ``mpy_version()``, the ``.mpy`` version this MicroPython imports.

These belong with ``mimi.seam`` (hardware, runtime differences) but live apart, imported
only by the update modules: ``mimi.seam`` is imported by everything at boot, and as
``.py`` on the 64-bit unix port these 2 KB pushed the 320 KB soak
(tests/host_sim/test_bench.py) over its edge. Nothing here asks which runtime it is
on: each function uses what the port offers (``vfs.rom_ioctl``, ``esp32.Partition``),
as mpremote does, and the host's stand-ins answer on the host.
"""
import sys


# -- the ROMFS partition -------------------------------------------------------------


class RomPartition:
    """The board's ROMFS partition, for writing one of its two update slots.

    ``vfs.rom_ioctl(2, 0)`` gives the partition: on the ESP32 port an ``esp32.Partition``
    (block device: ``ioctl(5)`` block size, ``ioctl(6, n)`` erases block ``n``,
    ``writeblocks(n, buf, offset)`` writes erased flash; memory-mapped, so ``view``
    reads flash in place: ports/esp32/esp32_partition.c), on the virtual board a
    memoryview written through ``vfs.rom_ioctl(3, 0, offset, nbytes)`` (erase) and
    ``vfs.rom_ioctl(4, 0, offset, buf)`` (host_sim/vboard_prelude.py). mpremote's
    ``romfs deploy`` uses the same two ways. ``OSError`` when the port refuses.
    """

    def __init__(self, seg):
        self.seg = seg
        self.view = memoryview(seg)  # the whole partition (bytes, read only)
        self.size = len(self.view)
        self.block = seg.ioctl(5, 0) if hasattr(seg, "ioctl") else 4096

    def erase(self, offset, nbytes):
        """Erase ``[offset, offset + nbytes)``, widened to whole blocks (reads FF after)."""
        if hasattr(self.seg, "ioctl"):
            for n in range(offset // self.block, (offset + nbytes + self.block - 1) // self.block):
                self.seg.ioctl(6, n)
            return
        import vfs

        r = vfs.rom_ioctl(3, 0, offset, nbytes)
        if r < 0:
            raise OSError(-r)

    def write(self, offset, buf):
        """Write ``buf`` at ``offset`` (erased before)."""
        if hasattr(self.seg, "ioctl"):
            self.seg.writeblocks(offset // self.block, buf, offset % self.block)
            return
        import vfs

        r = vfs.rom_ioctl(4, 0, offset, buf)
        if r < 0:
            raise OSError(-r)


def rom_partition():
    """The ``RomPartition`` when this MicroPython has ROMFS and a ``romfs`` partition,
    else None (the micropython.org builds, CPython)."""
    try:
        import vfs
    except ImportError:
        return None
    if not hasattr(vfs, "rom_ioctl") or vfs.rom_ioctl(1) < 1:
        return None
    seg = vfs.rom_ioctl(2, 0)
    if isinstance(seg, int):  # a negative errno: no partition
        return None
    return RomPartition(seg)


def mpy_version():
    """The ``.mpy`` version this MicroPython imports (6 for 1.23 to 1.29:
    ``sys.implementation._mpy & 0xFF``), None on CPython."""
    m = getattr(sys.implementation, "_mpy", None)
    return m & 0xFF if m is not None else None


# -- updates over WiFi: MicroPython itself, where the partition table has OTA slots ----


def app_partition():
    """The app partition an update of MicroPython itself goes to:
    ``esp32.Partition(esp32.Partition.RUNNING).get_next_update()`` (an ``esp32.Partition``:
    ``info()``, ``readblocks``/``writeblocks``/``ioctl`` in 4 KiB blocks, ``set_boot()``),
    or None when the partition table has no OTA slots: the stock ESP32_GENERIC_S3 table has
    one ``factory`` app and no ``ota_0``/``ota_1``, and the port raises ``OSError(ENOENT)``
    (ports/esp32/esp32_partition.c; docs/updates.md). None on CPython too."""
    try:
        import esp32

        return esp32.Partition(esp32.Partition.RUNNING).get_next_update()
    except (ImportError, AttributeError, OSError):
        return None


def app_header():
    """The first 16 bytes of the running app (its ESP-IDF image header: byte 0 is 0xE9,
    bytes 12-13 the chip id), or None when it cannot be read."""
    try:
        import esp32

        buf = bytearray(16)
        esp32.Partition(esp32.Partition.RUNNING).readblocks(0, buf)
        return bytes(buf)
    except (ImportError, AttributeError, OSError):
        return None


def app_boot(part):
    """Boot ``part`` (an app partition, written and checked) from the next reset on. With
    ESP-IDF's app rollback (CONFIG_BOOTLOADER_APP_ROLLBACK_ENABLE, on in the port's
    sdkconfig.base) it boots on trial: a reset before ``app_confirm`` goes back."""
    part.set_boot()


def app_confirm():
    """Tell the bootloader the running MicroPython works
    (``esp32.Partition.mark_app_valid_cancel_rollback()``; harmless when it was not on
    trial). False where there is nothing to confirm (no ``esp32``, rollback not built in)."""
    try:
        import esp32

        esp32.Partition.mark_app_valid_cancel_rollback()
        return True
    except (ImportError, AttributeError, OSError):
        return False
