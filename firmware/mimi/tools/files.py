"""File tools: read_file, write_file, edit_file, delete_file, list_dir, read_section, search_files.

All paths go through ``mimi.storage.fs.check`` (``/data`` only), then ``mimi.policy``: a chat
other than the owner's reads only what is its own or shared and writes only its own folder,
and a turn's writes count against its quota (files, bytes, the flash kept free:
``mimi.guard``). The model retrieves
for itself with these (seed 004): the context holds the map, these open the files.
Files mimi keeps for itself (sessions, the cron store, runtime state, certificates)
may be read but not written. Every read is capped; a partial read says which bytes it
showed and how to get the next ones. ``write_file`` and ``edit_file`` hold
``memory.LOCK`` (briefly), so an edit of MEMORY.md cannot interleave with another
thread's read-modify-write.
"""
from micropython import const

from mimi import config, policy
from mimi.storage import fs, memory, skills
from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_TOOL_LIST_MAX_ENTRIES = const(100)
_TOOL_SEARCH_MAX_HITS = const(30)  # search_files


def _writable(path, ctx):
    """The checked path, unless it is a file mimi keeps for itself (read-only to tools) or
    one this chat may not write (``guard.refusal``: a chat other than the owner's
    writes only its own folder, so nothing it writes steers the owner's turns)."""
    p = fs.check_file(path)
    for r in (config.SESSIONS_DIR, config.CRON_PATH, config.STATE_DIR, config.CERTS_DIR, config.RULES_PATH):
        if p == r or p.startswith(r + "/"):
            raise ValueError("%s is kept by mimi itself: it can be read, not written%s" % (
                r, " (use the cron tools)" if r == config.CRON_PATH else
                " (use the rule tools)" if r == config.RULES_PATH else ""))
    if policy.role(ctx):  # not the owner's turn: the rules for the others (loaded then)
        from mimi import guard

        why = guard.refusal(p, ctx, True)
        if why:
            raise ValueError(why)
    return p


def _readable(path, ctx, folder=False):
    """The checked path (a file, or a folder with ``folder``) when this chat may read it;
    ``path`` None: a function ``fn(path) -> why or None`` (listings), or None for the owner,
    who reads all."""
    if not policy.role(ctx):
        return None if path is None else fs.check(path) if folder else fs.check_file(path)
    from mimi import guard  # not the owner's turn: the rules for the others (loaded then)

    if path is None:
        return lambda p: guard.refusal(p, ctx)
    p = fs.check(path) if folder else fs.check_file(path)
    why = guard.refusal(p, ctx)
    if why:
        raise ValueError(why)
    return p


def read_file(args, ctx):
    """``path``, optional ``offset`` and ``length`` (bytes, at most ``TOOL_READ_MAX_BYTES``)."""
    p = _readable(args["path"], ctx)
    offset = args.get("offset") or 0
    length = args.get("length") or config.TOOL_READ_MAX_BYTES
    if offset < 0 or length < 0:
        raise ValueError("offset and length must not be negative")
    data, cut, size = fs.read(p, min(length, config.TOOL_READ_MAX_BYTES), offset)
    if size == 0:
        return "(empty file)"
    if offset >= size:
        return "(offset %d is at or past the end: the file has %d bytes)" % (offset, size)
    a = fs.utf8_start(data, 0)
    b = fs.utf8_end(data, len(data)) if cut else len(data)
    try:
        text = data[a:b].decode()
    except UnicodeError:
        raise ValueError("%s is not UTF-8 text" % p)
    a += offset
    b += offset
    if a == 0 and b >= size:
        return text
    return "%s\n[bytes %d-%d of %d%s]" % (text, a, b, size, "; next: offset=%d" % b if b < size else "")


def write_file(args, ctx):
    """``path``, ``content``: replace (or create) the file, atomically."""
    p = _writable(args["path"], ctx)
    data = args["content"].encode()
    if len(data) > config.TOOL_WRITE_MAX_BYTES:
        raise ValueError("content is %d bytes; at most %d per write" % (len(data), config.TOOL_WRITE_MAX_BYTES))
    from mimi import guard  # the limits load with the first write, not with every read-only turn

    guard.count_write(p, len(data), ctx, fs.size(p) is None)
    with memory.LOCK:
        fs.write(p, data)
    skills.forget()  # a skill may have changed: the index shows it next turn
    return "wrote %d bytes to %s" % (len(data), p)


def edit_file(args, ctx):
    """``path``, ``old_text`` (must occur exactly once), ``new_text``."""
    p = _writable(args["path"], ctx)
    old = args["old_text"]
    if not old:
        raise ValueError("old_text is empty: give the exact text to replace")
    limit = config.TOOL_WRITE_MAX_BYTES
    with memory.LOCK:
        text, cut, size = fs.read_text(p, limit)
        if cut:
            raise ValueError("%s is %d bytes, too large to edit (limit %d): rewrite it in parts" % (p, size, limit))
        n = text.count(old)
        if n != 1:
            raise ValueError("old_text was not found in %s (read_file it and copy the text exactly)" % p if not n else
                             "old_text occurs %d times in %s; include more around it so it occurs once" % (n, p))
        data = text.replace(old, args["new_text"], 1).encode()
        text = None
        if len(data) > limit:
            raise ValueError("the edit would make %s %d bytes (limit %d)" % (p, len(data), limit))
        from mimi import guard

        guard.count_write(p, len(data), ctx, False)
        fs.write(p, data)
    skills.forget()
    return "edited %s (%d bytes now)" % (p, len(data))


def delete_file(args, ctx):
    """``path``: delete a file (not a folder) the chat may write, so the model can take
    back what it wrote; the checks of ``write_file`` apply."""
    p = _writable(args["path"], ctx)
    fs.read(p, 0)  # a file: a folder, or nothing, raises saying which
    with memory.LOCK:
        fs.remove(p)
    skills.forget()
    return "deleted " + p


def list_dir(args, ctx):
    """``path`` (default ``/data``): entries, folders marked with ``/``; entries this chat
    may not read are left out."""
    p = _readable(args.get("path") or config.DATA, ctx, True)
    why = _readable(None, ctx)
    entries = [e for e in fs.listdir(p) if not why or not why(p + "/" + e[0]) or
               e[1] and p == config.DATA]  # a top folder shows: inside, the listing says what is this chat's
    if not entries:
        return "%s is empty" % p
    out = [p + ":"]
    cap = _TOOL_LIST_MAX_ENTRIES
    for name, is_dir, size in entries[:cap]:
        out.append("  %s/" % name if is_dir else "  %s  (%d bytes)" % (name, size))
    if len(entries) > cap:
        out.append("  ... %d more" % (len(entries) - cap))
    return "\n".join(out)


def read_section(args, ctx):
    """``path``, ``heading``: the markdown section under the first heading that matches.

    Matching ignores case: an equal heading wins, else the first that contains the words.
    The section runs to the next heading of the same or a higher level. Without a match,
    the answer lists the headings the file has.
    """
    p = _readable(args["path"], ctx)
    want = args["heading"].strip().lstrip("#").strip().lower()
    if not want:
        raise ValueError("heading is empty")
    found = None  # (level, start offset, exact)
    end = None
    heads = []
    for off, line in fs.lines(p):
        lvl = 0
        while lvl < len(line) and line[lvl] == 35:  # '#'
            lvl += 1
        if not 0 < lvl <= 6 or (lvl < len(line) and line[lvl] not in (32, 9)):
            continue  # not a heading
        try:
            title = line[lvl:].decode().strip()
        except UnicodeError:
            title = ""
        t = title.lower()
        if found is not None:
            if lvl <= found[0]:
                if found[2] or t != want:
                    end = off
                    break
                found = (lvl, off, True)  # an exact match later beats a partial one
            continue
        if len(heads) < 40:
            heads.append("#" * lvl + " " + title)
        if want in t:
            found = (lvl, off, t == want)
    if found is None:
        return "no heading matching '%s' in %s. Headings: %s" % (args["heading"], p, "; ".join(heads) or "none")
    start = found[1]
    stop = fs.size(p) if end is None else end
    text = fs.read_text(p, min(stop - start, config.TOOL_SECTION_MAX_BYTES), start)[0]
    if stop - start > config.TOOL_SECTION_MAX_BYTES:
        nxt = start + len(text.encode())
        return "%s\n[section continues: read_file %s offset=%d length=%d]" % (text.rstrip("\n"), p, nxt, stop - nxt)
    return text.rstrip("\n")


def search_files(args, ctx):
    """``query`` (keywords), optional ``path`` (folder, default ``/data``).

    Scores each file (at most 400, three folders deep) by the keywords found in its path
    and first line; returns the best ``_TOOL_SEARCH_MAX_HITS`` with their first lines
    (seed 004's search_files).
    """
    root = _readable(args.get("path") or config.DATA, ctx, True)
    why = _readable(None, ctx)
    words = args["query"].lower().split()
    if not words:
        raise ValueError("query is empty: give one or more keywords")
    hits = []
    todo = [(root, 3)]  # folders still to look in, with the depth left below them
    seen = 0
    while todo and seen < 400:
        folder, depth = todo.pop()
        for name, is_dir, size in fs.listdir(folder):
            q = folder + "/" + name
            if why and why(q) and not (is_dir and folder == config.DATA):
                continue
            if is_dir:
                if depth:
                    todo.append((q, depth - 1))
                continue
            seen += 1
            if seen > 400:
                break
            first = ""
            try:
                for _, line in fs.lines(q, 160):
                    first = line.decode().strip()
                    if first:
                        break
            except (UnicodeError, OSError, ValueError):
                first = ""
            score = 0
            for w in words:
                score += 2 if w in q.lower() else 1 if w in first.lower() else 0
            if score:
                hits.append((-score, q, size, first))
    if not hits:
        return "no file under %s matches '%s' in its name or first line" % (root, args["query"])
    hits.sort()
    top = _TOOL_SEARCH_MAX_HITS
    out = ["%s (%d bytes)%s" % (q, size, ": " + first[:120] if first else "") for _, q, size, first in hits[:top]]
    if len(hits) > top:
        out.append("... %d more; narrow the query or the folder" % (len(hits) - top))
    return "\n".join(out)


def register_all():
    """Register the seven file tools (group ``file``; text in ``tools.jsonl``)."""
    registry.load(("mimi.tools.files",))
