"""``python -m host_sim console``: a terminal on the virtual board's REPL (mpremote's repl
fails on socket:// ports), and ``tools/flash.sh --port socket://... repl`` using it."""
import os
import select
import subprocess
import sys
import termios
import time

from vbclient import vboard  # noqa: F401 - the fixture

from host_sim import console, hostenv

ROOT = hostenv.ROOT


def _run(cmd, stdin_text):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               PYTHON=sys.executable)
    return subprocess.run(cmd, input=stdin_text, capture_output=True, text=True, cwd=ROOT, timeout=30, env=env)


def test_piped_lines_run_on_the_board_and_the_console_quits_when_it_is_quiet(vboard):
    p = _run([sys.executable, "-m", "host_sim", "console", "--port", vboard.port], "x = 6 * 7\nprint('answer', x)\n")
    assert p.returncode == 0, p.stderr
    assert "answer 42" in p.stdout, p.stdout


def test_flash_sh_repl_on_a_socket_port_uses_the_console(vboard):
    p = _run(["bash", os.path.join(ROOT, "tools", "flash.sh"), "--port", vboard.port, "repl"],
             "import sys\nprint(sys.implementation.name, 'here')\n")
    assert p.returncode == 0, p.stderr
    assert "micropython here" in p.stdout and "Traceback" not in p.stderr, p.stdout + p.stderr


def _read_until(fd, text, timeout_s=20):
    out = b""
    deadline = time.time() + timeout_s
    while time.time() < deadline and text not in out:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


def test_on_a_terminal_keys_go_raw_and_ctrl_bracket_quits_restoring_the_terminal(vboard):
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "console", "--port", vboard.port], cwd=ROOT,
                         stdin=slave, stdout=slave, stderr=slave)
    try:
        assert b"Ctrl-] quits" in _read_until(master, b"Ctrl-] quits")
        assert not termios.tcgetattr(slave)[3] & termios.ECHO  # raw: the board echoes, not the tty
        os.write(master, b"print(6 * 7)\r")
        assert b"\n42" in _read_until(master, b"\n42")
        os.write(master, b"\x03")  # Ctrl-C goes to the board (a KeyboardInterrupt there), not to us
        time.sleep(0.3)
        assert p.poll() is None
        os.write(master, b"\x1d")  # Ctrl-]
        assert p.wait(10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert termios.tcgetattr(slave) == before
    os.close(master)
    os.close(slave)


def test_multi_line_output_ends_each_line_with_cr_lf_as_a_board_does(vboard):
    # The console's terminal is raw (no \n -> \r\n there): a bare \n would be a staircase.
    master, slave = os.openpty()
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "console", "--port", vboard.port], cwd=ROOT,
                         stdin=slave, stdout=slave, stderr=slave)
    try:
        assert b"Ctrl-] quits" in _read_until(master, b"Ctrl-] quits")
        os.write(master, b"print('one\\ntwo\\nthree')\r")
        out = _read_until(master, b"three\r\n>>> ")
        os.write(master, b"\x1d")
        assert p.wait(10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        os.close(slave)
    assert b"one\r\ntwo\r\nthree\r\n>>> " in out, out
    assert b"\n" not in out.replace(b"\r\n", b""), out  # no bare \n anywhere, the banner's included


def test_cooked_turns_bare_newlines_into_cr_lf_across_chunks():
    from host_sim.vboard import cooked

    assert cooked(b"a\nb\r\nc\n") == b"a\r\nb\r\nc\r\n"
    # A \r\n split between two reads stays one line end.
    assert cooked(b"x\r") + cooked(b"\ny", after_cr=True) == b"x\r\ny"
    assert cooked(b"\ny") == b"\r\ny"


def test_a_bad_or_closed_port_is_a_clear_error(capsys):
    assert console.run("/dev/ttyACM0") == 2
    assert "mpremote connect /dev/ttyACM0 repl" in capsys.readouterr().err
    assert console.run("socket://127.0.0.1:9") == 2
    assert "console:" in capsys.readouterr().err
