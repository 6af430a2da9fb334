"""The owner's local time: the time zone setting, local dates, the time-of-day mode.

The wall clock is ``seam.time_s()`` (unix seconds, UTC); the zone is the setting
``tz``, a fixed offset from UTC such as ``+08:00`` (no daylight-saving rules: the owner
changes the setting when the clocks change). Until NTP has set the clock (``synced()``
is False) nothing here pretends to know the date: ``describe()`` says so and callers
that need a date (daily notes, cron) wait.

Time-of-day modes from MiniClaw's ACE engine (seed 001, 5.2): morning 06-09, work
09-12 and 14-18, break 12-14, evening 18-22, night 22-06.
"""
from micropython import const

from mimi import config, log, seam

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_SET_AFTER_S = const(1704067200)  # 2024-01-01, as seam.clock_synced: earlier was never set

_tz = [None, 0]  # the last parsed setting text and its offset in seconds


def parse_tz(text):
    """Parse a time zone as a UTC offset; return seconds east of UTC.

    Accepts ``+08:00``, ``-05:30``, ``+0530``, ``+8``, ``UTC+8``, ``GMT-3``, ``UTC``,
    ``Z``. Raises ``ValueError`` naming the accepted forms. Range -12:00 to +14:00.
    """
    s = text.strip().upper() if isinstance(text, str) else "?"
    if s[:3] in ("UTC", "GMT"):
        s = s[3:].strip()
    if s in ("", "Z"):
        return 0
    body = s[1:].strip()
    if ":" in body:
        h, m = body.split(":", 1)
    elif len(body) == 4:
        h, m = body[:2], body[2:]
    else:
        h, m = body, "0"
    if s[0] not in "+-" or not (h.isdigit() and m.isdigit()) or len(h) > 2 or len(m) > 2 or int(m) > 59:
        raise ValueError("time zone %r not understood: use a UTC offset such as +08:00, -05:30 or UTC+8" % (text,))
    off = int(h) * 3600 + int(m) * 60
    if s[0] == "-":
        off = -off
    if not -43200 <= off <= 50400:  # -12:00..+14:00
        raise ValueError("time zone %r is outside -12:00..+14:00" % (text,))
    return off


def format_tz(offset_s):
    """Seconds east of UTC as ``+08:00`` / ``-05:30``."""
    m = abs(int(offset_s)) // 60
    return "%s%02d:%02d" % ("-" if offset_s < 0 else "+", m // 60, m % 60)


def offset_s():
    """The owner's UTC offset in seconds, from the setting ``tz`` (0 when it is unusable)."""
    text = config.get("tz")
    if text != _tz[0]:
        try:
            off = parse_tz(text)
        except ValueError as e:
            log.warn("clock", "setting tz: %s; using UTC", e)
            off = 0
        _tz[0] = text
        _tz[1] = off
    return _tz[1]


def set_tz(text):
    """Check and store the time zone setting; return it in canonical form (``+08:00``).

    Raises ``ValueError`` (nothing stored) when ``text`` is not a zone.
    """
    canon = format_tz(parse_tz(text))
    config.set("tz", canon)
    return canon


def synced(epoch_s=None):
    """True once the clock has been set (NTP); with ``epoch_s``, whether that time could be real."""
    if epoch_s is None:
        return seam.clock_synced()
    return epoch_s > _SET_AFTER_S


def local(epoch_s=None):
    """Local broken-down time ``(year, month, mday, hour, minute, second, wday, yday)``.

    ``wday`` 0 is Monday. ``epoch_s`` defaults to now.
    """
    if epoch_s is None:
        epoch_s = seam.time_s()
    return tuple(seam.gmtime(int(epoch_s) + offset_s()))[:8]


def date_str(epoch_s=None):
    """Local date as ``YYYY-MM-DD`` (the name of that day's note)."""
    return "%04d-%02d-%02d" % local(epoch_s)[:3]


def iso_local(epoch_s=None):
    """Local time as ISO 8601 with its offset: ``2026-01-05T14:30:00+08:00``."""
    return "%04d-%02d-%02dT%02d:%02d:%02d" % local(epoch_s)[:6] + format_tz(offset_s())


def mode(hour):
    """Time-of-day mode for a local hour 0-23: morning, work, break, evening or night."""
    if 6 <= hour < 9:
        return "morning"
    if 9 <= hour < 12 or 14 <= hour < 18:
        return "work"
    if 12 <= hour < 14:
        return "break"
    if 18 <= hour < 22:
        return "evening"
    return "night"


def local_to_epoch(year, month, mday, hour=0, minute=0, second=0):
    """Unix seconds for a local wall time in the owner's zone."""
    return seam.mktime((year, month, mday, hour, minute, second, 0, 0)) - offset_s()


def parse_local(text):
    """Parse ``YYYY-MM-DD HH:MM[:SS]`` (or with ``T``) as local time; return unix seconds.

    Raises ``ValueError`` naming the expected form (also for a day the month lacks).
    """
    bad = ValueError("time '%s' is not a local date and time YYYY-MM-DD HH:MM" % text)
    p = str(text).strip().replace("T", " ").split(" ")
    if len(p) != 2 or p[0].count("-") != 2:
        raise bad
    p = p[0].split("-") + p[1].split(":")
    nums = []
    for x in p:
        if not x.isdigit():
            raise bad
        nums.append(int(x))
    if not 5 <= len(nums) <= 6:
        raise bad
    nums.append(0)
    y, mo, md, h, mi, sec = nums[:6]
    if not (1 <= mo <= 12 and h < 24 and mi < 60 and sec < 60):
        raise bad
    e = local_to_epoch(y, mo, md, h, mi, sec)
    if local(e)[2] != md:  # 31 February and the like roll over
        raise bad
    return e


def parse_hhmm(text):
    """Parse ``HH:MM`` (00:00-23:59); return minutes after midnight. ``ValueError`` otherwise."""
    p = str(text).strip().split(":")
    if len(p) == 2 and p[0].isdigit() and p[1].isdigit() and len(p[1]) == 2 and int(p[0]) < 24 and int(p[1]) < 60:
        return int(p[0]) * 60 + int(p[1])
    raise ValueError("time of day '%s' not understood: use HH:MM, 00:00 to 23:59" % text)


def next_daily(minutes, after_s):
    """Unix seconds of the first local ``minutes``-after-midnight strictly after ``after_s``."""
    t = local(after_s)
    e = local_to_epoch(t[0], t[1], t[2], minutes // 60, minutes % 60)
    while e <= after_s:
        e += 86400
    return e


def describe(epoch_s=None):
    """One line for people and the model.

    ``Monday 2026-01-05 14:30 (UTC+08:00, mode: work)``, or a plain statement that the
    clock is not synced yet.
    """
    if epoch_s is None:
        epoch_s = seam.time_s()
    if not synced(epoch_s):
        return "clock not synced yet (no network time); the date and time are unknown"
    t = local(epoch_s)
    return "%s %04d-%02d-%02d %02d:%02d (UTC%s, mode: %s)" % (
        DAYS[t[6]], t[0], t[1], t[2], t[3], t[4], format_tz(offset_s()), mode(t[3]))
