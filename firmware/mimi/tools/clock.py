"""get_current_time: local time, weekday, UTC offset, unix seconds; plain when unsynced."""
from mimi import clock, config, seam
from mimi.tools import registry


def get_current_time(args, ctx):
    """No arguments. Also names today's note, so the model writes where the loader reads."""
    now = seam.time_s()
    if not clock.synced(now):
        return clock.describe(now) + ". Do not guess a date; do not write a daily note now."
    t = clock.local(now)
    return "%s, %s (UTC%s), unix %d, mode %s. Today's note: %s/%s.md" % (
        clock.DAYS[t[6]], clock.iso_local(now), clock.format_tz(clock.offset_s()), now,
        clock.mode(t[3]), config.MEMORY_DIR, clock.date_str(now))


def register_all():
    """Register get_current_time (group ``time``; text in ``tools.jsonl``)."""
    registry.load(("mimi.tools.clock",))
