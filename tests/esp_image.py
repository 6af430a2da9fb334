"""Stock-like ESP32-S3 firmware images for the tests of tools/partitions.py and flash.sh (host only).

``partitions`` is tools/partitions.py loaded from this checkout by path (``tools`` is no
package). ``STOCK_8MIB`` is upstream's ports/esp32/partitions-8MiB.csv, the table of
ESP32_GENERIC_S3 (boards/ESP32_GENERIC_S3/sdkconfig.board) before MicroPython 1.26, in one
of its versions; ``STOCK_8MIB_3M_APP`` is another version, with a 3 MiB factory app.
``STOCK_V128`` is v1.28.0's ports/esp32/partitions-4MiBplus.csv (sdkconfig.base's table
for every ESP32_GENERIC_S3 since 1.26): no ``vfs`` entry, the port makes one at boot
from the end of the last partition to the end of flash (ports/esp32/main.c). ``merged_image``
lays out a merged .bin as micropython.org ships it: bootloader at 0x0, table at 0x8000,
app at 0x10000.
"""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_spec = importlib.util.spec_from_file_location("partitions", os.path.join(ROOT, "tools", "partitions.py"))
partitions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(partitions)

E = partitions.Entry
STOCK_8MIB = [
    E("nvs", 1, 0x02, 0x9000, 0x6000, 0),
    E("phy_init", 1, 0x01, 0xF000, 0x1000, 0),
    E("factory", 0, 0x00, 0x10000, 0x1F0000, 0),
    E("vfs", 1, 0x81, 0x200000, 0x600000, 0),
]
STOCK_V128 = STOCK_8MIB[:3]
STOCK_8MIB_3M_APP = STOCK_8MIB[:2] + [
    E("factory", 0, 0x00, 0x10000, 0x300000, 0),
    E("vfs", 1, 0x81, 0x310000, 0x4F0000, 0),
]


def esp32s3_header(flash_code=0x2):
    """The first 16 bytes of an ESP32-S3 image: magic E9, chip id 9 at bytes 12-13 (little-endian).

    Byte 3: the flash size code in the high nibble (2: 4 MB, as sdkconfig.base's
    CONFIG_ESPTOOLPY_FLASHSIZE_4MB; 3: 8 MB), 80 MHz (F) in the low one.
    """
    return b"\xe9" + b"\x03\x02" + bytes([flash_code << 4 | 0xF]) + b"\0" * 8 + b"\x09\x00" + b"\0\0"


def merged_image(entries=STOCK_8MIB, app_bytes=0x4000, romfs=True, flash_code=0x2):
    """A merged image (bytes): bootloader, the table of ``entries`` at 0x8000, an app at 0x10000.

    The bootloader and app are patterned, not FF, so a test sees any byte that moved.
    ``romfs``: the app holds the interned name ``rom_ioctl``, as a firmware built with
    ROMFS does (``partitions.supports_romfs``).
    """
    boot = esp32s3_header(flash_code) + bytes(i % 251 for i in range(0x5000 - 16))
    img = bytearray(boot + b"\xFF" * (0x8000 - len(boot)))
    img += partitions.pack(entries) + b"\xFF" * (0x10000 - 0x8C00)
    names = b"VfsRom\x00rom_ioctl\x00" if romfs else b"VfsLfs2\x00"
    img += esp32s3_header() + names + bytes((i * 7) % 253 for i in range(app_bytes - 16 - len(names)))
    return bytes(img)
