"""Chat history: ``/data/sessions/<key>.jsonl``, one message per line, append-only.

Messages are in the internal form of docs/internals.md ("Messages"). The whole history
stays on flash for the model to ``read_file`` later; a request carries only the last
``AGENT_HISTORY_MSGS`` of it.
- ``load`` reads back from the end of the file in ``FS_CHUNK_BYTES`` blocks (seek), so
  its cost does not grow with the file. A line of any length is found; one over
  ``SESSION_LINE_MAX_BYTES`` stays on flash and the window gets a short message saying
  where it is. A torn last line (power cut during an append) and malformed lines are
  skipped and counted in ``report``, never fatal.
- The window is repaired (``repair``): it starts with a user message, holds no tool
  result without its call, no duplicate tool call ids, and a call left unanswered gets
  an error result, so an API never sees an exchange it rejects (a 400 for ever after is
  a known failure in peers).
- Tool results are stored cut to ``SESSION_TOOL_RESULT_MAX_BYTES``.
- A file past ``SESSION_ROTATE_BYTES`` moves to ``/data/sessions/archive/<key>.<n>.jsonl``
  (``n`` grows; at most ``SESSION_ARCHIVES_MAX`` kept) and the fresh file starts with
  the last messages, so the conversation carries on. ``clear`` archives without carry.
- Cron and heartbeat chats have their own keys (``cron_<id>``, ``hb_<id>``).
"""
import json

from mimi import config, log, seam
from mimi.storage import fs

TAG = "session"
SUFFIX = ".jsonl"
_PREFIX = {"telegram": "tg", "cli": "cli", "cron": "cron", "heartbeat": "hb"}
_KEY_MAX = 40
_SEP = (",", ":")
_CUT_MARK = "\n[result cut to %d bytes in history]"

_lock = seam.allocate_lock()
report = {"torn": 0, "malformed": 0, "oversize": 0, "repaired": 0}  # the last load


def _safe(text):
    out = []
    for ch in text:
        out.append(ch if ("a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch in "-_") else "_")
    return "".join(out)


def key_for(channel, chat_id):
    """Session key for a chat: ``("telegram", 123)`` -> ``"tg_123"``.

    Cron and heartbeat get ``cron_`` / ``hb_`` keys apart from people's chats. Characters
    outside ``[A-Za-z0-9_-]`` become ``_``.
    """
    prefix = _PREFIX.get(channel) or _safe(str(channel))[:8]
    return (prefix + "_" + _safe(str(chat_id)))[:_KEY_MAX]


def path_for(key):
    """``/data/sessions/<key>.jsonl``; ``ValueError`` for a key ``key_for`` would not make."""
    if not key or len(key) > _KEY_MAX or _safe(key) != key:
        raise ValueError("bad session key: %r" % (key,))
    return config.SESSIONS_DIR + "/" + key + SUFFIX


def keys():
    """Keys of the sessions on flash (archives not included), sorted."""
    try:
        entries = fs.listdir(config.SESSIONS_DIR)
    except fs.NotFound:
        return []
    return [e[0][:-len(SUFFIX)] for e in entries if not e[1] and e[0].endswith(SUFFIX)]


def _stored(msg):
    """The message as it is kept: a ``ts``, and a tool result cut to its cap."""
    m = dict(msg)
    if "ts" not in m:
        m["ts"] = seam.time_s()
    if m.get("role") == "tool":
        c = m.get("content")
        if not isinstance(c, str):
            c = "" if c is None else str(c)
        cap = config.SESSION_TOOL_RESULT_MAX_BYTES
        b = c.encode()
        if len(b) > cap:
            mark = _CUT_MARK % cap
            c = b[:fs.utf8_end(b, cap - len(mark))].decode() + mark
        m["content"] = c
    return m


def _last_byte(path, size):
    f, _ = fs.open_read(path)
    try:
        f.seek(size - 1)
        return f.read(1)
    finally:
        f.close()


def append(key, msg):
    """Add ``msg`` (a dict in the internal form) at the end of the session ``key``.

    Side effects: writes ``/data/sessions/<key>.jsonl``; a torn last line left by a power
    cut is closed with a newline first, so this message stands on its own line; past
    ``SESSION_ROTATE_BYTES`` the file is archived first (see the module note).
    """
    line = json.dumps(_stored(msg), separators=_SEP) + "\n"
    p = path_for(key)
    with _lock:
        size = fs.size(p)
        if size:
            if size + len(line) > config.SESSION_ROTATE_BYTES:
                _rotate(key, config.SESSION_CARRY_MSGS)
                size = fs.size(p)
            if size and _last_byte(p, size) != b"\n":
                line = "\n" + line
        fs.append(p, line)


def clear(key):
    """Start the session afresh: the file moves to the archive (still readable). Returns
    the archive's path, or None when there was nothing to keep."""
    with _lock:
        return _rotate(key, 0)


def _archive_numbers(key):
    try:
        entries = fs.listdir(config.SESSION_ARCHIVE_DIR)
    except fs.NotFound:
        return []
    pre = key + "."
    nums = []
    for name, _, _ in entries:
        if name.startswith(pre) and name.endswith(SUFFIX):
            mid = name[len(pre):-len(SUFFIX)]
            if mid.isdigit():
                nums.append(int(mid))
    nums.sort()
    return nums


def _rotate(key, carry):
    p = path_for(key)
    size = fs.size(p)
    if not size:
        return None
    start = end = 0
    if carry:
        start, end = _tail_range(p, size, carry)
    nums = _archive_numbers(key)
    arch = config.SESSION_ARCHIVE_DIR + "/" + key + "." + str(nums[-1] + 1 if nums else 1) + SUFFIX
    fs.rename(p, arch)
    # A cut here leaves no current file: the next load starts empty, nothing is lost.
    if end > start:
        fs.copy(arch, p, start, end)
    while len(nums) >= config.SESSION_ARCHIVES_MAX:
        fs.remove(config.SESSION_ARCHIVE_DIR + "/" + key + "." + str(nums.pop(0)) + SUFFIX)
    log.info(TAG, "%s: %d bytes archived to %s", key, size, arch)
    return arch


def _tail_range(p, size, carry):
    """Byte range of the last ``carry`` complete lines (within the window budget)."""
    f, size = fs.open_read(p)
    try:
        start = end = None
        count = 0
        for s, e in _spans(f, size):
            if end is None:
                if e == size and s < e:
                    continue  # an unterminated last line is not carried
                end = e + 1 if e < size else e
            if s == e:
                continue
            if end - s > config.SESSION_WINDOW_MAX_BYTES:
                break
            start = s
            count += 1
            if count >= carry:
                break
    finally:
        f.close()
    if start is None:
        return 0, 0
    return start, end


def _spans(f, size):
    """Yield ``(start, end)`` byte offsets of each line of ``f``, last line first.

    ``end`` excludes the newline. Reads ``FS_CHUNK_BYTES`` blocks backwards from the end;
    the caller may seek and read between items.
    """
    blk = config.FS_CHUNK_BYTES
    buf = bytearray(blk)
    mv = memoryview(buf)
    pos = size
    end = size
    while pos > 0:
        start = pos - blk if pos > blk else 0
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


def _pointer(f, s, e, path):
    """A short message standing in for a line too long to load (None for a tool result,
    whose call cannot be matched without parsing it)."""
    role = "user"
    for at in (s, e - 300):  # the role is before or after the long field
        f.seek(at)
        part = f.read(300)
        for r in ("assistant", "tool"):
            if ('"role":"%s"' % r).encode() in part or ('"role": "%s"' % r).encode() in part:
                role = r
    if role == "tool":
        return None
    return {"role": role, "content": "[a message of %d bytes is stored in %s at byte %d; too long to load "
            "here: read_file with offset %d if it matters]" % (e - s, path, s, s)}


def load(key, n=None, budget=None):
    """The last ``n`` messages of session ``key`` (default ``AGENT_HISTORY_MSGS``), oldest first.

    When the ``n``-th message back is not a user message, up to ``n`` more are read to
    reach one, so the window starts at a question. ``budget``: the JSON bytes the window may hold (default ``SESSION_WINDOW_MAX_BYTES``);
    the newest message always counts. The result is repaired (``repair``). Skipped and
    mended lines are counted in the module's ``report``. Returns [] for a new session.
    """
    n = n or config.AGENT_HISTORY_MSGS
    budget = budget or config.SESSION_WINDOW_MAX_BYTES
    for k in report:
        report[k] = 0
    p = path_for(key)
    try:
        f, size = fs.open_read(p)
    except fs.NotFound:
        return []
    got = []
    used = 0
    try:
        first = True
        for s, e in _spans(f, size):
            tail = first and e == size
            first = False
            if s == e:
                continue
            ln = e - s
            if ln > config.SESSION_LINE_MAX_BYTES:
                m = _pointer(f, s, e, p)
                report["oversize"] += 1
                if m is None:
                    continue
            else:
                f.seek(s)
                raw = f.read(ln)
                try:
                    m = json.loads(raw)
                except (ValueError, UnicodeError):
                    m = None
                raw = None
                if not isinstance(m, dict):
                    report["torn" if tail else "malformed"] += 1
                    continue
            if got and used + ln > budget:
                break
            used += ln
            got.append(m)
            # n reached: go on back (to 2n) until the window starts at a user message,
            # so a turn with many tool rounds keeps its question.
            if len(got) >= n and (m.get("role") == "user" or len(got) >= 2 * n):
                break
    finally:
        f.close()
    got.reverse()
    out, fixes = repair(got)
    report["repaired"] = fixes
    if report["torn"] or report["malformed"] or report["oversize"] or fixes:
        log.warn(TAG, "%s: skipped %d torn, %d malformed, %d oversize line(s); %d repair(s)",
                 key, report["torn"], report["malformed"], report["oversize"], fixes)
    return out


def _error_result(cid, name):
    return {"role": "tool", "tool_call_id": cid, "name": name,
            "content": "Error: no result was recorded for this call (it was interrupted)",
            "is_error": True}


def repair(msgs):
    """Make a message list acceptable to the LLM APIs; return ``(messages, fixes)``.

    - a tool result whose call is not open just before it (orphan, duplicate, or
      separated from its call) is dropped;
    - a tool call id seen before in the list is dropped from the later message;
    - a call without a result gets an error result right after the results it has;
    - an assistant message left with no text and no calls is dropped;
    - the list starts at its first user message.
    ``fixes`` counts the changes. The input list is not modified.
    """
    out = []
    fixes = 0
    pending = []  # [(id, name)] of the last assistant message's unanswered calls
    seen = set()
    for m in msgs:
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            cid = m.get("tool_call_id")
            hit = -1
            for i in range(len(pending)):
                if pending[i][0] == cid:
                    hit = i
                    break
            if hit < 0:
                fixes += 1
                continue
            pending.pop(hit)
            out.append(m)
            continue
        for cid, name in pending:
            out.append(_error_result(cid, name))
            fixes += 1
        pending = []
        if role == "assistant":
            calls = m.get("tool_calls")
            if calls:
                keep = []
                for c in calls:
                    cid = c.get("id") if isinstance(c, dict) else None
                    if not cid or cid in seen:
                        fixes += 1
                        continue
                    seen.add(cid)
                    keep.append(c)
                if len(keep) != len(calls):
                    m = dict(m)
                    if keep:
                        m["tool_calls"] = keep
                    else:
                        del m["tool_calls"]
                pending = [(c["id"], c.get("name", "")) for c in keep]
            if not m.get("tool_calls") and not m.get("content"):
                fixes += 1
                continue
            out.append(m)
        elif role == "user":
            out.append(m)
        else:
            fixes += 1
    for cid, name in pending:
        out.append(_error_result(cid, name))
        fixes += 1
    i = 0
    while i < len(out) and out[i].get("role") != "user":
        i += 1
    return (out[i:] if i else out), fixes + i
