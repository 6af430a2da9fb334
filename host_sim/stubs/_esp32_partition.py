"""Stand-in for ``esp32.Partition``, for the tests of updates over WiFi.

Not an attribute of the ``esp32`` stand-in unless a test puts it there
(``esp32.Partition = _esp32_partition.Partition``): every module the simulator imports
at boot sits in its heap, and the heap benchmarks (tests/host_sim/test_bench.py) have no
room for this one; without it ``mimi.ota_flash`` finds no OTA slot, as on the stock
ESP32_GENERIC_S3 table.

After https://docs.micropython.org/en/latest/library/esp32.html#flash-partitions and
ports/esp32/esp32_partition.c (v1.28.0). The table is the stock ESP32_GENERIC_S3 one
(partitions-4MiBplus.csv: one "factory" app, no OTA slots: get_next_update raises
OSError(ENOENT)), or, with ``SIM_OTA_BYTES`` (or ``MIMI_SIM_OTA_KB``) set, one with
"ota_0" and "ota_1" of that size, running ota_0 (partitions-8MiBplus-ota.csv's kind).
Contents live in ``part_<label>.bin`` in the flash folder (missing bytes read as erased
flash, FF); set_boot and mark_app_valid_cancel_rollback are recorded in ``otadata.json``
(no reboot is simulated: which app runs stays as it was).
"""
import json
import os

import _simflash

_ENOENT = 2

SIM_OTA_BYTES = None  # tests: the size of each OTA app slot; None: MIMI_SIM_OTA_KB
_FACTORY_BYTES = 0x1F0000
_BLOCK = 4096


def _ota_bytes():
    if SIM_OTA_BYTES is not None:
        return SIM_OTA_BYTES
    return int(os.getenv("MIMI_SIM_OTA_KB") or 0) * 1024


def _table():
    # (label, subtype, address, size)
    n = _ota_bytes()
    if n:
        return (("ota_0", 0x10, 0x10000, n), ("ota_1", 0x11, 0x10000 + n, n))
    return (("factory", 0x00, 0x10000, _FACTORY_BYTES),)


def _otadata():
    raw = _simflash.read("otadata.json")
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}


class Partition:
    """A partition of the simulated flash (app partitions only: mimi reads no others)."""

    BOOT = 0
    RUNNING = 1
    TYPE_APP = 0
    TYPE_DATA = 1

    def __init__(self, id, block_size=_BLOCK):
        table = _table()
        if id == Partition.RUNNING:
            entry = table[0]
        elif id == Partition.BOOT:
            boot = _otadata().get("boot")
            entry = ([e for e in table if e[0] == boot] or [table[0]])[0]
        elif isinstance(id, str) and any(e[0] == id for e in table):
            entry = [e for e in table if e[0] == id][0]
        elif isinstance(id, str):
            raise OSError(_ENOENT)
        else:
            raise ValueError()
        self._entry = entry
        self._bs = block_size

    def info(self):
        """``(type, subtype, addr, size, label, encrypted)``."""
        label, subtype, addr, size = self._entry
        return (Partition.TYPE_APP, subtype, addr, size, label, False)

    def _file(self):
        p = _simflash.path("part_%s.bin" % self._entry[0])
        try:
            return open(p, "r+b")
        except OSError:
            return open(p, "w+b")

    def readblocks(self, block_num, buf, offset=0):
        pos = block_num * self._bs + offset
        with self._file() as f:
            f.seek(pos)
            data = f.read(len(buf))
        n = len(data)
        buf[:n] = data
        for i in range(n, len(buf)):
            buf[i] = 0xFF

    def writeblocks(self, block_num, buf, offset=None):
        pos = block_num * self._bs + (offset or 0)
        if pos + len(buf) > self._entry[3]:
            raise OSError(22)
        with self._file() as f:
            f.seek(0, 2)
            end = f.tell()
            if end < pos:
                f.write(b"\xff" * (pos - end))
            f.seek(pos)
            f.write(bytes(buf))

    def ioctl(self, cmd, arg):
        if cmd == 4:
            return self._entry[3] // self._bs
        if cmd == 5:
            return self._bs
        if cmd == 6:
            self.writeblocks(arg, b"\xff" * self._bs)
            return 0
        return None if cmd not in (1, 2, 3) else 0

    def set_boot(self):
        d = _otadata()
        d["boot"] = self._entry[0]
        d["valid"] = False
        _simflash.write_atomic("otadata.json", json.dumps(d).encode())

    def get_next_update(self):
        labels = [e[0] for e in _table()]
        if "ota_0" not in labels:
            raise OSError(_ENOENT)  # esp_ota_get_next_update_partition found none
        return Partition("ota_1" if self._entry[0] == "ota_0" else "ota_0")

    @classmethod
    def mark_app_valid_cancel_rollback(cls):
        d = _otadata()
        d["valid"] = True
        _simflash.write_atomic("otadata.json", json.dumps(d).encode())
