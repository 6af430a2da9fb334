"""Datasheets on flash: an index of chunks (offsets only) and the pin aliases.

Files: ``/data/datasheets/<board>.md`` or ``.txt``; the file name (lower case, without
the extension) is the board, and ``generic.md``/``generic.txt`` is for every board
(ZeroClaw's HardwareRag, seed 002). Other names are indexed too, as other boards.

Chunks: a markdown heading (``#`` to ``######`` outside code fences) starts a new chunk;
a section over ``HW_CHUNK_MAX_BYTES`` (2 KB) is cut at its last blank line, else at a
line, else inside a long line at a UTF-8 boundary. RAM holds only each chunk's file,
offset, length and the offset of its section's heading; ``text(ix, i)`` reads a chunk
from flash when it is used.

Pin aliases: the lines of a section whose heading says ``Pin Aliases`` (or 引脚别名):
- markdown table rows ``| red_led | 13 |`` (header and ``|---|`` rows are skipped), or
- ``red_led: 13`` / ``red_led = 13`` lines (list markers allowed).
Pins may be written ``13``, ``GPIO13``, ``IO13`` or ``pin 13``. Aliases are lower-cased,
with spaces and hyphens made ``_``. A word after the pin (or a third table column) says
the kind: ``in``/``input`` (a button or sensor: read, never switched) or
``ws2812``/``neopixel`` (an addressable RGB LED); anything else is a plain output.

The index (``index()``) is a list ``[stamp, files, chunks, aliases]``:
- ``files``: ``[(device path, board or None for every board)]``;
- ``chunks``: an ``array("i")`` of 4 ints per chunk ``i`` at ``4 * i``: file number
  (plus ``ALIASES``, 128, for a Pin Aliases section), offset, length in bytes, offset of
  its section's heading line (-1: none);
- ``aliases``: ``{board or None: {alias: (pin, kind)}}``.
It is rebuilt when a file in the folder is added, removed, or changes size or time (one
``stat`` per file per use).
"""
import array
import os

from micropython import const

from mimi import config, log, seam

ALIASES = const(128)  # chunk flag: a Pin Aliases section (given as aliases, not as docs)
_HEAD_MAX = const(160)  # bytes of a heading shown before a continued chunk

_idx = [None]
_lock = seam.allocate_lock()  # held while the index is built and while chunks are read


def index():
    """The current index (see the module doc), rebuilt when the folder changed."""
    folder = seam.real_path(config.DATASHEETS_DIR)
    stamp = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = ()
    for n in names:
        if n.lower().endswith((".md", ".txt")) and len(stamp) < config.HW_MAX_FILES:
            try:
                st = os.stat(folder + "/" + n)
            except OSError:
                continue
            if not st[0] & 0x4000:  # not a folder
                stamp.append((n, st[6], st[8]))
    with _lock:
        ix = _idx[0]
        if ix is None or ix[0] != stamp:
            _idx[0] = None
            seam.collect()
            ix = [stamp, [], array.array("i"), {}]
            for n, _, _ in stamp:
                _scan(ix, n)
            _idx[0] = ix
            n = len(ix[2]) // 4
            log.info("hw", "datasheets: %d files, %d chunks%s", len(stamp), n,
                     " (full: the rest is not searched)" if n >= config.HW_MAX_CHUNKS else "")
        return ix


def forget():
    """Drop the index (tests; the next use rebuilds it)."""
    _idx[0] = None


def _scan(ix, name):
    """Add file ``name``'s chunks and aliases to ``ix``. A file that cannot be read is skipped."""
    fi = len(ix[1])
    board = name.rsplit(".", 1)[0].lower()
    if board == "generic":
        board = None
    path = config.DATASHEETS_DIR + "/" + name
    ix[1].append((path, board))
    al = ix[3].setdefault(board, {})
    chunks = ix[2]
    cap = config.HW_CHUNK_MAX_BYTES
    try:
        f = open(seam.real_path(path), "rb")
    except OSError as e:
        log.exc("hw", path, e)
        return
    # the chunk being built starts at `start`, in the section whose heading is at `head`,
    # its last blank line ends at `blank`; `text`: it holds more than blank lines
    start = off = 0
    head = blank = -1
    text = fence = False
    flag = 0
    with f:
        while True:
            line = f.readline(cap)
            n = len(line)
            if n == cap and line[-1] != 10:  # a piece of a long line: end it before its last character
                k = n - 1
                while k and line[k] & 0xC0 == 0x80:
                    k -= 1
                if k:
                    n = k
                    line = line[:n]
                    f.seek(off + n)
            s = line.strip()
            if s[:3] == b"```":
                fence = not fence
            h = 0
            while h < n and line[h] == 35:  # '#'
                h += 1
            heading = not fence and 0 < h <= 6 and h < n and line[h] in (32, 9)
            cuts = ()
            if not line or heading:
                cuts = (off,)
            elif off + n - start > cap:  # over the cap: cut at the last blank line, else here
                cuts = (blank, off) if blank > start else (off,)
            for at in cuts:
                if off + n - start <= cap and at != off and not heading:
                    continue  # the cut at the blank line was enough
                if text and at > start:
                    if len(chunks) < 4 * config.HW_MAX_CHUNKS:  # index() says when it is full
                        chunks.extend((fi | flag, start, at - start, head))
                text = at < off  # lines after a blank-line cut go on in the next chunk
                start = at
                blank = -1
            if not line:
                return
            if heading:
                head = off
                text = True
                flag = ALIASES if b"pin alias" in line.lower() or "脚别名".encode() in line else 0
            elif not s:
                blank = off + n
            else:
                text = True
                if flag and not fence:
                    _alias(line, al)
            off += n


def _alias(line, al):
    """One line of a Pin Aliases section into ``al`` (alias -> (pin, kind)), if it is one."""
    try:
        s = line.decode().strip()
    except UnicodeError:
        return
    if s[:1] == "|":
        cells = s.strip("|").split("|")
        name = cells[0]
        rest = " ".join(cells[1:])  # the pin, then the kind
    else:
        if s[:2] in ("- ", "* ", "+ "):
            s = s[2:]
        i = s.find(":")
        j = s.find("=")
        if j > 0 and (i < 1 or j < i):
            i = j
        if i < 1:
            return
        name = s[:i]
        rest = s[i + 1:]
    p = parse_pin(rest)
    a = norm_alias(name)
    if p is None or not a or len(a) > 40:
        return
    kind = "out"
    for w in rest.lower().split():
        w = w.strip("()[],.;")
        if w in ("in", "input", "ws2812", "neopixel", "sk6812", "out", "output"):
            kind = "in" if w[0] == "i" else "out" if w[0] == "o" else "ws2812"
            break
    al[a] = (p, kind)


def parse_pin(text):
    """``"13"``, ``"GPIO13"``, ``"io 13"``, ``"pin 13 (v1.1)"`` -> 13; None when no pin."""
    s = text.strip().lower()
    for p in ("gpio", "pin", "io"):
        if s.startswith(p):
            s = s[len(p):].lstrip(" _-")
            break
    n = 0
    while n < len(s) and "0" <= s[n] <= "9":
        n += 1
    if n == 0 or n > 3 or (n < len(s) and s[n] not in " \t(,;."):
        return None  # "4`, ..." in prose is not a pin
    return int(s[:n])


def norm_alias(text):
    """``"Porch Light"`` -> ``porch_light``; strips markdown emphasis and code marks around
    it. "" when it holds anything but letters, digits, spaces, ``-`` and ``_``."""
    out = []
    for ch in text.strip().strip("`*_ ").lower():
        if ch in " -\t":
            ch = "_"
        elif not (ch.isalpha() or ch.isdigit() or ch == "_" or ord(ch) > 0x7F):
            return ""  # prose or markup, not a name
        out.append(ch)
    return "".join(out)


def aliases(board=None):
    """Aliases for ``board`` (default: the configured board) plus the generic ones:
    ``{alias: (pin, kind)}``; the board's own entry wins over a generic one."""
    al = index()[3]
    out = dict(al.get(None, {}))
    out.update(al.get((board or config.get("board") or "").lower(), {}))
    return out


def text(ix, i):
    """Chunk ``i`` of ``ix`` as str, read from flash ("" when the file went away); a piece
    that does not start its section is preceded by the section's heading line and
    ``(continued)``."""
    fi, off, n, head = ix[2][4 * i:4 * i + 4]
    h = ""
    try:
        with open(seam.real_path(ix[1][fi & 127][0]), "rb") as f:
            if 0 <= head != off:
                f.seek(head)
                h = f.readline(_HEAD_MAX)
                k = len(h) - 1  # drop the last character: the newline, or one the cap cut
                while k > 0 and h[k] & 0xC0 == 0x80:
                    k -= 1
                h = h[:k].decode().rstrip() + " (continued)\n"
            f.seek(off)
            return h + f.read(n).decode()
    except (OSError, UnicodeError):
        return ""


def files_text():
    """One line per datasheet: ``path (board): N chunks``; for tools and the CLI."""
    ix = index()
    lines = []
    for fi in range(len(ix[1])):
        n = 0
        for j in range(0, len(ix[2]), 4):
            n += ix[2][j] & 127 == fi
        lines.append("%s (%s): %d chunks" % (ix[1][fi][0], ix[1][fi][1] or "every board", n))
    return "\n".join(lines) or "no datasheets in " + config.DATASHEETS_DIR
