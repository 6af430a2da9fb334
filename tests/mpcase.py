"""Run one function of a "case" module under the ``micropython`` command (host only).

Tests that need a live server (started by the CPython test process) cannot be plain
dual-runtime modules, because ``mp_runner`` runs those in a process of their own. So the
client half of such a test lives in a ``cases_*.py`` module (plain ``def test_*()``
functions, firmware + ``support`` only, parameters from environment variables), and a host
test runs each function twice: in process under CPython, and under MicroPython through
``mp_runner.py`` with only that function selected. ``run(...)`` is the second half.
"""
import json
import os
import subprocess
import tempfile

from host_sim import hostenv

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def run(path, name, env=None, heap="2M", timeout=120):
    """Run ``name`` from the case module ``path`` under micropython; return (ok, output)."""
    exe = hostenv.micropython_exe()
    assert exe, hostenv.micropython_missing()
    e = dict(os.environ)
    e.update(env or {})
    e["MICROPYPATH"] = os.pathsep.join((hostenv.STUBS, hostenv.FIRMWARE, hostenv.LIB, TESTS, ".frozen"))
    e.setdefault("MIMI_FLASH", tempfile.mkdtemp(prefix="mimi-mp-flash-"))
    p = subprocess.run([exe, "-X", "heapsize=" + heap, os.path.join(TESTS, "mp_runner.py"), path, name],
                       capture_output=True, text=True, timeout=timeout, env=e, cwd=ROOT)
    other = []
    for line in p.stdout.splitlines():
        if line.startswith("@@MPTEST "):
            r = json.loads(line[9:])
            if r["name"] in (name, "<import>"):
                return r["ok"] and r["name"] == name, r["err"] + "\n".join(other[-40:])
        else:
            other.append(line)
    return False, "no result (exit %s):\n%s\n%s" % (p.returncode, p.stdout[-3000:], p.stderr[-3000:])


def case_names(path):
    with open(path) as f:
        return [line[4:].split("(", 1)[0] for line in f if line.startswith("def test_")]


def run_cpython(path, name):
    """Import the case module in this process and call ``name`` (CPython half)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    getattr(mod, name)()
