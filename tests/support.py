"""Helpers shared by the tests that run on both CPython and MicroPython.

Plain functions only (no pytest here): ``tests/mp_runner.py`` imports test modules under
the ``micropython`` command, where pytest does not exist.
"""
import os

from mimi import seam

_n = [0]


def rmtree(path):
    """Remove a folder and everything in it (no ``shutil`` on MicroPython)."""
    try:
        entries = os.listdir(path)
    except OSError:
        try:
            os.remove(path)
        except OSError:
            pass
        return
    for name in entries:
        p = path + "/" + name
        try:
            os.listdir(p)
            is_dir = os.stat(p)[0] & 0x4000
        except OSError:
            is_dir = False
        if is_dir:
            rmtree(p)
        else:
            os.remove(p)
    os.rmdir(path)


def makedirs(path):
    """``os.makedirs(path, exist_ok=True)`` for both runtimes."""
    cur = ""
    for part in path.split("/"):
        if not part:
            cur = cur or "/"
            continue
        cur = (cur.rstrip("/") + "/" + part) if cur else part
        try:
            os.mkdir(cur)
        except OSError:
            pass


def tmpdir(tag="t"):
    """A new empty folder under /tmp, unique to this process."""
    _n[0] += 1
    base = os.getenv("MIMI_TEST_TMP") or "/tmp"
    rnd = "%08x" % (int.from_bytes(os.urandom(4), "big"),)
    p = "%s/mimi-%s-%s-%d" % (base, tag, rnd, _n[0])
    makedirs(p)
    return p


def fresh_flash():
    """Point the firmware at a new empty flash folder with ``/data`` in it; return the folder."""
    root = tmpdir("flash")
    makedirs(root + "/data")
    seam.set_flash_root(root)
    try:
        from mimi import config
        config._cache.clear()
    except ImportError:
        pass
    try:
        from mimi import guard
        guard._sent.clear()  # its hourly counters live in RAM: cleared as a reboot would
        guard._rearm[:] = [None]
    except ImportError:
        pass
    return root


def raises(exc, fn, *args, **kw):
    """Call ``fn``; assert it raises ``exc``; return the exception."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


def write(path, data):
    """Write ``data`` (str or bytes) to a host path, making its folder."""
    d = path.rsplit("/", 1)[0]
    makedirs(d)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def take_all(q):
    """Everything waiting in bus queue ``q`` (``bus.inbound`` or ``bus.outbound``), oldest first."""
    out = []
    while True:
        m = q.get(0)
        if m is None:
            return out
        out.append(m)


class Echo:
    """A stand-in agent for runtime tests: each inbound message gets ``"echo: <text>"``."""

    def __init__(self, b):
        self.bus = b

    def handle(self, msg):
        self.bus.send(msg["channel"], msg["chat_id"], "echo: " + msg["text"])

    def run(self, stop):
        while not stop():
            m = self.bus.inbound.get(20)
            if m is not None:
                self.handle(m)


def setenv(name, value=None):
    """Set (or, with None, remove) an environment variable the stand-ins read at each use,
    on both runtimes (MicroPython has no ``os.environ``; CPython's ``os.getenv`` reads it)."""
    import os

    env = getattr(os, "environ", None)
    if env is not None:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    elif value is None:
        os.unsetenv(name)
    else:
        os.putenv(name, value)
