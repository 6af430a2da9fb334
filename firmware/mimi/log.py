"""Console log lines with a short tag per module: ``[tg] poll failed: timed out``.

No ``logging`` (MicroPython lacks it) and no file: the serial console is the log.
Messages are %-formatted only when the level is on. Never pass a secret. What reaches the
console from a chat (log lines, replies printed there) goes through ``visible``: a
terminal never gets an escape sequence from a chat.
"""
from mimi import seam

DEBUG = 10
INFO = 20
WARN = 30
ERROR = 40

level = INFO
# The last lines, for the web app's log page and status (mimi.web): ``tail`` keeps up to
# ``keep[0]`` lines (0 until the web app starts: no heap spent without it), ``errors`` the
# last ``_LOG_ERRORS_MAX`` warnings and errors (always: /status shows them).
_LOG_ERRORS_MAX = 8
_LOG_LINE_MAX = 240  # characters of a line kept
tail = []
errors = []
keep = [0]


def visible(text):
    """``text`` with its control characters shown, not obeyed: ESC as ``\\x1b``, CR as
    ``\\r`` (line breaks and tabs stay), C1 controls (U+0080-U+009F) and DEL likewise."""
    if not isinstance(text, str):
        text = str(text)
    b = seam.as_bytes(text)  # its bytes: min() of the str made each character a string (issue 17)
    if not b or 32 <= min(b) and max(b) < 127:
        return text  # the usual case, a line of printable ASCII: nothing allocated
    for ch in text:
        if ch < " " and ch != "\n" and ch != "\t" or "\x7f" <= ch <= "\x9f":
            break
    else:
        return text  # nothing to change
    out = []
    for ch in text:
        if ch < " " and ch != "\n" and ch != "\t" or "\x7f" <= ch <= "\x9f":
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


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
    line = "%s %6d [%s] %s" % ("DIWE"[lvl // 10 - 1], t, tag, visible(msg))
    print(line + "\n", end="")
    if keep[0]:
        tail.append(line[:_LOG_LINE_MAX])
        del tail[:-keep[0]]
    if lvl >= WARN:
        errors.append(line[:_LOG_LINE_MAX])
        del errors[:-_LOG_ERRORS_MAX]


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
