"""The system prompt: assembled each turn into one ``bytearray`` allocated once.

Sections in a fixed order (../shared/DESIGN.md, "Context"), each with a byte cap:

    1 rules   static, our own words                    CONTEXT_RULES_MAX_BYTES (3 KB)
    2 soul    /data/config/SOUL.md                     CONTEXT_SOUL_MAX_BYTES
    3 user    /data/config/USER.md                     _CONTEXT_USER_MAX_BYTES
    4 memory  /data/memory/MEMORY.md                   CONTEXT_MEMORY_MAX_BYTES (4 KB)
    5 notes   daily notes, last 3 days, newest first   CONTEXT_NOTES_MAX_BYTES (4 KB)
    6 skills  title + first paragraph of each skill    CONTEXT_SKILLS_MAX_BYTES (2 KB)
    7 now     channel, chat, local time, mode, notes on continuation and changes
    7b earlier the chat's summary of what left the window (mimi.agent.compact), when given
    8 extra   what this message adds (hardware notes): the rest of the buffer

From MiniClaw's ACE engine (seed 001), fitted to bytes: the time-of-day mode adds a
one-line hint and shifts section priorities; when the buffer is short the lowest
priority section is cut first, and one given less than ``_CONTEXT_MIN_SECTION_BYTES`` is
left out with a pointer to its file; a conversation counts as continued when today's
note is over ``_CONTEXT_CONTINUE_MIN_BYTES`` and was written within
``_CONTEXT_CONTINUE_WINDOW_S``; a line says when SOUL.md, USER.md or MEMORY.md changed
since the last turn (content hash of what the prompt holds).

Files are read straight into the buffer (no copy); a cut falls on a UTF-8 character
boundary and is marked. Every write goes through ``_put`` or ``_fill``, which cannot
pass the end of the buffer, whatever the files hold.

The static rules are ``rules.md`` beside this module, and the sentences of the turn
block (time-of-day hints, the cron and heartbeat notes, continuation) are the lines of
``turn.md`` there: long fixed text stays off the heap. Deploy both with the package; if
``rules.md`` is missing a one-line rule stands in, if ``turn.md`` is, its sentences are
left out (a warning is logged either way).
"""
import hashlib

from micropython import const

from mimi import clock, config, data_path, log, policy, seam
from mimi.storage import fs, memory, skills

# Tunables (config.py holds those shared by several modules and the settings).
_CONTEXT_USER_MAX_BYTES = const(1024)
_CONTEXT_MIN_SECTION_BYTES = const(160)  # a section given less room than this is left out
_CONTEXT_CONTINUE_WINDOW_S = const(1800)  # today's note written this recently: continued
_CONTEXT_CONTINUE_MIN_BYTES = const(100)

# The static rules (section 1) ship next to this module and are read straight into the
# buffer each turn: no heap at import, and no tool can reach them (they are not in /data).
_RULES_PATH = data_path(__file__, "rules.md")
_RULES_MISSING = const(b"# Who you are\nYou are mimi, a personal assistant on a small board. Be brief.\n")
# The sentences of the turn block (section 7), by key: same place, same reasons.
_TURN_PATH = data_path(__file__, "turn.md")
_OTHERS_PATH = data_path(__file__, "others.md")  # the sentence for a chat other than the owner's

_TAG = const("ctx")
_ROOM = const(b"\n[cut for room]")
_CUT = const("\n[cut at byte %d of %d: read_file %s offset=%d for the rest]")
_RESERVE = const(240)  # room kept for the lines the turn block learns while writing
_EARLIER = const("\n# Earlier in this chat (a summary of what is no longer in the messages)\n")


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

    def _put(self, data):
        """Copy ``data`` at the write position; never past the end (cut at a character)."""
        k = len(data)
        if k > self.size - self.n:
            k = fs.utf8_end(data, self.size - self.n)
            data = memoryview(data)[:k]
        self.mv[self.n:self.n + k] = data
        self.n += k

    def _fill(self, f, stop):
        """Read from file ``f`` into the buffer up to ``stop`` (then back to a character
        boundary); close ``f``."""
        start = self.n
        try:
            while self.n < stop:
                k = f.readinto(self.mv[self.n:stop])
                if not k:
                    break
                self.n += k
        finally:
            f.close()
        self.n = start + fs.utf8_end(self.mv[start:self.n], self.n - start)

    def _section(self, head, body, give, size):
        """Write ``head`` and ``body`` in at most ``give`` bytes, ending in a newline.

        ``body``: a file's device path (``size`` bytes, read straight into the buffer; a
        cut says where the rest is) or a list of byte strings (a cut says ``[cut for
        room]``). Returns the start and end of the body in the buffer.
        """
        stop = self.n + give - 1
        if stop <= self.n + len(head):
            return self.n, self.n  # no room for any of it
        self._put(head)
        s = self.n
        if isinstance(body, str):
            mark = len(_CUT % (size, size, body, size))  # the largest the mark can be
            total = 0
            try:
                f, total = fs.open_read(body)
                self._fill(f, s + (total if total <= stop - s else max(0, stop - s - mark)))
            except (OSError, ValueError):
                pass
            e = self.n
            v = self.mv[s:e]
            b = fs.utf8_fix(v)
            if b is not v:  # the request must be UTF-8: one bad byte would fail every chat
                self.mv[s:e] = b
                log.warn(_TAG, "%s is not UTF-8 text: bad bytes sent as ?", body)
            v = b = None
            if total > e - s:
                self._put((_CUT % (e - s, total, body, e - s)).encode())
        else:
            for p in body:
                if self.n + len(p) > stop:
                    self._put(memoryview(p)[:fs.utf8_end(p, max(0, stop - len(_ROOM) - self.n))])
                    self._put(_ROOM)
                    break
                self._put(p)
            e = self.n
        if self.buf[self.n - 1] != 10:
            self._put(b"\n")
        return s, e

    def build(self, msg, extra=None, now_s=None, summary=None):
        """Write the system prompt for inbound ``msg``; return its length in bytes.

        ``msg``: the bus message (``channel``, ``chat_id``, ``session``). ``extra``: str, or a
        function ``fn(room_bytes) -> str`` so hardware retrieval can fill exactly the room
        left (``mimi.hw.retrieval.for_message(text, budget)``). ``summary``: the chat's
        summary (str, ``mimi.agent.compact`` caps it), written after the turn block; its room
        is taken before sections 2-6 get theirs. ``now_s``: for tests.
        Reads SOUL.md, USER.md, MEMORY.md, the recent notes and the skills index (a chat
        other than the owner's gets its own notes file instead of the owner's memory, and
        no profile or daily notes, unless the owner shares them: ``mimi.policy``); writes
        nothing on flash. Never raises for missing or odd files (they are skipped); bytes
        that are not UTF-8 go in as ``?`` and the file is named in a warning.
        """
        now = seam.time_s() if now_s is None else now_s
        mode = clock.mode(clock.local(now)[3]) if clock.synced(now) else None
        today = memory.daily_path(now) if mode else ""
        try:
            index = skills.index(config.CONTEXT_SKILLS_MAX_BYTES).encode()
        except (OSError, ValueError):
            index = b""
        # Sections 2-6 in the order they are written: (key, heading, file path or byte
        # strings, size of the file, bytes wanted).
        secs = []
        own = policy.memory_dir(msg) == config.MEMORY_DIR  # the owner's memory and profile: the owner's, or shared
        mpath = config.MEMORY_PATH if own else policy.memory_dir(msg) + "/MEMORY.md"
        for key, head, body, cap in (
                ("soul", b"\n# Personality (/data/config/SOUL.md)\n", config.SOUL_PATH, config.CONTEXT_SOUL_MAX_BYTES),
                ("user", b"\n# About the owner (/data/config/USER.md)\n", config.USER_PATH if own else [],
                 _CONTEXT_USER_MAX_BYTES if own else 0),
                ("memory", b"\n# Long-term memory (/data/memory/MEMORY.md)\n" if own else
                 ("\n# This chat's notes (%s)\n" % mpath).encode(), mpath, config.CONTEXT_MEMORY_MAX_BYTES),
                ("notes", b"\n# Recent daily notes\n",
                 memory.recent_parts(cap=config.CONTEXT_NOTES_MAX_BYTES, epoch_s=now) if own else [], 0),
                ("skills", b"\n# Your skills\n", [index] if index else [], 0)):
            size = n = 0
            if cap:
                size = fs.size(body) or 0
                n = min(size, cap)
            else:
                for p in body:
                    n += len(p)
            secs.append((key, head, body, size, len(head) + n + 1 if n else 0))
        turn = _turn(msg, now, mode, today)
        earlier = (_EARLIER + summary.strip() + "\n").encode() if summary else b""

        self.n = 0
        try:
            self._fill(open(_RULES_PATH, "rb"), min(config.CONTEXT_RULES_MAX_BYTES, self.size))
        except OSError:
            log.warn(_TAG, "%s is missing: using a one-line rule", _RULES_PATH)
            self._put(_RULES_MISSING)
        last = self.last
        last["rules"] = self.n

        # Room by priority; the lowest goes first. Morning, break and night rank the
        # recent notes over the skills index.
        left = self.size - self.n - len(turn) - _RESERVE - len(earlier)
        give = [0] * 5
        dropped = []
        for i in (0, 1, 2, 3, 4) if mode in ("morning", "break", "night") else (0, 1, 2, 4, 3):
            w = secs[i][4]
            g = w if w <= left else max(0, left)
            if g < w and g < _CONTEXT_MIN_SECTION_BYTES:
                g = 0
                dropped.append(secs[i][2] if i < 3 else "list_dir /data/skills" if i == 4 else
                               "memory_search / " + (today or config.MEMORY_DIR))
            give[i] = g
            left -= g

        changed = []
        for i in range(5):
            key, head, body, size, _ = secs[i]
            at = self.n
            if give[i]:
                s, e = self._section(head, body, give[i], size)
                if i < 3:  # a note when SOUL.md, USER.md or MEMORY.md changed since the last turn
                    h = hashlib.sha256(self.mv[s:e])
                    h.update(str(size).encode())
                    d = h.digest()
                    k = key if body != mpath or own else body  # a chat's own notes: their own digest
                    if self._hash.get(k, d) != d:
                        changed.append(body[body.rfind("/") + 1:])
                    self._hash[k] = d
            last[key] = self.n - at
        secs = index = None

        at = self.n
        self._put(turn)
        late = ""
        if changed:
            late = "Changed since the last turn: %s.\n" % ", ".join(changed)
        if dropped:
            late += "Left out for room: %s.\n" % ", ".join(dropped)
        self._put(late[:_RESERVE].encode())
        last["now"] = self.n - at
        at = self.n
        self._put(earlier)
        last["earlier"] = self.n - at
        earlier = None

        at = self.n
        if extra is not None:
            room = self.size - self.n - 2
            if callable(extra):
                extra = extra(room) if room > 0 else ""
            if extra:
                self._section(b"\n# For this message\n", [extra.encode()], room + 1, 0)
        last["extra"] = self.n - at
        return self.n


def _turn(msg, now, mode, today):
    """Section 7 as bytes: channel, chat, local time and mode (with its hint), today's note
    and whether the conversation continues. The sentences are the lines of ``turn.md``."""
    try:
        with open(_TURN_PATH, "rb") as f:
            # its size, not a fixed 2 KB: read(n) takes n bytes of heap in one run, mid-turn
            n = f.seek(0, 2)
            f.seek(0)
            lines = f.read(min(n, 2048))  # its first line is a comment: every key follows a newline
    except OSError:
        log.warn(_TAG, "%s is missing", _TURN_PATH)
        lines = b""
    ch = msg.get("channel", "?")
    out = "\n# This turn\nChannel: %s, chat %s (session %s)\n" % (ch, msg.get("chat_id", "?"), msg.get("session", "?"))
    if ch in ("cron", "heartbeat"):
        out += _say(lines, ch) + "\n"
    if policy.role(msg):  # not the owner's turn: its sentence is in others.md, read only then
        a = policy.area(msg)
        try:
            with open(_OTHERS_PATH, "rb") as f:
                other = f.read(1024)
        except OSError:
            other = b""
        out += _say(other, "not_owner_shared" if policy.memory_dir(msg) == config.MEMORY_DIR else "not_owner_chat",
                    a, a) + "\n"
    if not mode:
        return (out + _say(lines, "unsynced") + "\n").encode()
    size = fs.size(today) or 0
    t = fs.mtime(today) if size else None
    win = _CONTEXT_CONTINUE_WINDOW_S
    if size > _CONTEXT_CONTINUE_MIN_BYTES and t is not None and 0 <= now - t <= win:
        cont = _say(lines, "continues", (now - t) // 60)
    else:
        cont = _say(lines, "fresh", win // 60)
    return (out + "Local time: %s. %s\nToday's note: %s. %s\n" % (
        clock.describe(now), _say(lines, mode), today, cont)).encode()


def _say(lines, key, *args):
    """The text after ``key: `` on its line of turn.md, with ``args`` filled in ('' when
    there is no such line)."""
    i = lines.find(("\n%s: " % key).encode())
    if i < 0:
        return ""
    i += len(key) + 3
    j = lines.find(b"\n", i)
    text = lines[i:j if j >= 0 else len(lines)].decode()
    return text % args if args and "%" in text else text
