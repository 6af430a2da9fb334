"""Skills: ``/data/skills/<name>.md``, a ``# Title`` line, then a paragraph saying what it is for.

The context carries only an index (title and first paragraph of each skill, at most
``SKILLS_INDEX_MAX_BYTES``); the model reads a skill's file when a task matches it
(seed 000, "Skills are a table of contents"). The summary is the first non-empty
paragraph after the title: MimiClaw's stops at the blank line after the title and comes
out empty. Only the first ``SKILLS_HEAD_BYTES`` of a file are read for it.

The index is built at most every ``SKILLS_INDEX_TTL_S`` and kept (reading every skill
each turn made most of a context build's garbage); ``forget()`` drops it, and the file
tools call it after writing under ``/data/skills``.
"""
from mimi import config, seam
from mimi.storage import fs

_cache = [None, 0, 0]  # index text, its cap, ticks_ms when built

_INTRO = "Skills (read_file /data/skills/<name>.md and follow it when a task matches):\n"


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
        data, cut, _ = fs.read(path(name), config.SKILLS_HEAD_BYTES)
    except (fs.NotFound, ValueError):
        return name, ""
    if cut:
        data = data[:fs.utf8_end(data, len(data))]
    try:
        text = data.decode()
    except UnicodeError:
        return name, ""
    return parse(text, name)


def parse(text, name=""):
    """Title and first paragraph of a skill's markdown ``text`` (see the module note)."""
    lines = text.split("\n")
    title = ""
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].lstrip().startswith("#"):
        title = lines[i].strip().lstrip("#").strip()
        i += 1
    para = []
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if not s:
            if para:
                break
            continue
        if s.startswith("#") or s.startswith("---"):
            if para:
                break
            continue  # a heading is not a summary: take the paragraph under it
        para.append(s)
    return title or name, " ".join(para)


def list():
    """``[(name, title)]`` of every skill, sorted by name."""
    return [(n, summary(n)[0]) for n in names()]


def _clip(text, limit):
    b = text.encode()
    if len(b) <= limit:
        return text
    return b[:fs.utf8_end(b, limit - 3)].decode() + "..."


def forget():
    """Drop the cached index (a skill file changed)."""
    _cache[0] = None


def index(cap=None):
    """The skills index for the context: an intro line, then ``- name: Title. Summary``.

    At most ``cap`` bytes (default ``SKILLS_INDEX_MAX_BYTES``); skills that do not fit are
    counted in a last line pointing at ``list_dir``. '' when there are no skills. Cached
    (see the module note).
    """
    cap = cap or config.SKILLS_INDEX_MAX_BYTES
    now = seam.ticks_ms()
    if _cache[0] is not None and _cache[1] == cap and \
            seam.ticks_diff(now, _cache[2]) < config.SKILLS_INDEX_TTL_S * 1000:
        return _cache[0]
    text = _build(cap)
    _cache[0] = text
    _cache[1] = cap
    _cache[2] = now
    return text


def _build(cap):
    all_names = names()
    if not all_names:
        return ""
    out = [_INTRO]
    used = len(_INTRO)
    for k in range(len(all_names)):
        n = all_names[k]
        title, para = summary(n)
        line = "- %s: %s" % (n, title)
        if para:
            line += ". " + para if not title.endswith(".") else " " + para
        line = _clip(line, config.SKILLS_SUMMARY_MAX_BYTES) + "\n"
        more = len(all_names) - k - 1
        reserve = 48 if more else 0
        if used + len(line.encode()) + reserve > cap:
            out.append("- ... %d more: list_dir /data/skills\n" % (len(all_names) - k))
            break
        out.append(line)
        used += len(line.encode())
    return "".join(out)
