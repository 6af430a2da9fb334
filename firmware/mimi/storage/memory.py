"""Long-term memory (``/data/memory/MEMORY.md``) and daily notes (``/data/memory/YYYY-MM-DD.md``).

The model keeps these itself with the file tools (seed 003: plain markdown plus keyword
search, no database). The daily note's name is the owner's local date (``clock``), and
the context tells the model exactly the path ``daily_path`` gives, which is the path
``recent_notes`` reads (MimiClaw's prompt and loader disagree).

``LOCK`` guards every read-modify-write of a memory file (here, and the file tools'
``edit_file``/``write_file`` under ``/data/memory``), so chat, cron and heartbeat cannot
lose each other's edits. Hold it only briefly; it is not re-entrant.
"""
from micropython import const

from mimi import clock, config, log, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_MEMORY_RECENT_DAYS = const(3)

LOCK = seam.allocate_lock()


def read_memory(cap=None):
    """MEMORY.md as text, at most ``cap`` bytes (default ``MEMORY_MAX_BYTES``); '' if missing."""
    try:
        return fs.read_text(config.MEMORY_PATH, cap or config.MEMORY_MAX_BYTES)[0]
    except fs.NotFound:
        return ""


def write_memory(text):
    """Replace MEMORY.md with ``text`` (atomic, under ``LOCK``).

    Raises ``ValueError`` when over ``MEMORY_MAX_BYTES``: nothing is written.
    """
    data = text.encode()
    if len(data) > config.MEMORY_MAX_BYTES:
        raise ValueError("MEMORY.md would be %d bytes; the limit is %d: keep it short" % (
            len(data), config.MEMORY_MAX_BYTES))
    with LOCK:
        fs.write(config.MEMORY_PATH, data)


def daily_path(epoch_s=None):
    """``/data/memory/YYYY-MM-DD.md`` for the owner's local date at ``epoch_s`` (default now).

    Raises ``ValueError`` when the clock is not synced (today's date is unknown).
    """
    if epoch_s is None:
        epoch_s = seam.time_s()
    if not clock.synced(epoch_s):
        raise ValueError("the clock is not synced yet, so today's date is unknown")
    return config.MEMORY_DIR + "/" + clock.date_str(epoch_s) + ".md"


def append_daily(text, epoch_s=None):
    """Add ``text`` as a new line to today's note (created with a ``# YYYY-MM-DD`` title).

    Atomic (copy and rename) and under ``LOCK``. Returns the note's path. Raises
    ``ValueError`` when the clock is not synced or the note would pass
    ``MEMORY_DAILY_MAX_BYTES``.
    """
    path = daily_path(epoch_s)
    entry = text.rstrip("\n") + "\n"
    with LOCK:
        size = fs.size(path)
        if size is None:
            entry = "# %s\n\n%s" % (path[-13:-3], entry)
            size = 0
        if size + len(entry.encode()) > config.MEMORY_DAILY_MAX_BYTES:
            raise ValueError("today's note is full (%d bytes): move lasting facts to MEMORY.md" % size)
        fs.append(path, entry, atomic=True)
    return path


def recent_parts(days=None, cap=None, epoch_s=None):
    """The recent notes as a list of byte strings (or memoryviews), ``cap`` bytes in all.

    What ``recent_notes`` joins; the context writes the parts straight into its buffer
    (no join or encode). Newest day first, each ``### YYYY-MM-DD (path)`` then
    the note; a note that does not fit gives its latest lines, from a line start, after
    a pointer to the rest. Bytes that are not UTF-8 come out as ``?`` (the file is named
    in a warning). [] when there are none or the clock is not synced.
    """
    if epoch_s is None:
        epoch_s = seam.time_s()
    parts = []
    if not clock.synced(epoch_s):
        return parts
    left = cap or config.MEMORY_RECENT_MAX_BYTES
    for d in range(days or _MEMORY_RECENT_DAYS):
        path = daily_path(epoch_s - d * 86400)
        size = fs.size(path)
        if not size:
            continue
        head = ("### %s%s (%s)\n" % (path[-13:-3], " today" if d == 0 else "", path)).encode()
        room = left - len(head) - 1
        if room < 64:
            break
        parts.append(head)
        try:
            if size <= room:
                body = fs.read(path, size)[0]
            else:
                mark = ("[earlier lines: read_file %s]\n" % path).encode()
                data = fs.read(path, room - len(mark), size - room + len(mark))[0]
                i = fs.utf8_start(data, 0)
                nl = data.find(b"\n", i)
                if 0 <= nl < len(data) - 1 and nl - i < 200:
                    i = nl + 1  # from a line start
                parts.append(mark)
                left -= len(mark)
                body = memoryview(data)[i:]
        except OSError:  # gone since its size was taken
            body = b"[unreadable]"
        b = fs.utf8_fix(body)
        if b is not body:  # the prompt must be UTF-8: one bad byte would fail every chat
            log.warn("mem", "%s is not UTF-8 text: bad bytes sent as ?", path)
            body = b
        parts.append(body)
        left -= len(head) + len(body)
        if body[-1:] != b"\n":
            parts.append(b"\n")
            left -= 1
    return parts


def recent_notes(days=None, cap=None, epoch_s=None):
    """The last ``days`` (default 3) days' notes, newest first, ``cap`` bytes in all (4 KB).

    Each note starts with ``### YYYY-MM-DD (path)``. A note that does not fit gives its
    latest lines with a pointer to the rest. '' when there are none or the clock is not
    synced. Reads only what it returns. Bytes that are not UTF-8 come out as ``?``.
    """
    parts = recent_parts(days, cap, epoch_s)
    for k in range(len(parts)):
        parts[k] = bytes(parts[k])
    return b"".join(parts).decode()
