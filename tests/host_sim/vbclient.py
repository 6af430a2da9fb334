"""A virtual board for host-side tests: ``python -m host_sim vboard`` on a free port.

Not a test module (no ``test_`` prefix): test modules of this folder import it.
"""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from host_sim import hostenv

ROOT = hostenv.ROOT


class VBoard:
    def __init__(self, flash, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-u", "-m", "host_sim", "vboard", "--flash", str(flash),
                                      "--port", "0"] + list(args), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, **(env or {})))
        line = self.proc.stdout.readline()
        m = re.search(rb"socket://127\.0\.0\.1:(\d+) ", line)
        if not m:
            self.stop()
            raise AssertionError(line)
        self.port = "socket://127.0.0.1:%s" % m.group(1).decode()
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.out = b""

    def read(self):
        try:
            self.out += self.proc.stdout.read() or b""
        except (BlockingIOError, TypeError):
            pass
        return self.out

    def wait_for(self, text, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.read():
                return True
            time.sleep(0.1)
        return False

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def vboard(tmp_path):
    flash = tmp_path / "board"
    flash.mkdir()
    b = VBoard(flash)
    b.flash = flash
    yield b
    b.stop()


@pytest.fixture
def vboard_stock(tmp_path):
    """A virtual board whose MicroPython has no ROMFS (no vfs.rom_ioctl), as the micropython.org builds."""
    flash = tmp_path / "board"
    flash.mkdir()
    b = VBoard(flash, "--romfs-kb", "0")
    b.flash = flash
    yield b
    b.stop()
