"""memory_search: keywords over the memory notes, matching lines with two lines around.

Seed 003 (openclaw-mini's memory_search): split the query into keywords, scan every
``.md`` file in ``/data/memory`` line by line, return each matching line (any keyword,
case ignored) with ``MEMORY_SEARCH_CONTEXT_LINES`` lines before and after, at most
``MEMORY_SEARCH_MAX_MATCHES`` matches and ``MEMORY_SEARCH_MAX_BYTES`` of output (the
seed's 10,000 characters, counted in bytes since bytes are what the board's RAM holds).
No notes yet is an answer with a hint, not an error. Files are streamed, never read whole.
"""
from mimi import config
from mimi.storage import fs
from mimi.tools import registry


def _text(b):
    try:
        return b.decode()
    except UnicodeError:
        return "[a line that is not UTF-8 text]"


def _files(only):
    if only:
        name = only.rsplit("/", 1)[-1]
        if not name.endswith(".md"):
            name += ".md"
        return [fs.check_file(config.MEMORY_DIR + "/" + name)]
    try:
        entries = fs.listdir(config.MEMORY_DIR)
    except fs.NotFound:
        return []
    names = [e[0] for e in entries if not e[1] and e[0].endswith(".md")]
    # MEMORY.md first, then the notes newest first
    names.sort(reverse=True)
    if "MEMORY.md" in names:
        names.remove("MEMORY.md")
        names.insert(0, "MEMORY.md")
    return [config.MEMORY_DIR + "/" + n for n in names]


def _add(out, line):
    """Add ``line`` to ``out`` = [lines, bytes left]; False (nothing added) past the cap."""
    out[1] -= len(line.encode()) + 1
    if out[1] < 0:
        return False
    out[0].append(line)
    return True


def _search_file(path, words, out, matches, max_matches):
    """Append this file's hits to ``out``; return the new match count."""
    ctx_n = config.MEMORY_SEARCH_CONTEXT_LINES
    before = []  # (line number, text) of the lines just before
    after = 0  # context lines still to print after the last hit
    last = 0  # number of the last line printed
    header = False
    n = 0
    for _, raw in fs.lines(path, 512):
        n += 1
        line = _text(raw)
        low = line.lower()
        hit = matches < max_matches and any(w in low for w in words)
        if hit:
            first = n
            for num, _ in before:
                if num > last:
                    first = num
                    break
            if not header:
                if not _add(out, "== %s" % path):
                    return matches
                header = True
            elif first > last + 1 and not _add(out, "--"):
                return matches
            for num, t in before:
                if num > last and not _add(out, "%d- %s" % (num, t)):
                    return matches
            if not _add(out, "%d: %s" % (n, line)):
                return matches
            last = n
            matches += 1
            after = ctx_n
            before = []
            continue
        if after:
            if not _add(out, "%d- %s" % (n, line)):
                return matches
            last = n
            after -= 1
        elif matches >= max_matches:
            break
        before.append((n, line))
        if len(before) > ctx_n:
            before.pop(0)
    return matches


def memory_search(args, ctx):
    """``query`` (keywords), optional ``file`` (one note, e.g. ``2026-01-05`` or ``MEMORY.md``)."""
    words = [w for w in args["query"].lower().split() if w]
    if not words:
        raise ValueError("query is empty: give one or more keywords")
    files = _files(args.get("file"))
    if not files:
        return "no memory notes yet: write lasting facts to %s and the day's events to %s" % (
            config.MEMORY_PATH, config.MEMORY_DIR + "/YYYY-MM-DD.md")
    out = [[], config.MEMORY_SEARCH_MAX_BYTES - 120]
    matches = 0
    max_m = config.MEMORY_SEARCH_MAX_MATCHES
    for p in files:
        try:
            matches = _search_file(p, words, out, matches, max_m)
        except fs.NotFound:
            if args.get("file"):
                raise
        if matches >= max_m or out[1] < 0:
            break
    if not matches:
        return "no line in the memory notes mentions: %s" % " ".join(words)
    tail = "%d match%s" % (matches, "" if matches == 1 else "es")
    if matches >= max_m or out[1] < 0:
        tail += " (limit reached: search with more specific words, or pass file)"
    out[0].append(tail)
    return "\n".join(out[0])


def register_all():
    """Register memory_search (group ``memory``; text in ``tools.jsonl``)."""
    registry.add(memory_search, max_bytes=config.MEMORY_SEARCH_MAX_BYTES)
