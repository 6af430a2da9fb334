"""MIMI_MICROPYTHON: the simulator, the benchmarks and the tests run any micropython binary."""
import os
import subprocess
import sys

import pytest

from host_sim import hostenv

ROOT = hostenv.ROOT
# The team's 32-bit build, ../shared/tools/micropython32 beside the project (or a worktree's
# parent folders); the project's tests pass without it.
SHARED_32 = next((p for p in (os.path.join(ROOT, *[".."] * k, "shared", "tools", "micropython32") for k in (1, 2, 3))
                  if os.path.exists(p)), "")


def _default_exe(monkeypatch):
    monkeypatch.delenv(hostenv.MICROPYTHON_VAR, raising=False)
    exe = hostenv.micropython_exe()
    assert exe, hostenv.micropython_missing()
    return exe


def _wrapper(tmp_path, real):
    """A micropython that notes each start in a file, then is the real one."""
    log = tmp_path / "started.log"
    w = tmp_path / "my-micropython"
    w.write_text("#!/bin/sh\necho started >> %s\nexec %s \"$@\"\n" % (log, real))
    w.chmod(0o755)
    return str(w), log


def test_the_variable_names_the_binary_and_a_bad_one_is_said_plainly(monkeypatch, tmp_path):
    real = _default_exe(monkeypatch)
    w, _ = _wrapper(tmp_path, real)
    monkeypatch.setenv(hostenv.MICROPYTHON_VAR, w)
    assert hostenv.micropython_exe() == w
    monkeypatch.setenv(hostenv.MICROPYTHON_VAR, str(tmp_path / "nothing-here"))
    assert hostenv.micropython_exe() is None
    assert hostenv.micropython_missing().startswith("MIMI_MICROPYTHON=%s names no program" % (tmp_path / "nothing-here"))


def test_run_and_vboard_with_a_missing_binary_stop_with_one_line(tmp_path):
    env = dict(os.environ, MIMI_MICROPYTHON=str(tmp_path / "nothing-here"))
    for args in (["run", "--flash", str(tmp_path / "f"), "--runtime", "micropython"],
                 ["vboard", "--flash", str(tmp_path / "v"), "--port", "0"]):
        p = subprocess.run([sys.executable, "-m", "host_sim"] + args, capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "MIMI_MICROPYTHON=" in p.stderr, p.stderr
        assert "Traceback" not in p.stdout + p.stderr


def test_a_benchmark_and_the_simulator_run_the_chosen_binary(monkeypatch, tmp_path):
    w, log = _wrapper(tmp_path, _default_exe(monkeypatch))
    env = dict(os.environ, MIMI_MICROPYTHON=w, PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_import.py"), "1M"], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("== micropython: %s: 64-bit" % w), p.stdout  # which binary, which word size
    n = len(log.read_text().split())
    assert n >= 3, n  # the probe, the ROMFS run and the .py run
    p = subprocess.run([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path / "f"), "--runtime",
                        "micropython", "--console"], input="import sys\nsys.implementation.name\n",
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=90)
    assert p.returncode == 0 and "'micropython'" in p.stdout, p.stdout + p.stderr
    assert len(log.read_text().split()) == n + 1  # the board was the chosen binary


@pytest.mark.skipif(not os.path.exists(SHARED_32), reason="no ../shared/tools/micropython32 here")
def test_the_32_bit_build_is_told_apart(monkeypatch):
    monkeypatch.delenv(hostenv.MICROPYTHON_VAR, raising=False)
    assert hostenv.micropython_about(SHARED_32).startswith(SHARED_32 + ": 32-bit, MicroPython v")
    assert hostenv.micropython_about().split(": ", 1)[1].startswith("64-bit")  # the dev tools' one
