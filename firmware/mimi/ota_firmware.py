"""Updates over WiFi of MicroPython itself, where the partition table has OTA slots.

The app image of a build goes into the app partition not running
(``mimi.ota_flash.app_partition``), as ``mimi.ota_image.Upload`` takes the package
(same interface, same single upload at a time); ``mimi.ota.apply_firmware`` boots it on
trial and ESP-IDF's bootloader goes back by itself unless ``mimi.ota.confirm`` marks it
valid (docs/updates.md, "MicroPython itself").
"""
from micropython import const

from mimi import log, ota_flash
from mimi.ota_image import _busy, _sha256  # one upload at a time, packages and firmware alike

_OTA_BUF_BYTES = const(4096)  # flash blocks: erased, written and read back in these


class FirmwareUpload:
    """A new MicroPython (the app image a build makes: ``build-BOARD/micropython.bin``,
    not the merged ``firmware.bin`` for USB) on its way into the app partition not
    running (``ota_flash.app_partition``), where the partition table has OTA slots.

    Same interface and errors as ``Upload``; also ``ValueError`` when the table has no
    OTA slots (the stock ESP32_GENERIC_S3 one: docs/updates.md), when the image is over
    the partition, and from ``finish`` when it is not an app image for this chip (byte 0
    0xE9, the chip id in bytes 12-13 as the running app's) or is a merged image (a
    partition table at 0x8000). ``finish`` returns the version the image names (ESP-IDF's
    ``esp_app_desc_t.version``, 32 bytes at 0x30: MicroPython's git description).
    ``mimi.ota.apply_firmware`` then boots it; the bootloader goes back by itself when
    it resets before ``mimi.ota.confirm`` (ESP-IDF app rollback).
    """

    def __init__(self, size, sha256_hex):
        sha = str(sha256_hex or "").strip().lower()
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError("the SHA-256 must be 64 hex digits")
        if _busy[0]:
            raise RuntimeError("another update is being received")
        self.size = int(size)
        self.sha = sha
        self.got = 0
        self.buf = None
        self.part = ota_flash.app_partition()
        if self.part is None:
            raise ValueError("this board's partition table has no OTA app slots: MicroPython is updated "
                             "over USB here (tools/flash.sh flash; docs/updates.md)")
        cap = self.part.info()[3]
        if self.size <= 0:
            raise ValueError("empty image")
        if self.size > cap:
            raise ValueError("image of %d bytes; the update slot holds %d" % (self.size, cap))
        _busy[0] = True
        try:
            for n in range((self.size + _OTA_BUF_BYTES - 1) // _OTA_BUF_BYTES):
                self.part.ioctl(6, n)  # erase block n (4 KiB)
        except BaseException:
            self.abort()
            raise
        log.info("ota", "receiving MicroPython, %d bytes, into %s", self.size, self.part.info()[4])

    def write(self, chunk):
        """As ``Upload.write``."""
        n = len(chunk)
        if self.got + n > self.size:
            raise ValueError("more bytes than the announced %d" % self.size)
        self.part.writeblocks(self.got // _OTA_BUF_BYTES, chunk, self.got % _OTA_BUF_BYTES)
        self.got += n

    def finish(self):
        """Check what was written (read back from flash); returns the image's version."""
        try:
            if self.got != self.size:
                raise ValueError("cut short: %d of %d bytes" % (self.got, self.size))
            h = _sha256(self, self.size)
            if h != self.sha:
                raise ValueError("SHA-256 mismatch: received %s, announced %s" % (h, self.sha))
            head = bytes(self.read(0, 0x50))
            mine = ota_flash.app_header()
            if head[:1] != b"\xe9":
                raise ValueError("not an ESP32 app image (no E9 at its start)")
            if mine and mine[:1] == b"\xe9" and head[12:14] != mine[12:14]:
                raise ValueError("an app for another chip (id %d; this one is %d)"
                                 % (head[12] | head[13] << 8, mine[12] | mine[13] << 8))
            if self.size > 0x8002 and bytes(self.read(0x8000, 2)) == b"\xaa\x50":
                raise ValueError("a merged image (bootloader, partition table, app) for USB; send the app alone "
                                 "(build-BOARD/micropython.bin)")
            version = head[0x30:0x50].split(b"\0")[0].decode() if head[0x20:0x24] == b"\x32\x54\xcd\xab" else ""
            log.info("ota", "%s holds MicroPython %s, checked", self.part.info()[4], version or "?")
            return version or "unknown"
        finally:
            _busy[0] = False

    def read(self, pos, n):
        # Into one reused buffer, as _FileReader: good until the next read.
        if self.buf is None:
            self.buf = memoryview(bytearray(_OTA_BUF_BYTES))
        mv = self.buf[:min(n, _OTA_BUF_BYTES)]
        self.part.readblocks(pos // _OTA_BUF_BYTES, mv, pos % _OTA_BUF_BYTES)
        return mv

    def abort(self):
        """Give the upload up; the partition stays unused (the running app boots next)."""
        _busy[0] = False
