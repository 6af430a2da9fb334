"""Stand-in for MicroPython's ``esp32`` module: the NVS key-value store.

Follows https://docs.micropython.org/en/latest/library/esp32.html#non-volatile-storage:
``NVS(namespace)`` with ``set_i32``/``get_i32``, ``set_blob``/``get_blob``, ``erase_key``
and ``commit``. As on the device, a missing key raises ``OSError(ENOENT)``, a blob read
into a too-small buffer raises ``OSError`` (ESP_ERR_NVS_INVALID_LENGTH), keys are at most
15 characters, and changes reach flash only on ``commit()``. The store is the file
``nvs.json`` in the flash folder (outside ``/data``, like the device's NVS partition).

``idf_heap_info(capabilities)`` describes the ESP-IDF heap regions of an ESP32-S3 with
2 MB of quad PSRAM at the REPL (figures as such a board shows them; they do not move).
``MIMI_SIM_PSRAM`` (KB, read at each call; default 2048) sets the PSRAM's size, ``0`` a
board without PSRAM (or an octal module running the standard image, which does not find it).
"""
import json
import os
import _simflash

# Capability bits of ESP-IDF's esp_heap_caps.h; the port exports two of them.
_CAP_EXEC, _CAP_32BIT, _CAP_8BIT, _CAP_DMA = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_CAP_SPIRAM, _CAP_INTERNAL, _CAP_DEFAULT = 1 << 10, 1 << 11, 1 << 12
HEAP_DATA = _CAP_8BIT
HEAP_EXEC = _CAP_EXEC
_INTERNAL = _CAP_8BIT | _CAP_32BIT | _CAP_DMA | _CAP_INTERNAL | _CAP_DEFAULT
# (capabilities, total, free, largest free block, minimum free) per region: DRAM, D/IRAM,
# RTC fast memory; then PSRAM, where the GC heap's first 64 KB area already is.
_REGIONS = ((_INTERNAL, 229376, 206848, 110592, 198656),
            (_INTERNAL | _CAP_EXEC, 89088, 70656, 65536, 69632),
            (_CAP_8BIT | _CAP_32BIT | _CAP_INTERNAL | _CAP_EXEC, 7936, 7680, 7680, 7680))
_GC_FIRST_AREA = 65536 + 2048


def _regions():
    kb = int(os.getenv("MIMI_SIM_PSRAM") or 2048)
    if kb <= 0:
        return _REGIONS
    total = kb * 1024
    free = total - _GC_FIRST_AREA
    return _REGIONS + ((_CAP_8BIT | _CAP_32BIT | _CAP_SPIRAM | _CAP_DEFAULT, total, free, free - 4096, free),)


def idf_heap_info(capabilities):
    """``[(total, free, largest free block, minimum free), ...]`` in bytes, one tuple per
    heap region that has every bit of ``capabilities`` (``HEAP_DATA``, ``HEAP_EXEC`` or
    any ``MALLOC_CAP_*`` bits), as ports/esp32/modesp32.c returns them."""
    caps = int(capabilities)
    return [r[1:] for r in _regions() if r[0] & caps == caps]

_ENOENT = 2
_ERR_INVALID_LENGTH = -0x110C  # ESP_ERR_NVS_INVALID_LENGTH
_ERR_KEY_TOO_LONG = -0x1109  # ESP_ERR_NVS_KEY_TOO_LONG
_KEY_MAX = 15
_FILE = "nvs.json"

_pending = {}  # namespace -> {key: [kind, value] or None (erased)}


def _load():
    raw = _simflash.read(_FILE)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    # The launcher sets a damaged store aside before boot; never crash on one made later.
    return data if isinstance(data, dict) else {}


class NVS:
    """One NVS namespace (at most 15 characters, as ESP-IDF requires)."""

    def __init__(self, namespace):
        if not namespace or len(namespace) > _KEY_MAX:
            raise OSError(_ERR_KEY_TOO_LONG)
        self._ns = namespace

    def _check(self, key):
        if not isinstance(key, str) or not key or len(key) > _KEY_MAX:
            raise OSError(_ERR_KEY_TOO_LONG)

    def _get(self, key, kind):
        self._check(key)
        pend = _pending.get(self._ns, {})
        if key in pend:
            item = pend[key]
        else:
            item = _load().get(self._ns, {}).get(key)
        if item is None or item[0] != kind:
            raise OSError(_ENOENT)
        return item[1]

    def _set(self, key, kind, value):
        self._check(key)
        _pending.setdefault(self._ns, {})[key] = [kind, value]

    def set_i32(self, key, value):
        """Store a 32-bit signed integer under ``key``."""
        value = int(value)
        if value < -(1 << 31) or value >= (1 << 31):
            raise OverflowError("value out of range for i32")
        self._set(key, "i32", value)

    def get_i32(self, key):
        """Return the integer stored under ``key``; ``OSError(ENOENT)`` when missing."""
        return self._get(key, "i32")

    def set_blob(self, key, value):
        """Store bytes (or str, encoded UTF-8) under ``key``."""
        if isinstance(value, str):
            value = value.encode()
        self._set(key, "blob", bytes(value).hex())

    def get_blob(self, key, buffer):
        """Copy the blob under ``key`` into ``buffer``; return its length in bytes.

        Raises ``OSError(ENOENT)`` when missing and ``OSError`` with
        ESP_ERR_NVS_INVALID_LENGTH when ``buffer`` is too small, as the device does.
        """
        data = bytes.fromhex(self._get(key, "blob"))
        if len(data) > len(buffer):
            raise OSError(_ERR_INVALID_LENGTH)
        buffer[: len(data)] = data
        return len(data)

    def erase_key(self, key):
        """Remove ``key``; ``OSError(ENOENT)`` when it does not exist."""
        self._check(key)
        pend = _pending.get(self._ns, {})
        present = (pend[key] is not None) if key in pend else (key in _load().get(self._ns, {}))
        if not present:
            raise OSError(_ENOENT)
        _pending.setdefault(self._ns, {})[key] = None

    def commit(self):
        """Write this namespace's pending changes to the flash folder (atomically)."""
        pend = _pending.pop(self._ns, None)
        if not pend:
            return
        data = _load()
        ns = data.setdefault(self._ns, {})
        for k in pend:
            if pend[k] is None:
                ns.pop(k, None)
            else:
                ns[k] = pend[k]
        _simflash.write_atomic(_FILE, json.dumps(data).encode())
