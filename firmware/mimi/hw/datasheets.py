"""Datasheets on flash: an index of chunks (offsets only) and the pin aliases.

Files: ``/data/datasheets/<board>.md`` or ``.txt``; the file name (lower case, without
the extension) is the board, and ``generic.md``/``generic.txt`` is for every board
(ZeroClaw's HardwareRag, seed 002). Other names are indexed too, as other boards.

Chunks: a markdown heading (``#`` to ``######`` outside code fences) starts a new chunk;
a section over ``HW_CHUNK_MAX_BYTES`` (2 KB) is cut at its last blank line when the rest
fits in the next chunk, else before the line that does not fit; a line over 2 KB is cut
in pieces at UTF-8 boundaries. RAM holds only each chunk's file,
offset, length and the offset of its section's heading; ``text(ix, i)`` reads a chunk
from flash when it is used.

Pin aliases: the lines of a section whose heading says ``Pin Aliases`` (or 引脚别名):
- markdown table rows ``| red_led | 13 |`` (header and ``|---|`` rows are skipped), or
- ``red_led: 13`` / ``red_led = 13`` lines (list markers allowed).
Pins may be written ``13``, ``GPIO13``, ``IO13`` or ``pin 13``. Aliases are lower-cased,
with spaces and hyphens made ``_``. A word after the pin (or a third table column) says
the kind: ``in``/``input`` (a button or sensor: read, never switched),
``ws2812``/``neopixel`` (an addressable RGB LED), or a sensor for ``mimi.hw.sensors``:
``dht11``, ``dht22``, ``ds18b20``, ``adc``; anything else is a plain output.

The index (``index()``) is a list ``[stamp, files, chunks, aliases]``:
- ``stamp``: ``[(name, size, mtime)]`` of the files, to see when the folder changed;
- ``files``: ``[(device path, board or None for every board)]``;
- ``chunks``: an ``array("i")`` of 4 ints per chunk ``i`` at ``4 * i``: file number
  (plus 128 for a Pin Aliases section), offset, length in bytes, offset of
  its section's heading line (-1: none);
- ``aliases``: ``{board or None: {alias: (pin, kind)}}``.
It is rebuilt when a file in the folder is added, removed, or changes size or time (one
``stat`` per file per use).
"""
import array
import os

from mimi import config, log, seam

_idx = []  # [the index] once built
_lock = seam.allocate_lock()  # held while the index is built and while chunks are read
forget = _idx.clear  # forget(): drop the index (tests; the next use rebuilds it)


def _mine(name, boards):
    """True for a file of one of ``boards`` (lower-case names): ``ESP32-S3-DevKitC-1.md``."""
    return name.rsplit(".", 1)[0].lower() in boards


def index():
    """The current index (see the module doc), rebuilt when the folder changed.

    A file that cannot be read is logged and skipped, keeping the chunks read so far.
    """
    folder = seam.real_path(config.DATASHEETS_DIR)
    stamp = []
    over = 0  # files left out
    # The configured board's file and generic.md first: more files than HW_MAX_FILES, or
    # one with very many sections, must not push out the board's own pins and aliases.
    mine = (config.get("board") or "").lower(), "generic"
    try:
        first, rest = [], []
        for n in sorted(os.listdir(folder)):  # each name looked at once: every turn asks twice (issue 17)
            low = n.lower()
            if low.endswith((".md", ".txt")):
                (first if _mine(low, mine) else rest).append(n)
        for n in first + rest:
            st = os.stat(folder + "/" + n)
            if not st[0] & 0x4000:
                if len(stamp) < config.HW_MAX_FILES:
                    stamp.append((n, st[6], st[8]))
                else:
                    over += 1
    except OSError:  # no folder (no datasheets), or a file removed while listing
        pass
    with _lock:
        if _idx and _idx[0][0] == stamp:
            return _idx[0]
        _idx.clear()
        seam.collect()
        if over:
            log.warn("hw", "%d datasheet files left out (%d at most)", over, config.HW_MAX_FILES)
        ix = [stamp, [], array.array("i"), {}]
        cap = config.HW_CHUNK_MAX_BYTES
        for fi in range(len(stamp)):
            board = stamp[fi][0].rsplit(".", 1)[0].lower()
            if board == "generic":
                board = None
            path = config.DATASHEETS_DIR + "/" + stamp[fi][0]
            ix[1].append((path, board))
            # another file may take a quarter of the chunks at most
            room = 4 * config.HW_MAX_CHUNKS if _mine(stamp[fi][0], mine) else len(ix[2]) + config.HW_MAX_CHUNKS
            al = ix[3].setdefault(board, {})
            # the chunk being built starts at `start`, in the section whose heading is at
            # `head`, its last blank line ends at `blank`; `text`: it holds more than blank lines
            start = off = 0
            head = blank = -1
            text = fence = False
            flag = 0  # 128 in a Pin Aliases section
            try:
                f = open(seam.real_path(path), "rb")
            except OSError as e:
                log.exc("hw", path, e)
                continue
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
                            line = line[:k]
                            f.seek(off + k)
                    s = line.strip()
                    if len(s) > 2 and s[0] == s[1] == s[2] == 96:  # ```
                        fence = not fence
                    h = 0
                    while h < n and line[h] == 35:  # #
                        h += 1
                    heading = not fence and 0 < h < 7 and h < n and line[h] in (32, 9)
                    if not line or heading or off + n - start > cap:
                        # a heading or the end closes the chunk; over the cap, it ends at its
                        # last blank line when the rest fits in the next one, else before this line
                        at = blank if blank > start and off + n - blank <= cap and line and not heading else off
                        if text and at > start and len(ix[2]) < min(room, 4 * config.HW_MAX_CHUNKS):
                            ix[2].extend((fi | flag, start, at - start, head))
                        text = at < off
                        start = at
                        blank = -1
                    if not line:
                        break
                    if heading:
                        head = off
                        text = True
                        s = s.lower()
                        flag = 128 if "pin alias".encode() in s or "脚别名".encode() in s else 0
                    elif not s:
                        blank = off + n
                    else:
                        text = True
                        # an alias, maybe: "| name | pin | kind |", "- name: pin kind", "name = pin"
                        if flag and not fence:
                            try:
                                s = s.decode().lstrip("-*+ ")
                            except UnicodeError:
                                s = ""
                            if s[:1] == "|":
                                s = s.strip("|").replace("|", ":", 1)
                            i = s.find(":")
                            k = s.find("=")
                            if k > 0 and (i < 1 or k < i):
                                i = k
                            p = parse_pin(s[i + 1:]) if i > 0 else None
                            a = norm_alias(s[:i])
                            if p is not None and a and len(a) <= 40:
                                w = s[i + 1:].lower().replace(",", " ").replace("(", " ").replace(")", " ").split()
                                k = "in" if "in" in w or "input" in w else \
                                    "ws2812" if "ws2812" in w or "neopixel" in w else "out"
                                for x in ("dht11", "dht22", "ds18b20", "adc"):  # sensors (mimi.hw.sensors)
                                    if x in w:
                                        k = x
                                al[a] = (p, k)
                    off += n
        _idx.append(ix)
        return ix


def parse_pin(text):
    """``"13"``, ``"GPIO13"``, ``"io 13"``, ``"pin 13 (v1.1)"`` -> 13; None when no pin."""
    s = text.strip().lower()
    for p in ("gpio", "pin", "io"):
        if s.startswith(p):
            s = s[len(p):].lstrip(" _")  # not "-": "GPIO-1" or "pin -5" is a minus, no pin
            break
    n = 0
    while n < len(s) and "0" <= s[n] <= "9":
        n += 1
    if 0 < n < 4 and (n == len(s) or s[n] in " \t(,;.|"):
        return int(s[:n])
    return None  # "4`, ..." in prose is not a pin


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
                b = f.readline(160)  # a long heading is cut
                k = len(b) - 1  # drop its last character: the newline, or one the cut split
                while k > 0 and b[k] & 0xC0 == 0x80:
                    k -= 1
                h = b[:k].decode().rstrip() + " (continued)\n"
            f.seek(off)
            return h + f.read(n).decode()
    except (OSError, UnicodeError):
        return ""


def files_text():
    """What the datasheets folder holds, for tools and the CLI: one line per file (``path
    (board): N chunks``), then the configured board's pin aliases (``pin aliases:
    porch_light=GPIO4, ...``)."""
    ix = index()
    lines = []
    for fi in range(len(ix[1])):
        n = 0
        for j in range(0, len(ix[2]), 4):
            n += ix[2][j] & 127 == fi
        lines.append("%s (%s): %d chunks" % (ix[1][fi][0], ix[1][fi][1] or "every board", n))
    al = aliases()
    a = []
    for k in sorted(al):
        a.append("%s=GPIO%d" % (k, al[k][0]))
    lines.append("pin aliases: " + (", ".join(a) or "none"))
    return "\n".join(lines) if ix[1] else "no datasheets in " + config.DATASHEETS_DIR
