"""Chat history: ``/data/sessions/<key>.jsonl``, one message per line, append-only.

Messages are in the internal form of docs/internals.md ("Messages"). The whole history
stays on flash for the model to ``read_file`` later; a request carries only the last
``_AGENT_HISTORY_MSGS`` of it.
- ``load`` reads back from the end of the file in ``FS_CHUNK_BYTES`` blocks (seek), so
  its cost does not grow with the file. A line of any length is found; one over
  ``SESSION_LINE_MAX_BYTES`` stays on flash and the window gets a short message saying
  where it is. A torn last line (power cut during an append) and malformed lines are
  skipped and counted in ``report``, never fatal.
- The window is repaired (``repair``): it starts with a user message, holds no tool
  result without its call, no duplicate tool call ids, and a call left unanswered gets
  an error result, so an API never sees an exchange it rejects (a 400 for ever after is
  a known failure in peers).
- Tool results are stored cut to ``SESSION_TOOL_RESULT_MAX_BYTES``, and a tool call's
  arguments to about ``_SESSION_TOOL_ARGS_MAX_BYTES``.
- A file past ``SESSION_ROTATE_BYTES`` moves to ``/data/sessions/archive/<key>.<n>.jsonl``
  (``n`` grows; at most ``SESSION_ARCHIVES_MAX`` kept) and the fresh file starts with
  the last messages, so the conversation carries on. ``clear`` archives without carry.
- Cron and heartbeat chats have their own keys (``cron_<id>``, ``hb_<id>``).
- A turn the model refused is kept out of later windows (the agent appends a marker line
  ``{"role": "forget"}`` after it; ``load`` skips the turn before a marker, its question
  included): the providers say to remove the refused turn, or every later turn is refused
  too (Anthropic, "Streaming refusals"). The file still holds it.
- A chat's summary (``mimi.agent.compact``) lives beside its file,
  ``/data/sessions/<key>.summary.json``; ``clear`` and ``delete`` remove it.
- The window of the chat loaded last is kept in RAM between its turns and grows with its
  appends, so the next ``load`` of that chat reads nothing from flash (each message is
  still written to flash as it happens). The messages ``load`` returns are that window's:
  callers must not change them (the agent adds its own new messages only).
"""
import json

from micropython import const

from mimi import config, log, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_AGENT_HISTORY_MSGS = const(20)  # messages of history sent with each request
_SESSION_CARRY_MSGS = const(20)  # messages copied into the fresh file at a rotation
_SESSION_WINDOW_MAX_BYTES = const(24576)  # JSON bytes of history one load may hold
_SESSION_TOOL_ARGS_MAX_BYTES = const(1024)  # a tool call's arguments are stored cut to about this

_TAG = const("session")
_SUFFIX = const(".jsonl")
_KEY_MAX = const(40)

_lock = seam.allocate_lock()
_tail = [None, 0]  # the file this module appended to last, and its size then (ends with a newline)
# The window of the chat loaded last, kept between its turns (issue 17: reloading and
# parsing it from flash every turn was a tenth of a turn's CPU): its file, the size of it
# file that the window reflects, and [(message, line bytes)] oldest first, at most the
# 2 * _AGENT_HISTORY_MSGS that a load can reach. ``append`` adds to it; any other change
# of the file (rotation, clear, an edit by hand: the size no longer matches) drops it.
_win = [None, 0, []]  # the entries are (message, line bytes, line's byte offset in the file)
report = {"torn": 0, "malformed": 0, "oversize": 0, "repaired": 0, "start": 0}  # the last load; start: its
# first message's byte offset in the file (0 for none)
_FORGET = const("forget")  # the role of the marker line after a refused turn
_path = [(None, None)]  # (key, path) that path_for made last


def _safe(text):
    for c in seam.as_bytes(text):  # bytes, not characters: see fs.check
        if not (97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57 or c == 45 or c == 95):
            break
    else:
        return text  # already safe: every session path comes here
    out = []
    for ch in text:
        out.append(ch if ("a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch in "-_") else "_")
    return "".join(out)


def key_for(channel, chat_id):
    """Session key for a chat: ``("telegram", 123)`` -> ``"tg_123"``.

    Cron and heartbeat get ``cron_`` / ``hb_`` keys apart from people's chats. Characters
    outside ``[A-Za-z0-9_-]`` become ``_``.
    """
    # telegram and heartbeat are shortened; others (cli, cron) keep their name; a Feishu
    # chat id names its channel already ("fs_ou_...": the key is the id), as a LAN gateway
    # chat's does ("ws_<its chat_id>", mimi.web.gateway)
    if not isinstance(chat_id, str):  # MicroPython's str() of a str is a copy (issue 17)
        chat_id = str(chat_id)
    if channel == "feishu" or channel == "gateway":
        return _safe(chat_id)[:_KEY_MAX]
    prefix = "tg" if channel == "telegram" else "hb" if channel == "heartbeat" else _safe(str(channel))[:8]
    return (prefix + "_" + _safe(chat_id))[:_KEY_MAX]


def path_for(key):
    """``/data/sessions/<key>.jsonl``; ``ValueError`` for a key ``key_for`` would not make."""
    last = _path[0]
    if key == last[0]:  # this turn's chat again: a turn asks a dozen times (issue 17)
        return last[1]
    if not key or len(key) > _KEY_MAX or _safe(key) != key:
        raise ValueError("bad session key: %r" % (key,))
    p = config.SESSIONS_DIR + "/" + key + _SUFFIX
    _path[0] = (key, p)  # one tuple, replaced whole: safe from two threads
    return p


def summary_path(key):
    """``/data/sessions/<key>.summary.json``: the chat's summary (``mimi.agent.compact``)."""
    return path_for(key)[:-len(_SUFFIX)] + ".summary.json"


def summary(key):
    """Chat ``key``'s summary as ``mimi.agent.compact`` writes it: ``{"text", "upto",
    "gen"}`` (the text given to each turn, the byte offset it covers up to, the file's
    generation then); ``{"text": ""}`` when there is none or it is damaged."""
    try:
        d = json.loads(fs.read(summary_path(key), 3072)[0])
        if isinstance(d, dict) and isinstance(d.get("text"), str):
            return d
    except (OSError, ValueError):  # none yet, or damaged: none
        pass
    return {"text": ""}


def keys():
    """Keys of the sessions on flash (archives not included), sorted."""
    try:
        entries = fs.listdir(config.SESSIONS_DIR)
    except fs.NotFound:
        return []
    return [e[0][:-6] for e in entries if not e[1] and e[0].endswith(_SUFFIX)]


def append(key, msg):
    """Add ``msg`` (a dict in the internal form) at the end of the session ``key``.

    The stored copy gets a ``ts`` when it has none, and a tool result is cut to
    ``SESSION_TOOL_RESULT_MAX_BYTES`` (marked). Side effects: writes
    ``/data/sessions/<key>.jsonl``; a torn last line left by a power cut is closed with a
    newline first, so this message stands on its own line; past ``SESSION_ROTATE_BYTES``
    the file is archived first (see the module note).
    """
    m = dict(msg)
    if "ts" not in m:
        m["ts"] = seam.time_s()
    if m.get("role") == "tool":
        c = m.get("content")
        c = "" if c is None else c if isinstance(c, str) else str(c)
        b = c.encode()
        cap = config.SESSION_TOOL_RESULT_MAX_BYTES
        if len(b) > cap:
            mark = "\n[result cut to %d bytes in history]" % cap
            c = b[:fs.utf8_end(b, cap - len(mark))].decode() + mark
        m["content"] = c
    elif m.get("tool_calls") and isinstance(m["tool_calls"], list):
        # Arguments over the cap: each long value cut (marked), so one call cannot fill the file and force rotations; the tool got them whole.
        calls = []
        cap = _SESSION_TOOL_ARGS_MAX_BYTES
        for c in m["tool_calls"]:
            args = c.get("input") if isinstance(c, dict) else None
            if isinstance(args, dict) and len(json.dumps(args)) > cap:
                each = max(64, cap // max(1, len(args)))
                cut = {}
                for k in args:
                    v = args[k]
                    b = json.dumps(v)
                    if len(b) > each:  # a text cut; a list or an object as its JSON text, cut
                        raw = (v if isinstance(v, str) else b).encode()
                        mark = "\n[cut to %d of %d bytes in history]" % (each, len(raw))
                        v = raw[:fs.utf8_end(raw, max(0, each - len(mark)))].decode() + mark
                    cut[k] = v
                c = dict(c)
                c["input"] = cut
            calls.append(c)
        m["tool_calls"] = calls
    line = json.dumps(m, separators=(",", ":")) + "\n"
    p = path_for(key)
    with _lock:
        size = fs.size(p)
        if size and size + len(line) > config.SESSION_ROTATE_BYTES:
            _rotate(key, _SESSION_CARRY_MSGS)
            size = fs.size(p)
        if size and not (_tail[0] == p and _tail[1] == size):  # not as our last append left it
            f, _ = fs.open_read(p)
            try:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    line = "\n" + line
            finally:
                f.close()
        _tail[0] = None  # unknown until the write is done
        w = _win
        rp = seam.real_path(p)  # the file itself: tests point the firmware at other flash folders
        keep = w[0] == rp and w[1] == (size or 0) and line[0] != "\n"
        w[0] = None  # unknown until the write is done
        fs.append(p, line)
        ln = len(seam.as_bytes(line)) - 1  # the line's bytes without its newline, as load counts them
        # the size the append left, counted rather than asked of the file system (issue 17);
        # the next append's stat still sees any other change of the file
        _tail[0], _tail[1] = p, (size or 0) + ln + 1
        if keep and ln <= config.SESSION_LINE_MAX_BYTES:  # else load shows a stand-in: read it from flash
            got = w[2]
            got.append((m, ln, size or 0))  # the stored copy (JSON's own types: what load would parse back)
            if len(got) > 2 * _AGENT_HISTORY_MSGS:
                del got[0]
            w[0], w[1] = rp, _tail[1]


def clear(key):
    """Start the session afresh: the file moves to the archive (still readable). Returns
    the archive's path, or None when there was nothing to keep."""
    with _lock:
        try:
            fs.remove(summary_path(key))
        except fs.NotFound:
            pass
        return _rotate(key, 0)


def delete(key):
    """Remove session ``key`` and its archives for good (a removed cron job's). Returns the
    number of files removed."""
    n = 0
    with _lock:
        _win[0] = None
        for p in (summary_path(key), path_for(key)):
            try:
                fs.remove(p)
                n += p[-6:] == _SUFFIX
            except fs.NotFound:
                pass
        for num in _archive_nums(key):
            fs.remove("%s/%s.%d.jsonl" % (config.SESSION_ARCHIVE_DIR, key, num))
            n += 1
    return n


def _archive_nums(key):
    """The numbers of ``key``'s archives, lowest (oldest) first."""
    try:
        entries = fs.listdir(config.SESSION_ARCHIVE_DIR)
    except fs.NotFound:
        return []
    nums = []
    for name, _, _ in entries:
        mid = name[len(key) + 1:-6]
        if name.startswith(key + ".") and name.endswith(_SUFFIX) and mid.isdigit():
            nums.append(int(mid))
    nums.sort()
    return nums


def _rotate(key, carry):
    """Move the session file to the next archive number; the fresh file starts with the
    last ``carry`` complete lines (within ``_SESSION_WINDOW_MAX_BYTES``), byte for byte.
    Prunes archives past ``SESSION_ARCHIVES_MAX``. Returns the archive's path or None."""
    _win[0] = None
    p = path_for(key)
    size = fs.size(p)
    if not size:
        return None
    start = None
    end = 0
    if carry:
        f, size = fs.open_read(p)
        try:
            for s, e in _spans(f, size):
                if not end:
                    if e == size and s < e:
                        continue  # an unterminated last line is not carried
                    end = e + 1 if e < size else e
                if s == e:
                    continue
                if end - s > _SESSION_WINDOW_MAX_BYTES:
                    break
                start = s
                carry -= 1
                if not carry:
                    break
        finally:
            f.close()
    adir = config.SESSION_ARCHIVE_DIR
    nums = _archive_nums(key)
    arch = "%s/%s.%d.jsonl" % (adir, key, nums[-1] + 1 if nums else 1)
    fs.rename(p, arch)
    # The oldest go before the carry is copied: on a full flash that frees the room for it.
    # A job's own talk (cron_, hb_) keeps one archive: it runs unattended, often.
    keep = 1 if key[:5] == "cron_" or key[:3] == "hb_" else config.SESSION_ARCHIVES_MAX
    while len(nums) >= keep:
        fs.remove("%s/%s.%d.jsonl" % (adir, key, nums.pop(0)))
    # A cut here leaves no current file: the next load starts empty, nothing is lost.
    if start is not None:
        fs.copy(arch, p, start, end)
    log.info(_TAG, "%s: %d bytes archived to %s", key, size, arch)
    return arch


def _spans(f, size):
    """Yield ``(start, end)`` byte offsets of each line of ``f``, last line first.

    ``end`` excludes the newline. Reads ``FS_CHUNK_BYTES`` blocks backwards from the end;
    the caller may seek and read between items.
    """
    blk = config.FS_CHUNK_BYTES
    buf = bytearray(blk)
    mv = memoryview(buf)
    pos = end = size
    while pos > 0:
        start = max(0, pos - blk)
        n = pos - start
        f.seek(start)
        got = 0
        while got < n:
            k = f.readinto(mv[got:n])
            if not k:
                raise OSError("file shrank while reading")
            got += k
        i = n
        while True:
            j = buf.rfind(b"\n", 0, i)
            if j < 0:
                break
            yield start + j + 1, end
            end = start + j
            i = j
        pos = start
    yield 0, end


def load(key, n=None, budget=None):
    """The last ``n`` messages of session ``key`` (default ``_AGENT_HISTORY_MSGS``), oldest first.

    When the ``n``-th message back is not a user message, up to ``n`` more are read to
    reach one, so the window starts at a question. ``budget``: the JSON bytes the window
    may hold (default ``_SESSION_WINDOW_MAX_BYTES``); the newest message always counts. A
    line over ``SESSION_LINE_MAX_BYTES`` becomes a short message saying where it is (a
    tool result is left out: its call cannot be matched without parsing it). The result
    is repaired (``repair``). Skipped and mended lines are counted in the module's
    ``report``, and ``report["start"]`` is the byte offset of the window's first message.
    A turn followed by a forget marker is skipped (it does not count in ``n``).
    Returns [] for a new session.
    """
    usual = n in (None, _AGENT_HISTORY_MSGS) and budget in (None, _SESSION_WINDOW_MAX_BYTES)
    n = n or _AGENT_HISTORY_MSGS
    budget = budget or _SESSION_WINDOW_MAX_BYTES
    for k in report:
        report[k] = 0
    p = path_for(key)
    rp = seam.real_path(p)  # the file itself: tests point the firmware at other flash folders
    if usual or (n < _AGENT_HISTORY_MSGS and budget == _SESSION_WINDOW_MAX_BYTES):  # a shorter one is inside it
        with _lock:
            w = _win
            if w[0] == rp and w[1] == (fs.size(p) or 0):
                return _window(w[2], n, budget, usual)
    try:
        f, size = fs.open_read(p)
    except fs.NotFound:
        if usual:
            with _lock:
                _win[0], _win[1], _win[2] = rp, 0, []
        return []
    got = []
    lens = []
    offs = []  # each message's byte offset, as got
    used = 0
    skip = False  # inside a turn before a forget marker (reading backwards)
    try:
        for s, e in _spans(f, size):
            ln = e - s
            if not ln:
                continue
            if ln > config.SESSION_LINE_MAX_BYTES:
                report["oversize"] += 1
                role = "user"
                for at in (s, e - 300):  # the role is before or after the long field
                    f.seek(at)
                    part = f.read(300).replace(b'": "', b'":"')
                    if b'"role":"assistant"' in part:
                        role = "assistant"
                    if b'"role":"tool"' in part:
                        role = "tool"
                if role == "tool":
                    continue
                m = {"role": role, "content": "[a message of %d bytes is stored in %s at byte %d; too long to load "
                     "here: read_file with offset %d if it matters]" % (ln, p, s, s)}
            else:
                f.seek(s)
                try:
                    m = json.loads(f.read(ln))
                except (ValueError, UnicodeError):
                    m = None
                if not isinstance(m, dict):
                    report["torn" if e == size else "malformed"] += 1  # only the last line can end at size
                    continue
            if m.get("role") == _FORGET:
                skip = True
                continue
            if skip:  # the refused turn, back to its question
                skip = m.get("role") != "user"
                continue
            if got and used + ln > budget:
                break
            used += ln
            got.append(m)
            lens.append(ln)
            offs.append(s)
            # n reached: go on back (to 2n) until the window starts at a user message,
            # so a turn with many tool rounds keeps its question.
            if len(got) >= n and (m.get("role") == "user" or len(got) >= 2 * n):
                break
    finally:
        f.close()
    got.reverse()
    offs.reverse()
    if usual and not (report["torn"] or report["malformed"] or skip):  # kept for this chat's next turns
        lens.reverse()
        with _lock:
            if fs.size(p) == size:
                _win[0], _win[1], _win[2] = rp, size, [(got[j], lens[j], offs[j]) for j in range(len(got))]
    lens = None
    return _finish(key, got, offs)


def _window(entries, n, budget, trim=True):
    """``load``'s window from the kept ``[(message, line bytes)]``, as it would read them
    back from flash: newest first until ``n`` (then on to a question, at most ``2 n``) or
    the ``budget``. ``trim``: drop the entries older than the window (the usual window
    only; a shorter one, such as compaction's, leaves them for the next turn)."""
    got = []
    offs = []
    used = 0
    skip = False  # inside a turn before a forget marker, as load
    j = len(entries)
    while j > 0:
        m, ln, at = entries[j - 1]
        j -= 1
        if m.get("role") == _FORGET:
            skip = True
            continue
        if skip:
            skip = m.get("role") != "user"
            continue
        if got and used + ln > budget:
            j += 1
            break
        used += ln
        got.append(m)
        offs.append(at)
        if len(got) >= n and (m.get("role") == "user" or len(got) >= 2 * n):
            break
    if trim:
        del entries[:j]  # older ones: no later load reaches them (appends only move the start on)
    got.reverse()
    offs.reverse()
    return _finish(None, got, offs)


def _finish(key, got, offs):
    """The window from ``got`` (oldest first; ``offs``: their byte offsets): from its first
    question on, repaired."""
    i = 0  # the window starts at a question: what comes before it (a rotation's carry) is no damage
    while i < len(got) and got[i].get("role") != "user":
        i += 1
    report["start"] = offs[i] if i < len(got) else 0
    out, fixes = repair(got[i:])
    report["repaired"] = fixes
    if key is not None and (report["torn"] or report["malformed"] or report["oversize"] or fixes):
        log.warn(_TAG, "%s: skipped %d torn, %d malformed, %d oversize line(s); %d repair(s)",
                 key, report["torn"], report["malformed"], report["oversize"], fixes)
    return out


def repair(msgs):
    """Make a message list acceptable to the LLM APIs; return ``(messages, fixes)``.

    - a tool result whose call is not open just before it (orphan, duplicate, or
      separated from its call) is dropped;
    - a tool call id seen before in the list is dropped from the later message, and so is a
      call whose id or name is not a string or whose input is not an object;
    - content that is neither a string nor null: an assistant's becomes "", a user
      message or tool result is dropped;
    - a call without a result gets an error result right after the results it has;
    - an assistant message left with no text and no calls is dropped;
    - the list starts at its first user message.
    ``fixes`` counts the changes. The input list is not modified.
    """
    out = []
    fixes = 0
    pending = []  # [(id, name)] of the last assistant message's unanswered calls
    seen = set()
    for m in list(msgs) + [None]:  # None: the end, which answers the calls left open
        role = m.get("role") if isinstance(m, dict) else None
        c = role and m.get("content")
        if c and not isinstance(c, str):  # valid JSON of the wrong type: every request would get a 400
            fixes += 1
            if role != "assistant":
                continue  # a call left without its result gets an error result below
            m = dict(m)
            m["content"] = ""
        if role == "tool":
            cid = m.get("tool_call_id")
            for c in pending:
                if c[0] == cid:
                    pending.remove(c)
                    out.append(m)
                    break
            else:
                fixes += 1
            continue
        for cid, name in pending:
            out.append({"role": "tool", "tool_call_id": cid, "name": name, "is_error": True,
                        "content": "Error: no result was recorded for this call (it was interrupted)"})
            fixes += 1
        pending = []
        if role == "assistant":
            calls = m.get("tool_calls")
            if calls:
                keep = []
                for c in calls if isinstance(calls, list) else (None,):
                    cid = c.get("id") if isinstance(c, dict) else None
                    if not cid or not isinstance(cid, str) or cid in seen or not isinstance(c.get("name"), str) or \
                            not isinstance(c.get("input") or {}, dict):
                        fixes += 1
                        continue
                    seen.add(cid)
                    keep.append(c)
                    pending.append((cid, c["name"]))
                if keep != calls:
                    m = dict(m)
                    if keep:
                        m["tool_calls"] = keep
                    else:
                        del m["tool_calls"]
            if m.get("tool_calls") or m.get("content"):
                out.append(m)
            else:
                fixes += 1
        elif role == "user":
            out.append(m)
        elif m is not None:
            fixes += 1
    i = 0
    while i < len(out) and out[i].get("role") != "user":
        i += 1
    return out[i:], fixes + i
