"""Updates over WiFi on the board's side (both runtimes): receiving an image into the slot
not running (good, wrong hash, cut, too big, not mimi), the switch on trial, boot's
rollback after boots without a healthy run or after a crash, confirm, and what /status
says. Without ROMFS here (the image unpacked into /ota1/mimi) and with a ROMFS partition
standing in (``_RomStandIn``: the slot written in flash's half, read back from there)."""
import hashlib
import os
import sys

import machine
import romfs_maker
import support

import mimi_slot
from mimi import commands, ota, ota_flash, ota_image, seam

RUNTIMES = ("cpython", "micropython")


def _hex(data):
    import binascii

    return binascii.hexlify(hashlib.sha256(data).digest()).decode()


def _fresh():
    root = support.fresh_flash()
    mimi_slot.save(None)
    ota_image._busy[0] = False
    while "/ota1" in sys.path:
        sys.path.remove("/ota1")
    return root


def _send(data, sha=None, chunk=1000):
    u = ota_image.Upload(len(data), sha or _hex(data))
    try:
        for i in range(0, len(data), chunk):
            u.write(data[i:i + chunk])
        return u.finish()
    except BaseException:
        u.abort()
        raise


def _exists(path):
    try:
        os.stat(seam.real_path(path))
        return True
    except OSError:
        return False


def test_a_good_image_lands_in_the_other_slot_and_says_its_version():
    _fresh()
    img = romfs_maker.mimi_image("v1.2-3-gabc")
    assert _send(img, chunk=333) == "v1.2-3-gabc"
    with open(seam.real_path("/ota1/mimi/build.txt")) as f:
        assert f.read() == "v1.2-3-gabc\n"
    with open(seam.real_path("/ota1/mimi/agent/rules.md")) as f:
        assert f.read() == "# rules\n" * 300
    assert not _exists(ota_image.OTA_INCOMING)  # the received file goes once unpacked
    assert mimi_slot.load() == {}  # nothing switched yet: the running version stays


def test_a_wrong_hash_a_cut_upload_and_a_foreign_image_change_nothing():
    _fresh()
    img = romfs_maker.mimi_image()
    err = support.raises(ValueError, _send, img, "0" * 64)
    assert "SHA-256 mismatch" in str(err) and _hex(img) in str(err)
    u = ota_image.Upload(len(img), _hex(img))
    u.write(img[:len(img) // 2])
    assert "cut short" in str(support.raises(ValueError, u.finish))
    u.abort()
    not_mimi = romfs_maker.image(romfs_maker.folder("other", romfs_maker.file("x.py", b"")))
    assert "not a mimi package" in str(support.raises(ValueError, _send, not_mimi))
    assert "not a ROMFS image" in str(support.raises(ValueError, _send, b"PK\x03\x04" + b"z" * 100))
    assert not _exists("/ota1/mimi") and not _exists(ota_image.OTA_INCOMING)
    assert mimi_slot.load() == {}
    assert _send(img) == "test-new"  # and the next upload goes through (nothing left busy)


def test_sizes_and_hashes_are_checked_before_a_byte_is_taken():
    _fresh()
    assert "64 hex digits" in str(support.raises(ValueError, ota_image.Upload, 100, "abc"))
    assert "empty" in str(support.raises(ValueError, ota_image.Upload, 0, "a" * 64))
    big = ota_image.OTA_FILES_MAX_BYTES + 1
    assert "holds" in str(support.raises(ValueError, ota_image.Upload, big, "a" * 64))
    u = ota_image.Upload(10, "a" * 64)
    assert "another update" in str(support.raises(RuntimeError, ota_image.Upload, 10, "a" * 64))
    assert "more bytes" in str(support.raises(ValueError, u.write, b"x" * 11))
    u.abort()
    ota_image.Upload(10, "A" * 64).abort()  # upper-case hex is fine


def test_apply_switches_on_trial_and_boot_rolls_back_after_boots_without_healthy():
    _fresh()
    version = _send(romfs_maker.mimi_image("v2"))
    st = ota.apply(version, reset=False)
    assert st["slot"] == 1 and st["trial"] and st["running"] == "v2" and st["previous"] == ota.running_version()
    for boot in range(1, mimi_slot.TRIAL_BOOTS + 1):
        assert mimi_slot.select() == 1 and "/ota1" in sys.path
        assert mimi_slot.load()["boots"] == boot
        sys.path.remove("/ota1")
    cause = machine.reset_cause
    try:
        machine.reset_cause = lambda: machine.SOFT_RESET
        for _ in range(3):  # mpremote's soft resets: no boots of the trial
            assert mimi_slot.select() == 1 and mimi_slot.load()["boots"] == mimi_slot.TRIAL_BOOTS
            sys.path.remove("/ota1")
    finally:
        machine.reset_cause = cause
    assert mimi_slot.select() == 0  # the next boot: no healthy run came, back to slot 0
    st = mimi_slot.load()
    assert not st["trial"] and st["running"] == ota.running_version() and st["previous"] == "v2"
    assert "rolled back from v2" in st["note"] and "without running healthy" in st["note"]
    assert "/ota1" not in sys.path
    line = ota.describe()
    assert "before: v2" in line and "rolled back from v2" in line


def test_a_crash_of_the_trial_version_rolls_back_at_the_next_boot():
    _fresh()
    ota.apply(_send(romfs_maker.mimi_image("v3")), reset=False)
    cause = machine.reset_cause
    try:
        machine.reset_cause = lambda: machine.HARD_RESET
        machine.RTC().memory(b"mimi:0:1:0")  # mimi.boot's mark: the app was running
        assert mimi_slot.select() == 1  # the reset apply asked for: its first boot, no crash
        assert mimi_slot.select() == 0  # a hard reset while the app ran: a crash
        assert "it crashed" in mimi_slot.load()["note"]
        assert not mimi_slot.crashed(machine.HARD_RESET, b"mimi:0:0:0")  # reset while stopped: asked for
        assert not mimi_slot.crashed(machine.PWRON_RESET, b"mimi:0:1:0")
        assert mimi_slot.crashed(machine.WDT_RESET, b"mimi:2:1:1")
    finally:
        machine.reset_cause = cause
        machine.RTC().memory(b"")


def test_a_healthy_run_confirms_and_later_boots_keep_it():
    _fresh()
    ota.apply(_send(romfs_maker.mimi_image("v4")), reset=False)
    assert mimi_slot.select() == 1
    err = support.raises(RuntimeError, ota_image.Upload, 100, "a" * 64)
    assert "v4 is on trial" in str(err)  # slot 0 holds the way back until v4 has proved itself
    assert ota.confirm() and not ota.confirm()  # once; nothing on trial after
    for _ in range(mimi_slot.TRIAL_BOOTS + 2):
        assert mimi_slot.select() == 1
    i = ota.info()
    assert i["slot"] == 1 and not i["trial"] and i["note"] == "" and i["previous"] == ota.running_version()
    assert ota.other_slot() == 0
    # The next update goes to slot 0 (/lib/mimi), and forgets what slot 0 held before.
    _send(romfs_maker.mimi_image("v5"))
    assert mimi_slot.load()["previous"] == ""
    with open(seam.real_path("/lib/mimi/build.txt")) as f:
        assert f.read() == "v5\n"
    assert "no previous" in str(support.raises(ValueError, ota.rollback, False))
    sys.path.remove("/ota1")


def test_a_trial_version_that_cannot_start_goes_back_at_once():
    _fresh()
    ota.apply(_send(romfs_maker.mimi_image("v6")), reset=False)
    mimi_slot.select()
    resets = []
    reset = machine.reset
    try:
        machine.reset = lambda: resets.append(1)
        mimi_slot.failed(ImportError("no module named 'mimi.llm'"))
        assert resets == [1]
        st = mimi_slot.load()
        assert st["slot"] == 0 and "failed to start" in st["note"] and "mimi.llm" in st["note"]
        mimi_slot.failed(ImportError("again"))  # not on trial now: nothing, no reset
        assert resets == [1]
    finally:
        machine.reset = reset
        while "/ota1" in sys.path:
            sys.path.remove("/ota1")


def test_status_shows_the_running_version_and_the_one_before():
    _fresh()
    assert "version: " + ota.running_version() in commands.status()
    ota.apply(_send(romfs_maker.mimi_image("v7")), reset=False)
    mimi_slot.select()
    s = commands.status()
    assert "on trial (boot 1)" in s and "before: " + ota.running_version() in s
    sys.path.remove("/ota1")


class _RomStandIn(ota_flash.RomPartition):
    """A 64 KiB ROMFS partition in RAM, erased and written as flash is (erase to FF,
    writes only clear bits), so a slot written over old bytes without erasing shows."""

    def __init__(self):
        self.mem = bytearray(b"\x00" * 65536)
        self.view = memoryview(self.mem)
        self.size = len(self.mem)
        self.block = 4096
        self.erased = []

    def erase(self, offset, nbytes):
        self.erased.append((offset, nbytes))
        start = offset // 4096 * 4096
        end = (offset + nbytes + 4095) // 4096 * 4096
        self.mem[start:end] = b"\xff" * (end - start)

    def write(self, offset, buf):
        for i in range(len(buf)):
            self.mem[offset + i] &= buf[i]


def test_with_romfs_the_image_goes_into_the_other_half_of_the_partition():
    _fresh()
    rom = _RomStandIn()
    real = ota_flash.rom_partition
    try:
        ota_flash.rom_partition = lambda: rom
        img = romfs_maker.mimi_image("v8")
        assert _send(img, chunk=700) == "v8"
        assert rom.erased == [(32768, len(img))]
        assert bytes(rom.mem[32768:32768 + len(img)]) == img and rom.mem[0] == 0  # slot 0 untouched
        too_big = ota_image.Upload
        assert "holds 32768" in str(support.raises(ValueError, too_big, 32769, "a" * 64))
        # A chunk that lands wrong in flash is caught by the hash of what was written.
        u = ota_image.Upload(len(img), _hex(img))
        u.write(img[:100])
        rom.mem[32768 + 50] = 0  # a bit flipped on its way into flash
        u.write(img[100:])
        assert "SHA-256 mismatch" in str(support.raises(ValueError, u.finish))
        u.abort()
    finally:
        ota_flash.rom_partition = real


def test_slot_offsets_are_block_aligned_halves():
    assert mimi_slot.slot_offset(0, 524288) == 0
    assert mimi_slot.slot_offset(1, 524288) == 262144
    assert mimi_slot.slot_offset(1, 65536 + 4096) == 32768  # the odd block goes unused
