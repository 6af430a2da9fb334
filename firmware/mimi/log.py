"""Console log lines with a short tag per module: ``[tg] poll failed: timed out``.

No ``logging`` (MicroPython lacks it) and no file: the serial console is the log.
Messages are %-formatted only when the level is on. Never pass a secret.
"""
from mimi import seam

DEBUG = 10
INFO = 20
WARN = 30
ERROR = 40

level = INFO


def _emit(lvl, tag, msg, args):
    if lvl < level:
        return
    if args:
        try:
            msg = msg % args
        except (TypeError, ValueError):
            msg = "%s %r" % (msg, args)
    t = seam.ticks_ms() // 1000
    # One write per line: print's separate write of "\n" lets another thread's line in between.
    # The level's letter: D, I, W or E (for 10, 20, 30, 40).
    print("%s %6d [%s] %s\n" % ("DIWE"[lvl // 10 - 1], t, tag, msg), end="")


def debug(tag, msg, *args):
    _emit(DEBUG, tag, msg, args)


def info(tag, msg, *args):
    _emit(INFO, tag, msg, args)


def warn(tag, msg, *args):
    _emit(WARN, tag, msg, args)


def error(tag, msg, *args):
    _emit(ERROR, tag, msg, args)


def exc(tag, msg, e):
    """Log an exception as one line: ``msg: ValueError: bad``, no traceback, no secrets."""
    _emit(ERROR, tag, "%s: %s: %s", (msg, type(e).__name__, e))
