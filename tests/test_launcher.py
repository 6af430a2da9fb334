"""``python -m host_sim run`` boots the firmware on both runtimes and stops on SIGINT."""
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def test_run_boots_then_stops_cleanly_on_sigint(runtime, tmp_path):
    (tmp_path / "data" / "config").mkdir(parents=True)
    (tmp_path / "data" / "config" / "SOUL.md").write_text("mine, keep me\n")
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path), "--runtime", runtime],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            line = p.stdout.readline()
            out += line
            if "[app] started" in line:
                break
        assert "[app] started" in out, out
        p.send_signal(signal.SIGINT)
        rest, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out + rest
    # Existing files are never overwritten by the seed.
    assert (tmp_path / "data" / "config" / "SOUL.md").read_text() == "mine, keep me\n"
