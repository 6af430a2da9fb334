"""The system prompt: assembled each turn into one ``bytearray`` allocated once.

Sections in a fixed order (../shared/DESIGN.md, "Context"), each with a byte cap:

    1 rules   static, our own words                    CONTEXT_RULES_MAX_BYTES (3 KB)
    2 soul    /data/config/SOUL.md                     CONTEXT_SOUL_MAX_BYTES
    3 user    /data/config/USER.md                     CONTEXT_USER_MAX_BYTES
    4 memory  /data/memory/MEMORY.md                   CONTEXT_MEMORY_MAX_BYTES (4 KB)
    5 notes   daily notes, last 3 days, newest first   CONTEXT_NOTES_MAX_BYTES (4 KB)
    6 skills  title + first paragraph of each skill    CONTEXT_SKILLS_MAX_BYTES (2 KB)
    7 now     channel, chat, local time, mode, notes on continuation and changes
    8 extra   what this message adds (hardware notes): the rest of the buffer

From MiniClaw's ACE engine (seed 001), fitted to bytes: the time-of-day mode adds a
one-line hint and shifts section priorities; when the buffer is short the lowest
priority section is cut first, and one given less than ``CONTEXT_MIN_SECTION_BYTES`` is
left out with a pointer to its file; a conversation counts as continued when today's
note is over ``CONTEXT_CONTINUE_MIN_BYTES`` and was written within
``CONTEXT_CONTINUE_WINDOW_S``; a line says when SOUL.md, USER.md or MEMORY.md changed
since the last turn (content hash of what the prompt holds).

Files are read straight into the buffer (no copy); a cut falls on a UTF-8 character
boundary and is marked. Every write goes through ``_put``, which cannot pass the end of
the buffer, whatever the files hold.

The static rules are ``rules.md`` beside this module (deploy it with the package); if
it is missing a one-line rule stands in and a warning is logged.
"""
import hashlib

from mimi import clock, config, log, seam
from mimi.storage import fs, memory, skills

# The static rules (section 1) ship next to this module and are read straight into the
# buffer each turn: no heap at import, and no tool can reach them (they are not in /data).
_RULES_PATH = __file__.rsplit("/", 1)[0] + "/rules.md"
_RULES_MISSING = (b"# Who you are\nYou are mimi, a personal assistant on an ESP32-S3 board. Be brief; "
                  b"read before you write; save what matters in /data/memory/MEMORY.md.\n")


_HINT = {
    "morning": "Morning: a short plan for the day may be welcome; yesterday's note is below.",
    "work": "Working hours: be brief and practical.",
    "break": "Break time: keep it light.",
    "evening": "Evening: a good moment to tidy today's note and move lasting facts to MEMORY.md.",
    "night": "Night: keep replies short; leave non-urgent things for the morning.",
}

# Sections that may be cut, highest priority first, per mode; the rules and the turn
# block are never left out. Morning ranks yesterday's note over the skills; break and
# night give up the skills index first.
_KEEP_DAY = ("soul", "user", "memory", "skills", "notes")
_KEEP_NOTES = ("soul", "user", "memory", "notes", "skills")
_NOTES_FIRST = ("morning", "break", "night")

TAG = "ctx"
_ROOM = b"\n[cut for room]"
_CUT = "\n[cut at byte %d of %d: read_file %s offset=%d for the rest]"
_RESERVE = 240  # room kept for the lines the turn block learns while writing
_NAMES = {"soul": "SOUL.md", "user": "USER.md", "memory": "MEMORY.md"}


class Context:
    """The system prompt buffer. ``Context(size)`` allocates it once (call at init, early)."""

    def __init__(self, size=None):
        self.size = size or config.AGENT_CONTEXT_BYTES
        self.buf = bytearray(self.size)
        self.mv = memoryview(self.buf)
        self.n = 0
        self._hash = {}  # section -> digest at the last turn
        self.last = {}  # section -> bytes it took in the last build (0: left out)

    def view(self):
        """The prompt of the last ``build``: ``memoryview`` of ``n`` bytes (UTF-8)."""
        return self.mv[:self.n]

    # -- writing -------------------------------------------------------------------

    def _put(self, data):
        """Copy ``data`` at the write position; never past the end. Returns bytes written."""
        k = len(data)
        room = self.size - self.n
        if k > room:
            k = fs.utf8_end(data, room)
            data = memoryview(data)[:k]
        self.mv[self.n:self.n + k] = data
        self.n += k
        return k

    def _nl(self):
        """End the section with one newline (not two when its text already ends in one)."""
        if self.n and self.buf[self.n - 1] != 10:
            self._put(b"\n")

    def _text(self, head, data, give, mark):
        """Write ``head`` then ``data`` (bytes) in at most ``give`` bytes, cut with ``mark``."""
        room = give - len(head) - 1
        if room <= 0:
            return
        self._put(head)
        if len(data) <= room:
            self._put(data)
        else:
            end = fs.utf8_end(data, max(0, room - len(mark)))
            self._put(memoryview(data)[:end])
            self._put(mark)
        self._nl()

    def _parts(self, head, parts, give):
        """Like ``_text`` for a list of byte strings (the recent notes), without joining them."""
        room = give - len(head) - 1
        if room <= 0:
            return
        self._put(head)
        stop = self.n + room
        for p in parts:
            if self.n + len(p) > stop:
                end = fs.utf8_end(p, max(0, stop - len(_ROOM) - self.n))
                self._put(memoryview(p)[:end])
                self._put(_ROOM)
                break
            self._put(p)
        self._nl()

    def _fill(self, f, stop):
        """Read from file ``f`` into the buffer up to ``stop``; then close ``f``."""
        try:
            while self.n < stop:
                k = f.readinto(self.mv[self.n:stop])
                if not k:
                    break
                self.n += k
        finally:
            f.close()

    def _file(self, head, path, size, cap, give):
        """Read ``path`` (``size`` bytes) straight into the buffer after ``head``, within ``give``."""
        room = min(give - len(head) - 1, cap)
        if room <= 0:
            return 0, 0
        self._put(head)
        start = self.n
        take = size if size <= room else max(0, room - len(_CUT % (size, size, path, size)))
        real = 0
        try:
            f, real = fs.open_read(path)
            self._fill(f, min(start + take, self.size))
        except (OSError, ValueError):
            pass
        end = fs.utf8_end(self.mv[start:self.n], self.n - start)
        self.n = start + end
        if real > end:
            self._put((_CUT % (end, real, path, end)).encode())
        self._nl()
        return start, start + end

    def _rules(self, cap):
        """Section 1: ``rules.md`` read into the start of the buffer (at most ``cap`` bytes)."""
        try:
            f = open(_RULES_PATH, "rb")
        except OSError:
            log.warn(TAG, "%s is missing: using a one-line rule", _RULES_PATH)
            self._put(_RULES_MISSING)
            return
        self._fill(f, cap)
        self.n = fs.utf8_end(self.mv[:self.n], self.n)

    # -- building ------------------------------------------------------------------

    def build(self, msg, extra=None, now_s=None):
        """Write the system prompt for inbound ``msg``; return its length in bytes.

        ``msg``: the bus message (``channel``, ``chat_id``, ``session``). ``extra``: str, or a
        function ``fn(room_bytes) -> str`` so hardware retrieval can fill exactly the room
        left (``mimi.hw.retrieval.for_message(text, budget)``). ``now_s``: for tests.
        Reads SOUL.md, USER.md, MEMORY.md, the recent notes and the skills index; writes
        nothing on flash. Never raises for missing or odd files (they are skipped).
        """
        now = seam.time_s() if now_s is None else now_s
        synced = clock.synced(now)
        mode = clock.mode(clock.local(now)[3]) if synced else None
        keep = _KEEP_NOTES if mode in _NOTES_FIRST else _KEEP_DAY

        files = {}
        for key, path, cap in (("soul", config.SOUL_PATH, config.CONTEXT_SOUL_MAX_BYTES),
                               ("user", config.USER_PATH, config.CONTEXT_USER_MAX_BYTES),
                               ("memory", config.MEMORY_PATH, config.CONTEXT_MEMORY_MAX_BYTES)):
            files[key] = (path, fs.size(path) or 0, cap)
        notes = memory.recent_parts(cap=config.CONTEXT_NOTES_MAX_BYTES, epoch_s=now)
        notes_len = 0
        for part in notes:
            notes_len += len(part)
        try:
            index = skills.index(config.CONTEXT_SKILLS_MAX_BYTES).encode()
        except (OSError, ValueError):
            index = b""
        turn = self._turn(msg, now, synced, mode)

        heads = {"soul": b"\n# Personality (/data/config/SOUL.md)\n",
                 "user": b"\n# About the owner (/data/config/USER.md)\n",
                 "memory": b"\n# Long-term memory (/data/memory/MEMORY.md)\n",
                 "notes": b"\n# Recent daily notes\n",
                 "skills": b"\n# Your skills\n"}
        want = {}
        for key in files:
            size = files[key][1]
            want[key] = len(heads[key]) + min(size, files[key][2]) + 1 if size else 0
        want["notes"] = len(heads["notes"]) + notes_len + 1 if notes else 0
        want["skills"] = len(heads["skills"]) + len(index) + 1 if index else 0

        self.n = 0
        self._rules(min(config.CONTEXT_RULES_MAX_BYTES, self.size))
        last = self.last
        last["rules"] = self.n
        left = self.size - self.n - len(turn) - _RESERVE
        give = {}
        dropped = []
        for key in keep:
            w = want[key]
            g = w if w <= left else max(0, left)
            if g < w and g < config.CONTEXT_MIN_SECTION_BYTES:
                g = 0
                dropped.append(key)
            give[key] = g
            left -= g

        changed = []
        for key in ("soul", "user", "memory"):
            path, size, cap = files[key]
            at = self.n
            if give[key]:
                s, e = self._file(heads[key], path, size, cap, give[key])
                h = hashlib.sha256(self.mv[s:e])
                h.update(str(size).encode())
                d = h.digest()
                if key in self._hash and self._hash[key] != d:
                    changed.append(_NAMES[key])
                self._hash[key] = d
            last[key] = self.n - at
        notes_path = memory.daily_path(now) if synced else ""
        at = self.n
        if give["notes"]:
            self._parts(heads["notes"], notes, give["notes"])
        last["notes"] = self.n - at
        at = self.n
        if give["skills"]:
            self._text(heads["skills"], index, give["skills"], _ROOM)
        last["skills"] = self.n - at
        notes = index = None

        at = self.n
        self._put(turn)
        self._put(self._late_lines(changed, dropped, files, notes_path).encode())
        last["now"] = self.n - at

        at = self.n
        if extra is not None:
            room = self.size - self.n - 2
            if callable(extra):
                extra = extra(room) if room > 0 else ""
            if extra:
                self._text(b"\n# For this message\n", extra.encode(), room + 1, _ROOM)
        last["extra"] = self.n - at
        return self.n

    def _turn(self, msg, now, synced, mode):
        ch = msg.get("channel", "?")
        lines = ["\n# This turn",
                 "Channel: %s, chat %s (session %s)" % (ch, msg.get("chat_id", "?"), msg.get("session", "?"))]
        if ch in ("cron", "heartbeat"):
            lines.append("This message comes from the %s, not from a person: act on it, and use "
                         "send_message if the owner should hear about it." % ("scheduler" if ch == "cron" else "heartbeat"))
        if synced:
            lines.append("Local time: %s. %s" % (clock.describe(now), _HINT[mode]))
            path = memory.daily_path(now)
            lines.append("Today's note: %s. %s" % (path, self._continuation(path, now)))
        else:
            lines.append("Local time: unknown, the clock is not synced yet. Do not guess the date "
                         "and do not write a daily note until get_current_time gives one.")
        return ("\n".join(lines) + "\n").encode()

    def _continuation(self, path, now):
        size = fs.size(path) or 0
        t = fs.mtime(path) if size else None
        if size > config.CONTEXT_CONTINUE_MIN_BYTES and t is not None and 0 <= now - t <= config.CONTEXT_CONTINUE_WINDOW_S:
            return "The conversation continues (the note was written %d min ago)." % ((now - t) // 60)
        return "A fresh start: nothing written in the last %d min." % (config.CONTEXT_CONTINUE_WINDOW_S // 60)

    def _late_lines(self, changed, dropped, files, notes_path):
        out = []
        if changed:
            out.append("Changed since the last turn: %s." % ", ".join(changed))
        if dropped:
            where = []
            for key in dropped:
                if key in files:
                    where.append(files[key][0])
                elif key == "notes":
                    where.append("memory_search / " + (notes_path or config.MEMORY_DIR))
                else:
                    where.append("list_dir /data/skills")
            out.append("Left out for room: %s." % ", ".join(where))
        return "".join(s + "\n" for s in out)[:_RESERVE]
