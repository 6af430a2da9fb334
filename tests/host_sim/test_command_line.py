"""``python -m host_sim``'s command line: a bad argument is one line and exit status 2,
never a traceback; every --help says what its command does."""
import subprocess
import sys

import pytest

from host_sim import __main__ as cli, hostenv


@pytest.mark.parametrize("args,says", [
    (["vboard", "--flash", "x", "--port", "99999"], "a TCP port from 1 to 65535"),
    (["vboard", "--flash", "x", "--port", "seven"], "a TCP port"),
    (["vboard", "--flash", "x", "--heap", "banana"], "a heap size such as 256K"),
    (["vboard", "--flash", "x", "--romfs-kb", "3"], "a multiple of 4 KiB"),
    (["vboard"], "--flash"),
    (["run", "--heap", "banana"], "a heap size such as 256K"),
    (["run", "--heap", "12K"], "at least 64K"),
    (["run", "--runtime", "pypy"], "invalid choice"),
    (["bench", "--heaps", "256K,lots"], "'lots': a heap size"),
    (["bench", "--app", "4k"], "comma-separated sizes in bytes"),
    (["bench", "--turns", "0"], "1 or more"),
    (["bench", "--soak", "-1"], "0 or more"),
    (["frobnicate"], "invalid choice"),
])
def test_a_bad_argument_is_one_line_and_status_2(args, says, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.count("\n") == 1 and says in err and "--help shows the options" in err, err


def test_in_a_process_too_no_traceback():
    p = subprocess.run([sys.executable, "-m", "host_sim", "vboard", "--flash", "/tmp/x", "--port", "99999"],
                       capture_output=True, text=True, cwd=hostenv.ROOT, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr


def _help(*args, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(list(args) + ["--help"])
    assert e.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_every_help_says_what_its_command_does(capsys):
    top = _help(capsys=capsys)
    assert "With no command it starts the offline chat" in top
    for var in ("MIMI_TG_TOKEN", "MIMI_API_KEY", "MIMI_PROVIDER", "MIMI_ALLOWED_CHATS", "MIMI_TZ",
                "MIMI_MICROPYTHON", "MIMI_PORT"):
        assert var in top, var
    assert "python3 -m host_sim alone does the same" in _help("chat", capsys=capsys)
    run = _help("run", capsys=capsys)
    assert "default: %s" % cli.FLASH_DEFAULT in run and "MIMI_TG_TOKEN" in run and "cli.pair()" in run
    assert "a new temporary one, deleted at exit" in _help("chat", capsys=capsys)
    assert "tools/flash.sh --port socket://127.0.0.1:PORT" in _help("vboard", capsys=capsys)
    assert "Ctrl-] or Ctrl-X quits" in _help("console", capsys=capsys)
    assert "MIMI_MICROPYTHON" in _help("bench", capsys=capsys)
