"""``tools/flash.sh --host HOST update`` against the update routes on a real microdot
server (127.0.0.1): it builds this checkout's image when given none, sends it with its
SHA-256 and the password, waits for the board to run it and prints the version; a
wrong password and a board that went back end with their own exit status and words."""
import os
import subprocess
import sys

import pytest
import romfs_maker
import support
from ota_http import PASSWORD, UpdateServer

import mimi_slot
from host_sim import hostenv, romfs
from mimi import ota

FLASH_SH = os.path.join(hostenv.ROOT, "tools", "flash.sh")


def _flash(server, *args, password=PASSWORD):
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop("MIMI_WEB_PASSWORD", None)
    pw = ["--password", password] if password else []
    return subprocess.run(["bash", FLASH_SH, "--host", "127.0.0.1:%d" % server.port] + pw + ["update"] + list(args),
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def board(monkeypatch):
    """A board that 'restarts' into what it was sent (``rollback``: or goes back)."""
    support.fresh_flash()
    mimi_slot.save(None)
    before = ota.running_version()
    runs = [before]
    mode = {"rollback": False}

    def apply(version):
        st = ota.apply(version, reset=False)
        if mode["rollback"]:
            mimi_slot.save(mimi_slot.rolled_back(st, "2 boots without running healthy"))
        else:
            runs.append(version)

    monkeypatch.setattr(ota, "running_version", lambda: runs[-1])
    s = UpdateServer(apply=apply)
    s.before, s.mode = before, mode
    yield s
    s.stop()


def test_update_builds_sends_and_waits_for_the_new_version(board):
    p = _flash(board)
    assert p.returncode == 0, p.stdout + p.stderr
    version = romfs.describe()
    assert "Built this checkout's image" in p.stdout and "version %s" % version in p.stdout
    assert "The board took %s and restarts into it." % version in p.stdout
    assert "Running %s (before: %s), on trial" % (version, board.before) in p.stdout


def test_a_refusal_and_a_rollback_are_reported(board, tmp_path):
    img = tmp_path / "mimi.romfs"
    img.write_bytes(romfs_maker.mimi_image("v-cli-2", pad=30000))
    p = _flash(board, str(img), password="wrong-pass")
    assert p.returncode == 2 and "refused: 401 not authorized" in p.stderr
    p = _flash(board, str(img), password="")
    assert p.returncode == 2 and "no web password" in p.stderr
    board.mode["rollback"] = True
    p = _flash(board, str(img))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "rolled back from v-cli-2: 2 boots without running healthy" in p.stdout
    p = _flash(board, "--firmware", str(img))
    assert p.returncode == 2 and "no OTA app slots" in p.stderr
