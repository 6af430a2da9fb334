"""Updates of MicroPython itself over WiFi (both runtimes), through ``esp32.Partition``:
refused on the stock ESP32_GENERIC_S3 table (no OTA slots); with OTA slots (the
stand-in's ``SIM_OTA_BYTES``), an app image written into the partition not running,
read back and checked (hash, chip, not a merged image), booted on trial and confirmed."""
import hashlib
import json

import _esp32_partition as esp32_part
import esp32
import support

from mimi import ota, ota_firmware, ota_flash, ota_image, seam

RUNTIMES = ("cpython", "micropython")


def _hex(data):
    import binascii

    return binascii.hexlify(hashlib.sha256(data).digest()).decode()


def _app(version=b"v1.28.0-mimi", chip=9, size=20000, merged=False):
    """An ESP-IDF app image's first bytes as a build makes them: header (E9, the chip id
    at 12-13), a segment header, esp_app_desc_t (magic 0xABCD5432 at 0x20, version at
    0x30), then filler; ``merged``: a partition table's magic at 0x8000."""
    head = bytearray(b"\xe9\x03\x02\x4f" + b"\x00" * 8 + bytes([chip, 0]) + b"\x00" * 18)
    head[0x20:0x24] = b"\x32\x54\xcd\xab"
    head += b"\x00" * (0x30 - len(head)) + version + b"\x00" * (32 - len(version))
    img = bytearray(head + bytes(i & 0xFF for i in range(size - len(head))))
    if merged:
        img[0x8000:0x8002] = b"\xaa\x50"
    return bytes(img)


def _send(data, sha=None):
    u = ota_firmware.FirmwareUpload(len(data), sha or _hex(data))
    try:
        for i in range(0, len(data), 1500):
            u.write(data[i:i + 1500])
        return u.finish()
    except BaseException:
        u.abort()
        raise


def _with_ota(n):
    support.fresh_flash()
    ota_image._busy[0] = False
    esp32.Partition = esp32_part.Partition  # the stand-in, put on esp32 for these tests only
    esp32_part.SIM_OTA_BYTES = n


def _done():
    esp32_part.SIM_OTA_BYTES = None
    del esp32.Partition


def test_the_stock_table_has_no_ota_slot_and_says_so():
    _with_ota(0)
    assert ota_flash.app_partition() is None
    err = support.raises(ValueError, ota_firmware.FirmwareUpload, 1000, "a" * 64)
    assert "no OTA app slots" in str(err)
    assert not ota_image._busy[0]
    _done()
    assert ota_flash.app_partition() is None  # no esp32.Partition at all: none either


def test_an_app_image_goes_into_the_other_ota_slot_and_boots_on_trial():
    _with_ota(65536)
    try:
        # The running app (ota_0) is an S3 one.
        esp32.Partition(esp32.Partition.RUNNING).writeblocks(0, _app(size=64))
        img = _app()
        assert _send(img) == "v1.28.0-mimi"
        part = ota_flash.app_partition()
        assert part.info()[4] == "ota_1"
        back = bytearray(len(img))
        part.readblocks(0, back)
        assert bytes(back) == img
        assert ota.apply_firmware("v1.28.0-mimi", reset=False) == "ota_1"
        with open(seam.real_path("/otadata.json")) as f:
            assert json.load(f) == {"boot": "ota_1", "valid": False}
        ota.confirm()  # healthy: the bootloader keeps it
        with open(seam.real_path("/otadata.json")) as f:
            assert json.load(f)["valid"] is True
    finally:
        _done()


def test_wrong_hash_size_chip_and_a_merged_image_are_refused():
    _with_ota(65536)
    try:
        esp32.Partition(esp32.Partition.RUNNING).writeblocks(0, _app(size=64))
        img = _app()
        assert "SHA-256 mismatch" in str(support.raises(ValueError, _send, img, "0" * 64))
        assert "holds 65536" in str(support.raises(ValueError, ota_firmware.FirmwareUpload, 65537, "a" * 64))
        assert "another chip (id 0; this one is 9)" in str(support.raises(ValueError, _send, _app(chip=0)))
        assert "merged image" in str(support.raises(ValueError, _send, _app(size=40000, merged=True)))
        assert "not an ESP32 app" in str(support.raises(ValueError, _send, b"PK" + img[2:]))
        u = ota_firmware.FirmwareUpload(len(img), _hex(img))
        u.write(img[:5000])
        assert "cut short" in str(support.raises(ValueError, u.finish))
        assert _send(img) == "v1.28.0-mimi"  # nothing left busy
    finally:
        _done()
