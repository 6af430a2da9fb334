"""memory_search: keywords over the memory notes, matching lines with two lines around.

Seed 003 (openclaw-mini's memory_search): split the query into keywords, scan every
``.md`` file in ``/data/memory`` line by line, return each matching line (any keyword,
case ignored) with ``_MEMORY_SEARCH_CONTEXT_LINES`` lines before and after, at most
``MEMORY_SEARCH_MAX_MATCHES`` matches and ``MEMORY_SEARCH_MAX_BYTES`` of output (the
seed's 10,000 characters, counted in bytes since bytes are what the board's RAM holds).
No notes yet is an answer with a hint, not an error. Files are streamed, never read whole.
A chat other than the owner's searches its own notes (``mimi.policy.memory_dir``) unless the
owner shares theirs (setting ``share_memory``).
"""
from micropython import const

from mimi import config, policy
from mimi.storage import fs
from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_MEMORY_SEARCH_CONTEXT_LINES = const(2)


def memory_search(args, ctx):
    """``query`` (keywords), optional ``file`` (one note, e.g. ``2026-01-05`` or ``MEMORY.md``).

    Output: per file ``== path``, then hits ``N: line`` with context ``N- line`` around
    them, ``--`` between separate runs, and a last line counting the matches.
    """
    words = args["query"].lower().split()
    if not words:
        raise ValueError("query is empty: give one or more keywords")
    only = args.get("file")
    mdir = policy.memory_dir(ctx)
    if only:
        name = only.rsplit("/", 1)[-1]
        files = [fs.check_file(mdir + "/" + (name if name.endswith(".md") else name + ".md"))]
    else:
        try:
            names = [e[0] for e in fs.listdir(mdir) if not e[1] and e[0].endswith(".md")]
        except fs.NotFound:
            names = []
        names.sort(reverse=True)  # the notes newest first, after MEMORY.md
        if "MEMORY.md" in names:
            names.remove("MEMORY.md")
            names.insert(0, "MEMORY.md")
        files = [mdir + "/" + n for n in names]
    if not files:
        return "no memory notes yet: write lasting facts to %s and the day's events to %s/YYYY-MM-DD.md" % (
            mdir + "/MEMORY.md", mdir)
    out = []
    left = config.MEMORY_SEARCH_MAX_BYTES - 120  # room for the last line
    matches = 0
    most = config.MEMORY_SEARCH_MAX_MATCHES
    around = _MEMORY_SEARCH_CONTEXT_LINES
    for p in files:
        before = []  # (number, text) of the lines just before, not printed
        after = 0  # context lines still to print after the last hit
        last = 0  # number of the last line printed in this file
        n = 0
        try:
            for _, raw in fs.lines(p, 512):
                n += 1
                try:
                    line = raw.decode()
                except UnicodeError:
                    line = "[a line that is not UTF-8 text]"
                low = line.lower()
                new = []
                for w in words:
                    if matches < most and w in low:
                        if not last:
                            new.append("== " + p)
                        elif (before[0][0] if before else n) > last + 1:
                            new.append("--")
                        for b in before:
                            new.append("%d- %s" % b)
                        new.append("%d: %s" % (n, line))
                        matches += 1
                        after = around
                        before = []
                        last = n
                        break
                else:
                    if after:
                        new.append("%d- %s" % (n, line))
                        after -= 1
                        last = n
                    elif matches >= most:
                        break
                    else:
                        before.append((n, line))
                        if len(before) > around:
                            before.pop(0)
                for t in new:
                    left -= len(t.encode()) + 1
                    if left < 0:
                        break
                    out.append(t)
                if left < 0:
                    break
        except fs.NotFound:
            if only:
                raise
        if matches >= most or left < 0:
            break
    if not matches:
        return "no line in the memory notes mentions: " + " ".join(words)
    tail = "%d match%s" % (matches, "" if matches == 1 else "es")
    if matches >= most or left < 0:
        tail += " (limit reached: search with more specific words, or pass file)"
    out.append(tail)
    return "\n".join(out)


def register_all():
    """Register memory_search (group ``memory``; text and result cap in ``tools.jsonl``)."""
    registry.load(("mimi.tools.memory_tools",))
