"""The launcher stops the board on SIGINT even when it was started with SIGINT ignored
(what a non-interactive shell does to a background job, and what a board inherits)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from host_sim import hostenv


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def test_sigint_stops_a_board_started_with_sigint_ignored(runtime, tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path), "--runtime", runtime],
                         cwd=hostenv.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    out = ""
    try:
        deadline = time.time() + 30
        while time.time() < deadline and "[app] started" not in out:
            out += p.stdout.readline()
        assert "[app] started" in out, out
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        rest, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the launcher and the board it started
            p.wait()
    assert p.returncode == 0, out + rest
    assert "Traceback" not in rest
