"""On a host the flash is a folder, which may hold symbolic links (LittleFS on the board has
none): a link under /data must not lead a tool to nvs.json or anywhere else outside it.
CPython only: the unix port's ``os`` cannot see links (``mimi.seam.real_path``)."""
import os
import shutil

import pytest
import support

from mimi import seam
from mimi.storage import fs


@pytest.fixture
def flash():
    root = support.fresh_flash()
    with open(root + "/nvs.json", "w") as f:
        f.write('{"mimi": {"tg_token": ["blob", "secret"]}}')
    support.write(root + "/data/memory/MEMORY.md", "# Memory\n- the cat is Miso\n")
    yield root
    shutil.rmtree(root)  # links are removed, not followed


def test_a_link_to_a_file_outside_data_is_refused(flash):
    os.symlink("../nvs.json", flash + "/data/leak.md")
    os.symlink(flash + "/nvs.json", flash + "/data/memory/abs.md")
    for p in ("/data/leak.md", "/data/memory/abs.md"):
        with pytest.raises(OSError):
            fs.read_text(p, 1000)
    with pytest.raises(OSError) as e:
        seam.real_path("/data/leak.md")
    assert "outside /data" in str(e.value)


def test_a_linked_folder_outside_data_can_be_neither_read_nor_written(flash):
    os.mkdir(flash + "/elsewhere")
    os.symlink(flash + "/elsewhere", flash + "/data/notes")
    os.symlink(flash, flash + "/data/root")
    with pytest.raises(OSError):
        fs.write("/data/notes/x.md", b"escaped")
    with pytest.raises(OSError):
        fs.listdir("/data/root")
    with pytest.raises(OSError):
        fs.read_text("/data/root/nvs.json", 1000)
    assert os.listdir(flash + "/elsewhere") == []


def test_links_that_stay_inside_data_and_a_linked_data_folder_work(flash, tmp_path):
    os.symlink("memory/MEMORY.md", flash + "/data/mem.md")
    assert "Miso" in fs.read_text("/data/mem.md", 1000)[0]
    # The flash's data folder itself may be a link (a board folder kept on another disk).
    real_data = tmp_path / "data"
    os.rename(flash + "/data", str(real_data))
    os.symlink(str(real_data), flash + "/data")
    assert "Miso" in fs.read_text("/data/memory/MEMORY.md", 1000)[0]
    fs.write("/data/memory/new.md", b"ok")
    assert (real_data / "memory" / "new.md").read_bytes() == b"ok"
    # Paths outside /data are not this check's business (boot files at the flash root).
    assert seam.real_path("/safemode") == flash + "/safemode"
