"""Skills: ``/data/skills/<name>.md``, a ``# Title`` line, then a paragraph saying what it is for.

The context carries only an index (title and first paragraph of each skill, at most
``SKILLS_INDEX_MAX_BYTES``); the model reads a skill's file when a task matches it
(seed 000, "Skills are a table of contents"). The summary is the first non-empty
paragraph after the title: MimiClaw's stops at the blank line after the title and comes
out empty. Only the first ``_SKILLS_HEAD_BYTES`` of a file are read for it.

The index is built at most every ``SKILLS_INDEX_TTL_S`` and kept (reading every skill
each turn made most of a context build's garbage); ``forget()`` drops it, and the file
tools call it after writing under ``/data/skills``.
"""
from micropython import const

from mimi import config, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_SKILLS_HEAD_BYTES = const(1024)  # bytes of a skill read to find its title and summary

_cache = [None, 0, None]  # index text, its cap, when built (seam.moment)


def names():
    """Skill names (file names without ``.md``), sorted."""
    try:
        entries = fs.listdir(config.SKILLS_DIR)
    except fs.NotFound:
        return []
    return [e[0][:-3] for e in entries if not e[1] and e[0].endswith(".md") and len(e[0]) > 3]


def path(name):
    return fs.check_file(config.SKILLS_DIR + "/" + name + ".md")


def summary(name):
    """``(title, first paragraph)`` of a skill; the title falls back to the name."""
    try:
        return parse(fs.read_text(path(name), _SKILLS_HEAD_BYTES)[0], name)
    except (OSError, ValueError):  # gone, or not UTF-8 text
        return name, ""


def parse(text, name=""):
    """Title and first paragraph of a skill's markdown ``text`` (see the module note)."""
    title = None  # None until the first line with text: a title only when that is a heading
    para = []
    for line in text.split("\n"):
        s = line.strip()
        if not s:
            if para:
                break
            continue
        if title is None:
            title = ""
            if s[0] == "#":
                title = s.lstrip("#").strip()
                continue
        if s[0] == "#" or s.startswith("---"):
            if para:
                break
            continue  # a heading is not a summary: take the paragraph under it
        para.append(s)
    return title or name, " ".join(para)


def list():
    """``[(name, title)]`` of every skill, sorted by name."""
    return [(n, summary(n)[0]) for n in names()]


def forget():
    """Drop the cached index (a skill file changed)."""
    _cache[0] = None


def index(cap=None):
    """The skills index for the context: an intro line, then ``- name: Title. Summary``.

    At most ``cap`` bytes (default ``SKILLS_INDEX_MAX_BYTES``); each line at most
    ``SKILLS_SUMMARY_MAX_BYTES`` (cut with ``...``); skills that do not fit are counted in
    a last line pointing at ``list_dir``. '' when there are no skills. Cached (see the
    module note).
    """
    cap = cap or config.SKILLS_INDEX_MAX_BYTES
    now = seam.ticks_ms()
    if _cache[0] is not None and _cache[1] == cap and \
            seam.elapsed_ms(_cache[2], now) < config.SKILLS_INDEX_TTL_S * 1000:
        return _cache[0]
    all_names = names()
    out = []
    if all_names:
        out.append("Skills (read_file /data/skills/<name>.md and follow it when a task matches):\n")
    used = len(out[0]) if out else 0
    for k in range(len(all_names)):
        n = all_names[k]
        title, para = summary(n)
        line = "- %s: %s" % (n, title)
        if para:
            line += (" " if title.endswith(".") else ". ") + para
        b = line.encode()
        limit = config.SKILLS_SUMMARY_MAX_BYTES
        if len(b) > limit:
            line = b[:fs.utf8_end(b, limit - 3)].decode() + "..."
        line += "\n"
        more = len(all_names) - k
        if used + len(line.encode()) + (48 if more > 1 else 0) > cap:
            out.append("- ... %d more: list_dir /data/skills\n" % more)
            break
        out.append(line)
        used += len(line.encode())
    text = "".join(out)
    _cache[0] = text
    _cache[1] = cap
    _cache[2] = seam.moment()
    return text
