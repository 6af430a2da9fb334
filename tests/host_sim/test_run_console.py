"""``python -m host_sim run`` has a console, as a board's REPL: cli.pair(), cli.allow(),
cli.status() typed on the desktop run on the board while the assistant runs."""
import os
import select
import signal
import subprocess
import sys
import termios
import time

import pytest

from host_sim import hostenv

ROOT = hostenv.ROOT
RUNTIMES = pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])


@RUNTIMES
def test_piped_console_lines_run_on_the_board_in_order(runtime, tmp_path):
    lines = ["cli.pair()", "cli.allow(4242)", "config.get('allowed_chats')", "for i in range(2):",
             "    print('block', i)", "", "1/0", "cli.status()"]
    p = subprocess.run([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path), "--runtime", runtime,
                        "--console"], input="".join(s + "\n" for s in lines), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, cwd=ROOT, timeout=90)
    out = p.stdout
    assert p.returncode == 0, out
    # Each entry's answer comes before the next entry is shown (the board acknowledged it).
    # (The app's log lines may come between: its threads run meanwhile, as on a board.)
    answer = out.split(">>> cli.pair()\n", 1)[1].split(">>> ")[0]
    assert answer.split("pairing code: ", 1)[1][:6].isdigit(), out
    assert "chat 4242 is allowed, and is the owner" in out.split(">>> cli.allow(4242)\n", 1)[1].split(">>> ")[0]
    assert ">>> config.get('allowed_chats')\n'4242'\n" in out
    assert "block 0\nblock 1\n" in out
    assert "ZeroDivisionError" in out.split(">>> 1/0\n", 1)[1].split(">>> ")[0]  # shown, and the console goes on
    status = out.split(">>> cli.status()\n", 1)[1]
    assert "Telegram: no bot token" in status and "uptime: " in status
    assert out.rstrip().endswith("[app] stopped"), out  # the end of input stopped the board cleanly
    # What the console did is on the board: the allowed chat is stored.
    assert b"4242".hex() in (tmp_path / "nvs.json").read_text()


def _read_until(fd, marks, timeout_s=40):
    out = b""
    deadline = time.time() + timeout_s
    while time.time() < deadline and not all(m in out for m in marks):
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            out += data
    return out


@RUNTIMES
def test_on_a_terminal_the_console_prompts_and_ctrl_d_stops_the_board(runtime, tmp_path):
    import pty

    pid, master = pty.fork()
    if pid == 0:  # the child: session leader with the pty as its terminal
        try:
            os.chdir(ROOT)
            os.execv(sys.executable, [sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path),
                                      "--runtime", runtime])
        finally:
            os._exit(127)
    status = None
    try:
        before = termios.tcgetattr(master)
        out = _read_until(master, [b"[app] started", b">>> "])
        assert b"Console: Python on the board" in out and b">>> " in out, out
        os.write(master, b"cli.allow(777)\r")
        out += _read_until(master, [b"chat 777 is allowed", b"\r\n>>> "])  # keys after the prompt, as a person
        os.write(master, b"\x1b[A\r")  # the up arrow brings the last line back (history)
        out += _read_until(master, [b"chat 777 is already allowed", b"\r\n>>> "])
        os.write(master, b"\x04")  # Ctrl-D
        out += _read_until(master, [b"[app] stopped"])
        _, status = os.waitpid(pid, 0)
        after = termios.tcgetattr(master)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    assert os.waitstatus_to_exitcode(status) == 0, out
    assert b"chat 777 is already allowed" in out and b"Traceback" not in out, out
    assert after[3] == before[3]  # the terminal's modes as they were


def test_a_piped_line_that_sets_a_secret_is_shown_without_it():
    from host_sim import repl

    assert repl.shown("cli.set_wifi('home', 'FAKE pass')") == "cli.set_wifi(****)"
    assert repl.shown("cli.set_api_key( 'sk-FAKE-123' )") == "cli.set_api_key(****)"
    assert repl.shown("cli.status()") == "cli.status()"
