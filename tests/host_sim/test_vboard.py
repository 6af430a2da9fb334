"""The virtual board: the micropython REPL on a TCP port, its root on the flash folder."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from host_sim import hostenv

ROOT = hostenv.ROOT
MPREMOTE = os.path.join(os.path.dirname(sys.executable), "mpremote")


class Board:
    def __init__(self, flash, boot=True):
        cmd = [sys.executable, "-u", "-m", "host_sim", "vboard", "--flash", str(flash), "--port", "0"]
        if not boot:
            cmd.append("--no-boot")
        self.flash = flash
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.out = b""
        line = self.proc.stdout.readline()
        self.out += line
        m = re.search(rb"socket://127\.0\.0\.1:(\d+)", line)
        assert m, line
        self.url = "socket://127.0.0.1:%d" % int(m.group(1))

    def mpremote(self, *args, resume=True, timeout=30):
        cmd = [MPREMOTE, "connect", self.url] + (["resume"] if resume else []) + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            rest, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest, _ = self.proc.communicate()
        self.out += rest
        return self.proc.returncode


@pytest.fixture
def board(tmp_path):
    b = Board(tmp_path)
    yield b
    b.stop()


def test_mpremote_sees_and_writes_the_flash_folder_not_the_host_root(board, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "hello.txt").write_text("hi\n")
    src = tmp_path.parent / "upload.py"
    src.write_text("X = 42\n")
    out = board.mpremote("fs", "ls", ":/")
    assert "hello.txt" in out and "lib/" in out
    assert "usr/" not in out and "etc/" not in out
    board.mpremote("fs", "cp", str(src), ":lib/upload.py", "+", "fs", "mkdir", ":data")
    assert (tmp_path / "lib" / "upload.py").read_text() == "X = 42\n"
    assert (tmp_path / "data").is_dir()
    # /lib is on sys.path, as on the ESP32 port; the file reads back through the board.
    assert board.mpremote("exec", "import upload; print(upload.X, open('/hello.txt').read().strip())").strip() == "42 hi"


def test_resume_keeps_the_running_board_and_a_soft_reset_starts_a_fresh_one(board):
    board.mpremote("exec", "import machine; machine.mimi_mark = 7")
    assert board.mpremote("exec", "import machine; print(getattr(machine, 'mimi_mark', None))").strip() == "7"
    # Without resume mpremote soft-resets first: the mark is gone, and it still works.
    assert board.mpremote("exec", "import machine; print(getattr(machine, 'mimi_mark', None))", resume=False).strip() == "None"


def test_settings_written_through_the_repl_land_in_the_flash_folder(board, tmp_path):
    board.mpremote("exec", "import esp32; n = esp32.NVS('mimi'); n.set_blob('model', b'claude-test'); n.commit()")
    import json

    data = json.load(open(tmp_path / "nvs.json"))
    assert bytes.fromhex(data["mimi"]["model"][1]) == b"claude-test"


def test_boot_runs_boot_and_main_and_a_reset_powers_on_again(tmp_path):
    (tmp_path / "boot.py").write_text("import machine\nmachine.booted = getattr(machine, 'booted', 0) + 1\nprint('BOOT-RAN')\n")
    (tmp_path / "main.py").write_text(
        "import _thread, time\n"
        "def later():\n"
        "    time.sleep_ms(300)\n"
        "    import machine\n"
        "    if open('/count').read() == '1':\n"
        "        machine.reset()\n"
        "f = open('/count', 'a'); f.write('1'); f.close()\n"
        "_thread.start_new_thread(later, ())\n"
        "print('MAIN-RAN')\n")
    (tmp_path / "count").write_text("")
    b = Board(tmp_path)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and (tmp_path / "count").read_text() != "11":
            time.sleep(0.1)
        # The first power-on ran main.py, whose thread asked for a reset; the board ran
        # boot.py and main.py again.
        assert (tmp_path / "count").read_text() == "11"
        assert b.mpremote("exec", "import machine; print(machine.booted)").strip() == "1"
    finally:
        b.stop()
    assert b"BOOT-RAN" in b.out and b"MAIN-RAN" in b.out
    assert b"the board reset" in b.out
