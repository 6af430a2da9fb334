"""Long-term memory (``/data/memory/MEMORY.md``) and daily notes (``/data/memory/YYYY-MM-DD.md``).

The model keeps these itself with the file tools (seed 003: plain markdown plus keyword
search, no database). The daily note's name is the owner's local date (``clock``), and
the context tells the model exactly the path ``daily_path`` gives, which is the path
``recent_notes`` reads (MimiClaw's prompt and loader disagree).

``LOCK`` guards every read-modify-write of a memory file (here, and the file tools'
``edit_file``/``write_file`` under ``/data/memory``), so chat, cron and heartbeat cannot
lose each other's edits. Hold it only briefly; it is not re-entrant.
"""
from mimi import clock, config, seam
from mimi.storage import fs

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


def update_memory(fn):
    """Read MEMORY.md, write ``fn(text)`` back, all under ``LOCK``; return the new text.

    ``fn`` may raise to abort (nothing is written). A file over ``MEMORY_MAX_BYTES`` is
    refused rather than cut (``ValueError``).
    """
    with LOCK:
        try:
            text, cut, size = fs.read_text(config.MEMORY_PATH, config.MEMORY_MAX_BYTES)
        except fs.NotFound:
            text, cut, size = "", False, 0
        if cut:
            raise ValueError("MEMORY.md is %d bytes, over the %d limit" % (size, config.MEMORY_MAX_BYTES))
        new = fn(text)
        data = new.encode()
        if len(data) > config.MEMORY_MAX_BYTES:
            raise ValueError("MEMORY.md would be %d bytes; the limit is %d" % (len(data), config.MEMORY_MAX_BYTES))
        fs.write(config.MEMORY_PATH, data)
        return new


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


def notes():
    """Paths of the daily notes on flash, newest first."""
    try:
        entries = fs.listdir(config.MEMORY_DIR)
    except fs.NotFound:
        return []
    out = []
    for name, is_dir, _ in entries:
        if not is_dir and len(name) == 13 and name.endswith(".md") and name[4] == "-" and name[7] == "-":
            out.append(config.MEMORY_DIR + "/" + name)
    out.sort(reverse=True)
    return out


def _tail_text(path, size, room):
    """The last ``room`` bytes of a note, started at a line, with a pointer to the rest."""
    mark = "[earlier lines: read_file %s]\n" % path
    take = room - len(mark)
    if take <= 0:
        return ""
    data = fs.read(path, take, offset=size - take)[0]
    i = fs.utf8_start(data, 0)
    nl = data.find(b"\n", i)
    if 0 <= nl < len(data) - 1 and nl - i < 200:
        i = nl + 1
    return mark + data[i:].decode()


def recent_notes(days=None, cap=None, epoch_s=None):
    """The last ``days`` (default 3) days' notes, newest first, ``cap`` bytes in all (4 KB).

    Each note starts with ``### YYYY-MM-DD (path)``. A note that does not fit gives its
    latest lines with a pointer to the rest. '' when there are none or the clock is not
    synced. Reads only what it returns.
    """
    days = days or config.MEMORY_RECENT_DAYS
    cap = cap or config.MEMORY_RECENT_MAX_BYTES
    if epoch_s is None:
        epoch_s = seam.time_s()
    if not clock.synced(epoch_s):
        return ""
    parts = []
    left = cap
    for d in range(days):
        path = daily_path(epoch_s - d * 86400)
        size = fs.size(path)
        if not size:
            continue
        head = "### %s%s (%s)\n" % (path[-13:-3], " today" if d == 0 else "", path)
        room = left - len(head) - 1
        if room < 64:
            break
        try:
            if size <= room:
                body = fs.read_text(path, size)[0]
            else:
                body = _tail_text(path, size, room)
        except (ValueError, OSError):  # not UTF-8, or gone since the size was taken
            body = "[unreadable: %s]" % path
        if not body.endswith("\n"):
            body += "\n"
        parts.append(head)
        parts.append(body)
        left -= len(head) + len(body.encode())
    return "".join(parts)
