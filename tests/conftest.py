"""pytest set-up: firmware importable on CPython, every dual-runtime test also run by
the ``micropython`` command, and a guard against the real network.

A test module that holds the line ``RUNTIMES = ("cpython", "micropython")`` runs twice:
as usual under CPython, and once more under MicroPython through ``tests/mp_runner.py``,
each function reported as ``test_name[micropython]``. Such modules import only the
firmware, ``support`` and what both runtimes have, and use plain ``assert``.
A module may set ``MP_HEAP = "256K"`` to run MicroPython with that heap.
``MIMI_MICROPYTHON=/path/to/micropython`` runs them with that binary (``host_sim.hostenv``),
e.g. the 32-bit ``../shared/tools/micropython32``; tests that need ``ssl`` skip or fail there.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from host_sim import hostenv  # noqa: E402

_FLASH = tempfile.mkdtemp(prefix="mimi-pytest-flash-")
os.makedirs(os.path.join(_FLASH, "data"), exist_ok=True)
hostenv.install(_FLASH)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

_DUAL_MARK = 'RUNTIMES = ("cpython", "micropython")'
_counts = {"cpython": {}, "micropython": {}}


# -- no real network ------------------------------------------------------------------

_LOCAL = ("127.0.0.1", "::1", "localhost", "0.0.0.0", "")
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_local(addr):
    if isinstance(addr, (str, bytes)):
        return True  # AF_UNIX
    host = addr[0]
    return host in _LOCAL or str(host).startswith("127.")


def _guard_connect(self, addr):
    if not _is_local(addr):
        raise AssertionError("test tried to reach the real network: %r" % (addr,))
    return _real_connect(self, addr)


def _guard_connect_ex(self, addr):
    if not _is_local(addr):
        raise AssertionError("test tried to reach the real network: %r" % (addr,))
    return _real_connect_ex(self, addr)


def _guard_getaddrinfo(host, *a, **kw):
    if str(host).endswith(".invalid"):  # never resolves (RFC 2606): answer as a resolver would
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    if host not in _LOCAL and not str(host).startswith("127.") and host is not None:
        raise AssertionError("test tried to resolve a real host: %r" % (host,))
    return _real_getaddrinfo(host, *a, **kw)


socket.socket.connect = _guard_connect
socket.socket.connect_ex = _guard_connect_ex
socket.getaddrinfo = _guard_getaddrinfo


# -- MicroPython twin of each dual-runtime module --------------------------------------


def mp_env(flash_dir=None):
    """Environment for running firmware code under the ``micropython`` command."""
    env = dict(os.environ)
    env["MICROPYPATH"] = os.pathsep.join((hostenv.STUBS, hostenv.FIRMWARE, hostenv.LIB, TESTS, ".frozen"))
    env["MIMI_FLASH"] = flash_dir or tempfile.mkdtemp(prefix="mimi-mp-flash-")
    return env


def _test_names(path):
    names = []
    with open(path) as f:
        for line in f:
            if line.startswith("def test_"):
                names.append(line[4:].split("(", 1)[0])
    return names


def _module_setting(text, name):
    for line in text.splitlines():
        if line.startswith(name + " = "):
            return line.split("=", 1)[1].strip().strip("\"'")
    return None


class MicroPythonFile(pytest.File):
    def collect(self):
        self._results = None
        for name in _test_names(str(self.path)):
            yield MicroPythonItem.from_parent(self, name=name + "[micropython]", fn_name=name)

    def results(self):
        if self._results is None:
            self._results = self._run()
        return self._results

    def _run(self):
        exe = hostenv.micropython_exe()
        if exe is None:
            return {"<import>": (False, hostenv.micropython_missing())}
        text = self.path.read_text()
        heap = _module_setting(text, "MP_HEAP") or "2M"
        cmd = [exe, "-X", "heapsize=" + heap, os.path.join(TESTS, "mp_runner.py"), str(self.path)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=mp_env(), cwd=ROOT)
        except subprocess.TimeoutExpired as e:
            return {"<import>": (False, "micropython timed out after 600 s\n%s" % (e.stdout or ""))}
        res = {}
        other = []
        for line in p.stdout.splitlines():
            if line.startswith("@@MPTEST "):
                r = json.loads(line[9:])
                res[r["name"]] = (r["ok"], r["err"] + ("\n" + "\n".join(other[-40:]) if not r["ok"] else ""))
                other = []
            else:
                other.append(line)
        res["<output>"] = (p.returncode, "\n".join(other[-60:]) + "\n" + p.stderr[-4000:])
        return res


class MicroPythonItem(pytest.Item):
    def __init__(self, *, fn_name, **kw):
        super().__init__(**kw)
        self.fn_name = fn_name

    def runtest(self):
        res = self.parent.results()
        if "<import>" in res and not res["<import>"][0]:
            raise MicroPythonFailure(res["<import>"][1])
        if self.fn_name not in res:
            rc, out = res.get("<output>", (None, ""))
            raise MicroPythonFailure("no result from micropython (exit %s); it crashed or hung before this test:\n%s" % (rc, out))
        ok, err = res[self.fn_name]
        if not ok:
            raise MicroPythonFailure(err)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MicroPythonFailure):
            return "under micropython:\n" + str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, "%s [micropython]" % self.fn_name


class MicroPythonFailure(Exception):
    pass


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".py" and file_path.name.startswith("test_"):
        try:
            text = file_path.read_text()
        except OSError:
            return None
        if _DUAL_MARK in text:
            return MicroPythonFile.from_parent(parent, path=file_path)
    return None


_config = []


def pytest_configure(config):
    _config.append(config)


def pytest_runtest_logreport(report):
    # Counted in pytest's own words (passed, failed, skipped, xfailed, xpassed, error):
    # the category its terminal summary gives the report, empty for a passing setup.
    config = _config[-1]
    category = config.hook.pytest_report_teststatus(report=report, config=config)[0]
    if not category:
        return
    # Firmware run by the micropython command: dual-runtime twins ("[micropython]"),
    # host-driven cases ("test_micropython[...]") and boots ("micropython-board").
    rt = "micropython" if "micropython" in report.nodeid.split("::", 1)[-1] else "cpython"
    c = _counts[rt]
    c[category] = c.get(category, 0) + 1


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("tests per interpreter")
    for rt, label in (("cpython", "CPython %d.%d" % sys.version_info[:2]), ("micropython", "MicroPython (unix port)")):
        c = _counts[rt]
        total = sum(c.values())
        parts = ", ".join("%d %s" % (v, k) for k, v in sorted(c.items()))
        tr.write_line("%-26s %4d run: %s" % (label, total, parts or "none"))
    if os.environ.get(hostenv.MICROPYTHON_VAR) and sum(_counts["micropython"].values()):
        tr.write_line("MicroPython from $%s: %s" % (hostenv.MICROPYTHON_VAR, hostenv.micropython_about()))


@pytest.fixture(autouse=True, scope="module")
def _config_restored():
    """Each test module starts from the shipped tunables: a module's overrides of
    ``mimi.config`` (a shorter watchdog, a smaller buffer) stay in that module.

    Under ``micropython`` every module runs in a process of its own; here they share one.
    """
    try:
        from mimi import config
    except ImportError:  # a module that does not use the firmware
        yield
        return
    saved = {k: getattr(config, k) for k in dir(config) if k.isupper()}
    yield
    for k in [k for k in dir(config) if k.isupper() and k not in saved]:
        delattr(config, k)
    for k, v in saved.items():
        setattr(config, k, v)
