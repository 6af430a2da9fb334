"""The launcher stops the board on SIGINT even when it was started with SIGINT ignored
(what a non-interactive shell does to a background job, and what a board inherits), and a
Ctrl-C typed in a terminal stops it once, without a traceback."""
import os
import select
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


def _run_on_a_terminal(args, flash, keys_after_start, settle_s=0.3, timeout_s=40):
    """Run ``python -m host_sim ARGS`` on a new pseudo-terminal (its controlling terminal,
    so ^C makes the line discipline signal the whole foreground process group), type
    ``keys_after_start`` once the app started; return (exit status, output)."""
    import pty

    pid, master = pty.fork()
    if pid == 0:  # the child: session leader with the pty as its terminal
        try:
            os.chdir(hostenv.ROOT)
            os.execv(sys.executable, [sys.executable, "-m", "host_sim"] + args + ["--flash", str(flash)])
        finally:
            os._exit(127)
    out = b""
    deadline = time.time() + timeout_s
    sent = False
    status = None
    try:
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    data = os.read(master, 4096)
                except OSError:
                    data = b""  # EIO: every process on the terminal is gone
                out += data
                if not data:
                    break
            if not sent and b"[app] started" in out:
                time.sleep(settle_s)
                for k in keys_after_start:
                    os.write(master, k)
                    time.sleep(0.05)
                sent = True
        _, status = os.waitpid(pid, 0) if sent else (None, None)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    return (os.waitstatus_to_exitcode(status) if status is not None else None), out.decode(errors="replace")


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
@pytest.mark.parametrize("presses", [1, 3])
def test_ctrl_c_in_a_terminal_stops_the_board_once_and_cleanly(runtime, presses, tmp_path):
    rc, out = _run_on_a_terminal(["run", "--runtime", runtime], tmp_path, [b"\x03"] * presses)
    assert rc == 0, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert "[app] stopped" in out, out
