"""Tokens used per day, for ``/status``: ``{"YYYY-MM-DD": [input, output, calls]}``.

Counted in RAM on every LLM reply and written to ``/data/state/usage.json`` at most every
``_USAGE_SAVE_S`` (flash wear: not on every call) and when the app stops (``save()``).
``today()`` and ``summary()`` read them.
The local date names the day (``mimi.clock``). ``_USAGE_DAYS`` days are kept.
"""
import json

from micropython import const

from mimi import clock, config, log, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_USAGE_SAVE_S = const(600)  # token counts are written at most this often (flash wear)
_USAGE_DAYS = const(14)  # days of token counts kept

_TAG = const("usage")
_days = None  # loaded on first use
_saved = None
_dirty = False


def _today():
    """Today's row ``[input, output, calls]``, loading the file on first use; a new day's row
    pushes out days past ``_USAGE_DAYS``."""
    global _days
    if _days is None:
        _days = {}
        try:
            d = json.loads(fs.read(config.USAGE_PATH, 4096)[0])
            for k in d:
                if len(d[k]) == 3:
                    _days[k] = list(map(int, d[k]))
        except (OSError, ValueError, TypeError):  # missing or damaged: start afresh
            pass
    day = clock.date_str()
    row = _days.get(day)
    if row is None:
        row = _days[day] = [0, 0, 0]
        for k in sorted(_days)[:-_USAGE_DAYS]:
            del _days[k]
    return row


def add(tokens, calls=1):
    """Count one reply's ``(input_tokens, output_tokens)`` for today; saves when due."""
    global _dirty
    row = _today()
    row[0] += int(tokens[0] or 0)
    row[1] += int(tokens[1] or 0)
    row[2] += calls
    _dirty = True
    save(False)


def save(force=True):
    """Write the counts if they changed (``force=False``: only when ``_USAGE_SAVE_S`` has
    passed since the last write). A failed write is logged and tried again later."""
    global _saved, _dirty
    if not _dirty:
        return
    now = seam.ticks_ms()
    if not force and (_saved is None or seam.elapsed_ms(_saved, now) < _USAGE_SAVE_S * 1000):
        if _saved is None:
            _saved = seam.moment()  # first count since boot: start the clock, write later
        return
    try:
        fs.write(config.USAGE_PATH, json.dumps(_days))
        _dirty = False
        _saved = seam.moment()
    except OSError as e:
        log.exc(_TAG, "save", e)


def today():
    """``(input_tokens, output_tokens, calls)`` for today."""
    return tuple(_today())


def summary():
    """One line for ``/status``: ``tokens today: 1234 in, 56 out (3 calls)``."""
    return "tokens today: %d in, %d out (%d calls)" % today()


def forget():
    """Drop what is in RAM (tests; the file stays)."""
    global _days, _saved, _dirty
    _days = _saved = None
    _dirty = False
