"""mimi for ``mip``: write ``package.json`` and ``update.json`` from the tree, or a package index.

    python3 tools/mip_package.py              # rewrite package.json and update.json (repo root)
    python3 tools/mip_package.py --check      # exit 1, naming them, if either is out of date
    python3 tools/mip_package.py --index DIR  # a mip index in DIR: .mpy and .py builds

Format (micropython-lib's micropython/mip/mip/__init__.py, and mpremote's mip.py, which
ports it): ``urls`` is a list of ``[device path, url]``; the device path is joined to
the install target (``/lib``, the first ``sys.path`` entry ending in ``/lib``), and a url
without a scheme is relative to the folder of the package.json, so that
``mpremote mip install github:OWNER/mimi`` reads
``https://raw.githubusercontent.com/OWNER/mimi/HEAD/package.json`` and every file beside
it (``@TAG`` picks a branch or tag instead of HEAD). ``deps`` are installed after the
files; ``version`` is the package's (``VERSION`` in firmware/mimi/__init__.py, the one
place it is bumped; ``/status`` shows it). The paths land where ``tools/flash.sh deploy``
and ``seed`` put things: the package in /lib/mimi, ``../boot.py``, ``../main.py`` and
``../mimi_slot.py`` in
/ (the board's file system resolves ``..``: littlefs, FAT, the virtual board), the seed
in /data.

``package.json`` is a first install: the package, boot.py, main.py and the seed files.
mip overwrites what it installs, so on a board in use ``update.json`` (the same without
the seed) upgrades the code and leaves /data (memory, skills, SOUL.md) as it is.

mip's own .mpy convention is an index (``--index URL``): ``package/<mpy>/<name>/<version>.json``
lists ``hashes``, ``[device path, short sha256]``, each fetched from
``file/<hash[:2]>/<hash>`` (micropython-lib's tools/build.py lays out micropython.org/pi/v2
so). ``--index DIR`` writes one: packages ``mimi`` and ``mimi-update`` for mpy ``6``
(MicroPython 1.23 and later; ``sys.implementation._mpy & 0xFF``), compiled by mpy-cross
(``$MPY_CROSS``, as host_sim.romfs), and ``py``; boot.py, main.py and the data files stay
as they are. Serve DIR over HTTP and ``mpremote mip install --index http://HOST:PORT mimi``
(``--no-mpy`` for the .py build). Host-side CPython only.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import romfs  # noqa: E402 - after the path: the package's file list, mpy-cross

FIRMWARE = os.path.join(ROOT, "firmware")
SEED = os.path.join(ROOT, "spiffs_seed")
OUTPUTS = ("package.json", "update.json")  # at the repository root
MPY_VERSION = "6"  # mpy-cross's output (v6.3): MicroPython 1.23 to 1.29
# No deps: the micropython-lib modules mimi imports (ntptime, neopixel; manifest.py
# names them) are frozen into every ESP32 firmware on micropython.org
# (ports/esp32/boards/manifest.py: bundle-networking, neopixel).
DEPS = []
_HASH_CHARS = 8  # the short hash micropython-lib's index uses


def version():
    """The package's version: ``VERSION = "..."`` in firmware/mimi/__init__.py (str).

    Raises ValueError when that line is missing (the one place the version is kept)."""
    with open(os.path.join(FIRMWARE, "mimi", "__init__.py")) as f:
        m = re.search(r'^VERSION = "([^"]+)"', f.read(), re.M)
    if not m:
        raise ValueError('firmware/mimi/__init__.py has no line VERSION = "..."')
    return m.group(1)


def _seed_files():
    out = []
    for d, dirs, names in os.walk(SEED):
        dirs[:] = sorted(n for n in dirs if not n.startswith("."))
        for n in names:
            if not n.startswith("."):
                out.append(os.path.relpath(os.path.join(d, n), SEED).replace(os.sep, "/"))
    return sorted(out)


def entries(seed=True):
    """``[(device path, repository path)]``: the package, boot.py, main.py, mimi_slot.py
    (the slot choice of updates over WiFi, beside boot.py), and with
    ``seed`` the files of spiffs_seed/; device paths relative to the target /lib."""
    out = [(rel, "firmware/" + rel) for rel in romfs.package_files()]
    out += [(rel, "firmware/lib/" + rel) for rel in romfs.lib_files()]  # microdot: /lib/microdot
    out += [("../boot.py", "firmware/boot.py"), ("../main.py", "firmware/main.py"),
            ("../mimi_slot.py", "firmware/mimi_slot.py")]
    if seed:
        out += [("../data/" + rel, "spiffs_seed/" + rel) for rel in _seed_files()]
    return out


def _dumps(key, pairs, ver):
    # JSON, one pair a line, so that a diff shows the files that came or went.
    rows = ",\n".join("  " + json.dumps(list(p)) for p in pairs)
    return '{\n "%s": [\n%s\n ],\n "deps": %s,\n "version": %s\n}\n' % (key, rows, json.dumps(DEPS), json.dumps(ver))


def package_json(seed=True):
    """The package.json (``seed``) or update.json text: mip's ``urls``, ``deps``, ``version``."""
    return _dumps("urls", entries(seed), version())


def write_index(dest):
    """Fill folder ``dest`` with a mip index of mimi: for mpy ``6`` and ``py``, packages
    ``mimi`` (with the seed) and ``mimi-update``, as ``<version>.json`` and ``latest.json``,
    and their files under ``file/``. Returns the number of files. Raises RuntimeError
    when mpy-cross refuses a module (host_sim.romfs.stage)."""
    ver = version()
    nfiles = 0
    with tempfile.TemporaryDirectory(prefix="mimi-mip-") as stage:
        romfs.stage(os.path.join(stage, "6"), at="/lib")  # mip installs to /lib
        for build in (MPY_VERSION, "py"):
            for name, seed in (("mimi", True), ("mimi-update", False)):
                hashes = []
                for dev, src in entries(seed):
                    path = os.path.join(ROOT, src)
                    if build != "py" and src.startswith(("firmware/mimi/", "firmware/lib/")) and src.endswith(".py"):
                        path = os.path.join(stage, "6", dev[:-3] + ".mpy")
                        dev = dev[:-3] + ".mpy"
                    with open(path, "rb") as f:
                        data = f.read()
                    h = hashlib.sha256(data).hexdigest()[:_HASH_CHARS]
                    blob = os.path.join(dest, "file", h[:2], h)
                    if not os.path.exists(blob):
                        os.makedirs(os.path.dirname(blob), exist_ok=True)
                        shutil.copyfile(path, blob)
                        nfiles += 1
                    hashes.append([dev, h])
                doc = _dumps("hashes", hashes, ver)
                top = os.path.join(dest, "package", build, name)
                os.makedirs(top, exist_ok=True)
                for fname in (ver + ".json", "latest.json"):
                    with open(os.path.join(top, fname), "w") as f:
                        f.write(doc)
    return nfiles


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tools/mip_package.py", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether package.json and update.json are current")
    ap.add_argument("--index", metavar="DIR", help="write a mip index (.mpy and .py) into DIR instead")
    a = ap.parse_args(argv)
    try:
        if a.index:
            n = write_index(a.index)
            print("%s: mip index of mimi %s (%d files); mpremote mip install --index http://HOST:PORT mimi"
                  % (a.index, version(), n))
            return 0
        stale = []
        for name, seed in zip(OUTPUTS, (True, False)):
            want = package_json(seed)
            path = os.path.join(ROOT, name)
            try:
                with open(path) as f:
                    have = f.read()
            except OSError:
                have = None
            if have == want:
                continue
            if a.check:
                stale.append(name)
            else:
                with open(path, "w") as f:
                    f.write(want)
                print("Written: %s (mimi %s, %d files)" % (name, version(), len(json.loads(want)["urls"])))
    except (OSError, ValueError, RuntimeError) as e:
        print("mip_package.py: %s" % e, file=sys.stderr)
        return 2
    if stale:
        print("mip_package.py: %s out of date: run python3 tools/mip_package.py" % " and ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
