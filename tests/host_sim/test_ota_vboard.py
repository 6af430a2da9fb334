"""Updates over WiFi on the virtual board (the micropython runtime, a 1 MiB ROMFS
partition), end to end on the board's side: the image goes through ``mimi.ota_image``
into the other half of the partition (``vfs.rom_ioctl``), ``mimi.ota.apply`` resets the
board, ``/boot.py`` (``mimi_slot``) mounts the new half, the app reaches healthy and
confirms it, and it stays over power cycles; then an image whose app never gets healthy
(it resets the board at every start) is rolled back by boot by itself after its trial
boots, and ``/status`` says so. (The HTTP route is tested with a real microdot server
and a real browser on CPython: tests/ota/test_update_http.py, tests/web/; the unix port
here has no asyncio for microdot.)

The image starts as ``tools/flash.sh deploy`` leaves a board, without the minute of
mpremote: the first image in ``romfs.bin``, boot.py, main.py and mimi_slot.py in /.
The app's healthy time is cut to 3 s by a line before main.py (``BOOT_HEALTHY_MS``).
"""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest
from vbclient import VBoard

from host_sim import hostenv, romfs

ROOT = hostenv.ROOT
MPREMOTE = os.path.join(os.path.dirname(sys.executable), "mpremote")


def _mp(board, code, timeout=60):
    p = subprocess.run([MPREMOTE, "connect", board.port, "resume", "exec", code], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def _upload(board, flash, image):
    """Hand ``image`` (bytes) to the board's receiver in 4 KiB chunks, as the web route
    does with the HTTP body, then apply it (the board resets)."""
    (flash / "incoming.bin").write_bytes(image)
    out = _mp(board, """
from mimi import ota, ota_image
u = ota_image.Upload(%d, "%s")
with open("/incoming.bin", "rb") as f:
    while True:
        b = f.read(4096)
        if not b:
            break
        u.write(b)
v = u.finish()
print("@@took", v)
ota.apply(v)
""" % (len(image), hashlib.sha256(image).hexdigest()))
    os.remove(flash / "incoming.bin")
    return out


def _status(board):
    out = _mp(board, "from mimi import commands\nprint('@@' + commands.status().split('version: ')[1])")
    return out.split("@@", 1)[1].strip()


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Three images: A (deployed), B (good), C (its app resets the board at each start)."""
    d = tmp_path_factory.mktemp("images")
    out = {"a": romfs.build(version="e2e-a"), "b": romfs.build(version="e2e-b")}
    broken = d / "broken" / "mimi"
    shutil.copytree(os.path.join(hostenv.FIRMWARE, "mimi"), broken,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with open(broken / "app.py", "a") as f:
        f.write("\n\ndef init(agent_factory=None):  # the broken update: never gets healthy\n"
                "    import machine\n\n    machine.reset()\n")
    out["c"] = romfs.build(top=str(broken), version="e2e-c")
    return out


def test_an_update_runs_is_confirmed_and_a_bad_one_rolls_back(tmp_path, images):
    flash = tmp_path / "board"
    (flash / "data").mkdir(parents=True)
    (flash / "romfs.bin").write_bytes(images["a"])
    for name in ("boot.py", "mimi_slot.py"):
        shutil.copy(os.path.join(hostenv.FIRMWARE, name), flash / name)
    with open(os.path.join(hostenv.FIRMWARE, "main.py")) as f:
        (flash / "main.py").write_text("from mimi import config\nconfig.BOOT_HEALTHY_MS = 3000\n" + f.read())
    board = VBoard(flash)
    try:
        assert board.wait_for(b"[app] started", 30), board.read()
        assert _status(board) == "e2e-a"

        out = _upload(board, flash, images["b"])
        assert "@@took e2e-b" in out and "receiving %d bytes into slot 1" % len(images["b"]) in out
        assert board.wait_for(b"e2e-b confirmed", 40), board.read()
        # Confirmed, it stays across power cycles (each one a new process: a cold boot).
        assert _status(board) == "e2e-b (before: e2e-a)"
        rom = (flash / "romfs.bin").read_bytes()
        half = 512 * 1024  # the other half of the 1 MiB partition
        assert rom[:len(images["a"])] == images["a"] and rom[half:half + len(images["b"])] == images["b"]
        for _ in range(2):
            n = board.read().count(b"[app] started")
            _mp(board, "import machine\nmachine.reset()")
            assert board.wait_for(b"[app] started", 30) and board.read().count(b"[app] started") > n
        assert _status(board) == "e2e-b (before: e2e-a)"

        # C goes into slot 0 (A's half); its app resets the board at every start.
        out = _upload(board, flash, images["c"])
        assert "@@took e2e-c" in out and "receiving %d bytes into slot 0" % len(images["c"]) in out
        assert board.wait_for(b"[ota] rolled back from e2e-c: 2 boots without running healthy", 60), board.read()
        assert board.wait_for(b"e2e-b", 5)
        assert _status(board) == "e2e-b (before: e2e-c); rolled back from e2e-c: 2 boots without running healthy"
    finally:
        board.stop()


def test_without_romfs_the_update_is_unpacked_into_ota1_and_imported_from_there(tmp_path, images):
    # A MicroPython without ROMFS (the micropython.org builds): the package deployed as
    # files in /lib/mimi; the update unpacked into /ota1/mimi and put first on sys.path.
    flash = tmp_path / "board"
    (flash / "data").mkdir(parents=True)
    shutil.copytree(os.path.join(hostenv.FIRMWARE, "mimi"), flash / "lib" / "mimi",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (flash / "lib" / "mimi" / "build.txt").write_text("e2e-files-a\n")
    for name in ("boot.py", "main.py", "mimi_slot.py"):
        shutil.copy(os.path.join(hostenv.FIRMWARE, name), flash / name)
    board = VBoard(flash, "--romfs-kb", "0")
    try:
        assert board.wait_for(b"[app] started", 30), board.read()
        out = _upload(board, flash, images["b"])
        assert "@@took e2e-b" in out and "receiving %d bytes into slot 1" % len(images["b"]) in out
        assert board.wait_for(b"[app] started", 30)
        assert (flash / "ota1" / "mimi" / "app.mpy").exists() and not (flash / "ota" / "incoming.img").exists()
        out = _mp(board, "import mimi\nprint('@@', mimi.__file__)")
        assert "@@ /ota1/mimi/__init__.mpy" in out, out
        assert _status(board) == "e2e-b (before: e2e-files-a), on trial (boot 1)"
    finally:
        board.stop()
