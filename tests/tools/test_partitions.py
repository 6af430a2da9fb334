"""tools/partitions.py: ESP-IDF partition tables read, written and given a ROMFS partition (host only)."""
import hashlib
import os
import subprocess
import sys

import pytest

from esp_image import ROOT, STOCK_8MIB, STOCK_8MIB_3M_APP, STOCK_V128, merged_image, partitions

P = partitions
CLI = [sys.executable, "tools/partitions.py"]


def test_pack_lays_out_entries_md5_and_padding_as_esp_idf_does():
    table = P.pack(STOCK_8MIB)
    assert len(table) == 0xC00
    # The first entry, byte by byte (gen_esp32part: <2sBBLL16sL).
    assert table[:32] == (b"\xAA\x50\x01\x02" + (0x9000).to_bytes(4, "little") + (0x6000).to_bytes(4, "little")
                          + b"nvs" + b"\0" * 13 + b"\0" * 4)
    body = table[:4 * 32]
    assert table[128:144] == b"\xEB\xEB" + b"\xFF" * 14
    assert table[144:160] == hashlib.md5(body).digest()
    assert table[160:] == b"\xFF" * (0xC00 - 160)


def test_parse_reads_back_what_pack_wrote():
    assert P.parse(P.pack(STOCK_8MIB)) == STOCK_8MIB
    odd = [P.Entry("x" * 16, 0x40, 0x99, 0x123000, 0x1000, 1)]  # 16-byte label, custom type, encrypted flag
    assert P.parse(P.pack(odd)) == odd


def test_parse_checks_magic_and_md5():
    table = bytearray(P.pack(STOCK_8MIB))
    bad_md5 = bytearray(table)
    bad_md5[40] ^= 0x01  # the second entry's offset: the digest no longer matches
    with pytest.raises(ValueError, match="MD5 mismatch"):
        P.parse(bytes(bad_md5))
    no_magic = bytearray(table)
    no_magic[0:2] = b"\x12\x34"
    with pytest.raises(ValueError, match="magic AA 50"):
        P.parse(bytes(no_magic))
    no_md5 = table[:128] + b"\xFF" * (0xC00 - 128)
    with pytest.raises(ValueError, match="no MD5 entry"):
        P.parse(no_md5)


def test_with_romfs_carves_512k_from_the_start_of_vfs():
    new = P.with_romfs(STOCK_8MIB)
    assert new[:3] == STOCK_8MIB[:3]
    assert new[3] == P.Entry("romfs", 1, 0x8F, 0x200000, 0x80000, 0)
    assert new[4] == P.Entry("vfs", 1, 0x81, 0x280000, 0x580000, 0)
    assert len(new) == 5
    assert P.with_romfs(new) == new  # idempotent
    assert P.with_romfs(STOCK_8MIB, 0x10000)[4].offset == 0x210000  # the size is honoured


def test_with_romfs_on_the_table_with_a_3mib_app():
    new = P.with_romfs(STOCK_8MIB_3M_APP)
    assert new[:3] == STOCK_8MIB_3M_APP[:3]
    assert [(e.label, e.offset, e.size) for e in new[3:]] == [("romfs", 0x310000, 0x80000), ("vfs", 0x390000, 0x470000)]


def test_with_romfs_takes_ffat_when_there_is_no_vfs():
    uf2 = STOCK_8MIB[:3] + [STOCK_8MIB[3]._replace(label="ffat")]
    new = P.with_romfs(uf2)
    assert [(e.label, e.offset) for e in new[3:]] == [("romfs", 0x200000), ("ffat", 0x280000)]


def test_with_romfs_on_a_table_without_vfs_goes_after_the_last_partition():
    # MicroPython 1.26+ (v1.28.0's partitions-4MiBplus.csv): no vfs entry; the port makes
    # vfs at boot from the end of the last partition, so the romfs goes there.
    new = P.with_romfs(STOCK_V128, flash_bytes=0x400000)
    assert new[:3] == STOCK_V128
    assert new[3:] == [P.Entry("romfs", 1, 0x8F, 0x200000, 0x80000, 0)]
    assert P.with_romfs(new, flash_bytes=0x400000) == new  # idempotent
    # An app that ends off a sector boundary: the romfs starts at the next one.
    odd = STOCK_V128[:2] + [STOCK_V128[2]._replace(size=0x1F0800)]
    assert P.with_romfs(odd, 0x10000, flash_bytes=0x400000)[3].offset == 0x201000
    # 4 MiB flash keeps 1.5 MiB of file system with 512 KiB of romfs; 2 MiB would keep none.
    with pytest.raises(ValueError, match="leave the file system 0 KiB of this 2048 KiB flash"):
        P.with_romfs(STOCK_V128, flash_bytes=0x200000)
    with pytest.raises(ValueError, match="less than 1024 KiB"):
        P.with_romfs(STOCK_V128, 0x200000, flash_bytes=0x400000)
    with pytest.raises(ValueError, match="no flash size"):
        P.with_romfs(STOCK_V128)


def test_patch_image_places_the_romfs_of_a_1_26_table_by_the_header_s_flash_size():
    img = merged_image(STOCK_V128)  # header: 4 MB, as sdkconfig.base builds it
    assert P.flash_size(img) == 0x400000 and P.flash_size(merged_image(flash_code=3)) == 0x800000
    out = P.patch_image(img, P.ROMFS_BYTES)
    assert P.table_of(out) == P.with_romfs(STOCK_V128, flash_bytes=0x400000)
    assert out[:0x8000] == img[:0x8000] and out[0x8C00:] == img[0x8C00:]
    with pytest.raises(ValueError, match="less than 1024 KiB"):
        P.patch_image(img, 0x180000)  # 2.5 MiB + 1.5 MiB: nothing left on 4 MiB
    assert P.table_of(P.patch_image(merged_image(STOCK_V128, flash_code=3), 0x180000))[3].size == 0x180000


def test_cli_on_a_1_26_image_says_where_the_file_system_goes(tmp_path):
    src = tmp_path / "fw.bin"
    src.write_bytes(merged_image(STOCK_V128))
    p = subprocess.run(CLI + ["--show", str(src)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "makes the vfs file system at boot, from 0x200000 to the end of flash" in p.stdout, p.stdout
    p = subprocess.run(CLI + [str(src), "-o", str(tmp_path / "out.bin")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "romfs after the last partition" in p.stdout and "from 0x280000 to the end of flash" in p.stdout, p.stdout
    assert p.stdout.rstrip().endswith("romfs: offset 0x200000, size 0x80000 (512 KiB)")


@pytest.mark.parametrize("entries,size,msg", [
    (STOCK_8MIB[:3] + [STOCK_8MIB[3]._replace(size=0x170000)], P.ROMFS_BYTES, "less than 1024 KiB"),
    (STOCK_8MIB, 0x80001, "multiple of 4 KiB"),
    (STOCK_8MIB, 0, "multiple of 4 KiB"),
    (STOCK_8MIB[:3] + [STOCK_8MIB[3]._replace(type=0)], P.ROMFS_BYTES, "no flash size"),
])
def test_with_romfs_refuses(entries, size, msg):
    with pytest.raises(ValueError, match=msg):
        P.with_romfs(entries, size)


def test_with_romfs_leaves_a_filesystem_of_exactly_1mib():
    new = P.with_romfs(STOCK_8MIB[:3] + [STOCK_8MIB[3]._replace(size=0x180000)])
    assert new[4].size == 0x100000


def test_patch_image_changes_only_the_table():
    img = merged_image()
    out = P.patch_image(img, P.ROMFS_BYTES)
    assert len(out) == len(img)
    assert out[:0x8000] == img[:0x8000] and out[0x8C00:] == img[0x8C00:]
    assert P.parse(out[0x8000:0x8C00]) == P.with_romfs(STOCK_8MIB)
    assert P.patch_image(out, P.ROMFS_BYTES) == out


@pytest.mark.parametrize("img,msg", [
    (merged_image()[0x10000:], "no partition table at 0x8000"),  # the app alone: too short
    (merged_image()[0x10000:] * 4, "no valid partition table at 0x8000"),  # app bytes where the table would be
    (merged_image()[:0x8000] + b"\xFF" * 0x9000, "no valid partition table at 0x8000"),
])
def test_patch_image_refuses_an_image_without_a_table(img, msg):
    with pytest.raises(ValueError, match=msg):
        P.patch_image(img, P.ROMFS_BYTES)


def test_cli_prints_both_tables_and_writes_the_patched_image(tmp_path):
    src = tmp_path / "fw.bin"
    src.write_bytes(merged_image())
    p = subprocess.run(CLI + [str(src), "-o", str(tmp_path / "out.bin")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = [line.split()[0] for line in p.stdout.splitlines() if line.startswith(("vfs ", "romfs "))]
    assert rows == ["vfs", "romfs", "vfs"]  # the old table, then the new one
    assert "0x200000   0x600000" in p.stdout and "0x280000   0x580000" in p.stdout
    assert p.stdout.rstrip().endswith("romfs: offset 0x200000, size 0x80000 (512 KiB)")
    assert (tmp_path / "out.bin").read_bytes() == P.patch_image(src.read_bytes(), 0x80000)
    p = subprocess.run(CLI + [str(src), "--romfs-kb", "256"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and "size 0x40000 (256 KiB)" in p.stdout, p.stderr
    assert P.parse((tmp_path / "fw-romfs.bin").read_bytes()[0x8000:0x8C00])[4].offset == 0x240000


def test_cli_show_and_refusal(tmp_path):
    src = tmp_path / "fw.bin"
    src.write_bytes(merged_image())
    p = subprocess.run(CLI + ["--show", str(src)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and "romfs" not in p.stdout and "factory" in p.stdout, p.stderr
    assert not (tmp_path / "fw-romfs.bin").exists()
    app = tmp_path / "app.bin"
    app.write_bytes(merged_image()[0x10000:])
    p = subprocess.run(CLI + [str(app)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "no partition table at 0x8000" in p.stderr and p.stdout == ""


def test_pack_refuses_more_entries_than_fit_and_long_labels():
    many = [P.Entry("p%d" % i, 1, 0x81, 0x10000 * (i + 1), 0x1000, 0) for i in range(96)]
    assert len(P.parse(P.pack(many[:95]))) == 95
    with pytest.raises(ValueError, match="at most 95"):
        P.pack(many)
    with pytest.raises(ValueError, match="longer than 16"):
        P.pack([P.Entry("x" * 17, 1, 0x81, 0x10000, 0x1000, 0)])


# v1.28.0's ports/esp32/boards/sdkconfig.* files (git ls-tree v1.28.0 ports/esp32/boards):
# what a board's SDKCONFIG_DEFAULTS may name there (sdkconfig.usb went in 1.27).
_SDKCONFIGS_V128 = {"sdkconfig.240mhz", "sdkconfig.base", "sdkconfig.ble", "sdkconfig.c2", "sdkconfig.c6",
                    "sdkconfig.flash_2MiB", "sdkconfig.free_ram", "sdkconfig.p4", "sdkconfig.p4_wifi_c5",
                    "sdkconfig.p4_wifi_c6", "sdkconfig.p4_wifi_common", "sdkconfig.riscv", "sdkconfig.spiram",
                    "sdkconfig.spiram_oct", "sdkconfig.spiram_sx"}
_BOARD = os.path.join(ROOT, "boards", "MIMI_ESP32_S3_ROMFS")


def test_the_romfs_board_definition_has_the_table_flash_makes_from_the_stock_one():
    # boards/MIMI_ESP32_S3_ROMFS (a MicroPython built with ROMFS on) and tools/flash.sh
    # flash (the stock 1.26+ image, its table patched) must give a board the same partitions.
    rows = []
    with open(os.path.join(_BOARD, "partitions-romfs.csv")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                rows.append([c.strip() for c in line.split(",")])
    kinds = {"app": 0, "data": 1}
    subtypes = {"nvs": 0x02, "phy": 0x01, "factory": 0x00, "fat": 0x81}
    got = [(r[0], kinds[r[1]], subtypes.get(r[2]) if r[2] in subtypes else int(r[2], 16), int(r[3], 16),
            int(r[4], 16)) for r in rows]
    table = P.table_of(P.patch_image(merged_image(STOCK_V128), P.FLASH_ROMFS_BYTES))
    assert got == [(e.label, e.type, e.subtype, e.offset, e.size) for e in table]
    with open(os.path.join(_BOARD, "sdkconfig.board")) as f:
        assert 'CONFIG_PARTITION_TABLE_CUSTOM_FILENAME="boards/MIMI_ESP32_S3_ROMFS/partitions-romfs.csv"' in f.read()


def test_the_romfs_board_names_only_sdkconfig_files_v1_28_has():
    import re

    named = set()
    for name in ("mpconfigboard.cmake", "mpconfigvariant_SPIRAM_OCT.cmake"):
        with open(os.path.join(_BOARD, name)) as f:
            named |= set(re.findall(r"boards/(sdkconfig\.\w+)", f.read()))
    assert named and named <= _SDKCONFIGS_V128, named - _SDKCONFIGS_V128
    # The variant is a file (v1.28.0's CMakeLists.txt refuses a BOARD_VARIANT without
    # mpconfigvariant_<name>.cmake), as ESP32_GENERIC_S3's SPIRAM_OCT is.
    with open(os.path.join(_BOARD, "mpconfigvariant_SPIRAM_OCT.cmake")) as f:
        assert "boards/sdkconfig.spiram_oct" in f.read()


def test_romfs_support_is_read_from_the_firmware_s_interned_names(tmp_path):
    with_it, without = merged_image(), merged_image(romfs=False)
    assert P.supports_romfs(with_it) and not P.supports_romfs(without)
    src = tmp_path / "fw.bin"
    src.write_bytes(without)
    out = tmp_path / "out.bin"
    p = subprocess.run(CLI + [str(src), "--if-supported", "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 3 and "no ROMFS" in p.stdout and not out.exists(), p.stdout + p.stderr
    p = subprocess.run(CLI + ["--show", str(src)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and "ROMFS in this firmware: no" in p.stdout, p.stdout
    src.write_bytes(with_it)
    p = subprocess.run(CLI + [str(src), "--if-supported", "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and P.romfs_entry(P.table_of(out.read_bytes())) is not None, p.stdout + p.stderr
