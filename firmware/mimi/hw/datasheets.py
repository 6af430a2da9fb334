"""Datasheets on flash: an index of chunks (offsets only) and the pin aliases.

Files: ``/data/datasheets/<board>.md`` or ``.txt``; the file name (lower case, without
the extension) is the board, and ``generic.md``/``generic.txt`` is for every board
(ZeroClaw's HardwareRag, seed 002). Other names are indexed too, as other boards.

Chunks: a markdown heading (``#`` to ``######`` outside code fences) starts a new chunk;
a section over ``HW_CHUNK_MAX_BYTES`` (2 KB) is cut at its last blank line, else at a
line, else inside a long line at a UTF-8 boundary. RAM holds only each chunk's file,
offset, length and the offset of its section's heading; ``text(i)`` reads a chunk from
flash when it is used.

Pin aliases: the lines of a section whose heading says ``Pin Aliases`` (or 引脚别名):
- markdown table rows ``| red_led | 13 |`` (header and ``|---|`` rows are skipped), or
- ``red_led: 13`` / ``red_led = 13`` lines (list markers allowed).
Pins may be written ``13``, ``GPIO13``, ``IO13`` or ``pin 13``. Aliases are lower-cased,
with spaces and hyphens made ``_``. A word after the pin (or a third table column) says
the kind: ``in``/``input`` (a button or sensor: read, never switched) or
``ws2812``/``neopixel`` (an addressable RGB LED); anything else is a plain output.

The index is rebuilt when a file in the folder is added, removed, or changes size or
time (one ``stat`` per file per use).
"""
import array
import os

from mimi import config, log, seam

TAG = "hw"

_EXTS = (".md", ".txt")
_HEAD_LINE_MAX = 160  # bytes of a heading shown before a continued chunk
_ALIAS_HEADS = (b"pin alias", "引脚别名".encode(), "管脚别名".encode())
_KIND_WORDS = {"in": "in", "input": "in", "ws2812": "ws2812", "neopixel": "ws2812",
               "sk6812": "ws2812", "out": "out", "output": "out"}


class Index:
    """What is known about the datasheets folder: files, chunks, aliases."""

    def __init__(self, stamp):
        self.stamp = stamp
        self.files = []  # [(device path, board or None for every board)]
        self.c_file = array.array("B")
        self.c_off = array.array("I")
        self.c_len = array.array("H")
        self.c_head = array.array("i")  # offset of the section's heading line, -1: none
        self.aliases = {}  # board or None -> {alias: (pin, kind)}
        self.full = False  # HW_MAX_CHUNKS reached
        self.alias_chunks = []  # chunks of Pin Aliases sections (given as aliases, not as docs)

    def __len__(self):
        return len(self.c_off)

    def board_of(self, i):
        return self.files[self.c_file[i]][1]

    def source(self, i):
        return self.files[self.c_file[i]][0].rsplit("/", 1)[-1]


_idx = [None]
_lock = []


def _locked():
    if not _lock:
        _lock.append(seam.allocate_lock())
    return _lock[0]


def board_of_name(name):
    """``ESP32-S3-DevKitC-1.md`` -> ``esp32-s3-devkitc-1``; ``generic.md`` -> None."""
    stem = name.rsplit(".", 1)[0].lower()
    return None if stem == "generic" else stem


def _listing():
    """Sorted ``[(name, size, mtime)]`` of the datasheet files (at most HW_MAX_FILES)."""
    folder = seam.real_path(config.DATASHEETS_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        if not n.lower().endswith(_EXTS):
            continue
        try:
            st = os.stat(folder + "/" + n)
        except OSError:
            continue
        if st[0] & 0x4000:  # a folder
            continue
        out.append((n, st[6], st[8]))
        if len(out) >= config.HW_MAX_FILES:
            log.warn(TAG, "over %d datasheet files: the rest are ignored", config.HW_MAX_FILES)
            break
    return out


def index():
    """The current ``Index``, rebuilt when the folder changed since the last call."""
    stamp = _listing()
    with _locked():
        if _idx[0] is None or _idx[0].stamp != stamp:
            _idx[0] = None
            seam.collect()
            ix = Index(stamp)
            for name, _, _ in stamp:
                _scan(ix, config.DATASHEETS_DIR + "/" + name, board_of_name(name))
            _idx[0] = ix
            log.info(TAG, "datasheets: %d files, %d chunks", len(ix.files), len(ix))
        return _idx[0]


def forget():
    """Drop the index (tests; the next use rebuilds it)."""
    _idx[0] = None


def _utf8_tail(b):
    """How many bytes at the end of ``b`` begin an unfinished UTF-8 character."""
    n = len(b)
    k = 0
    while k < 4 and k < n and (b[n - 1 - k] & 0xC0) == 0x80:
        k += 1
    if k < n and b[n - 1 - k] >= 0xC0:
        lead = b[n - 1 - k]
        need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        return k + 1 if k + 1 < need else 0
    return 0


def _heading(line):
    """True for a markdown heading line: 1-6 ``#`` then a space."""
    n = 0
    while n < len(line) and line[n] == 35:  # '#'
        n += 1
    return 0 < n <= 6 and n < len(line) and line[n] in (32, 9)


def _scan(ix, path, board):
    """Add ``path``'s chunks and aliases to ``ix``. A file that cannot be read is skipped."""
    fi = len(ix.files)
    ix.files.append((path, board))
    cap = config.HW_CHUNK_MAX_BYTES
    try:
        f = open(seam.real_path(path), "rb")
    except OSError as e:
        log.exc(TAG, "cannot read " + path, e)
        return
    aliases = ix.aliases.setdefault(board, {})
    # st: chunk start, section heading, offset after the last blank line, chunk has text,
    # in a Pin Aliases section
    st = [0, -1, -1, False, False]

    def emit(end):
        if st[3] and end > st[0]:
            if len(ix.c_off) < config.HW_MAX_CHUNKS:
                if st[4]:
                    ix.alias_chunks.append(len(ix.c_off))
                ix.c_file.append(fi)
                ix.c_off.append(st[0])
                ix.c_len.append(end - st[0])
                ix.c_head.append(st[1])
            elif not ix.full:
                ix.full = True
                log.warn(TAG, "over %d chunks: the rest are not searched", config.HW_MAX_CHUNKS)
        st[0] = end
        st[2] = -1
        st[3] = False

    try:
        off = 0
        fence = False
        while True:
            line = f.readline(cap)
            if not line:
                break
            n = len(line)
            if n == cap and line[-1] != 10:  # a piece of a long line: end it on a character
                k = _utf8_tail(line)
                if k:
                    n -= k
                    line = line[:n]
                    f.seek(off + n)
            s = line.strip()
            if s.startswith(b"```"):
                fence = not fence
            if not fence and _heading(line):
                emit(off)
                st[1] = off
                st[3] = True
                low = line.lower()
                st[4] = False
                for h in _ALIAS_HEADS:
                    if h in low:
                        st[4] = True
            else:
                if off + n - st[0] > cap:
                    if st[2] > st[0]:  # cut at the last blank line
                        at = st[2]
                        emit(at)
                        st[3] = at < off  # the lines after it go on in the next chunk
                    if off + n - st[0] > cap:
                        emit(off)
                if not s:
                    st[2] = off + n
                else:
                    st[3] = True
                    if st[4] and not fence:
                        _alias_line(line, aliases)
            off += n
        emit(off)
    finally:
        f.close()


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
    s = text.strip().strip("`*_ ").lower()
    out = []
    for ch in s:
        if ch in " -\t":
            ch = "_"
        elif not (ch.isalpha() or ch.isdigit() or ch == "_" or ord(ch) > 0x7F):
            return ""  # prose or markup, not a name
        out.append(ch)
    return "".join(out)


def _kind(words):
    for w in words:
        k = _KIND_WORDS.get(w.strip("()[],.;").lower())
        if k:
            return k
    return "out"


def _alias_line(line, aliases):
    """Parse one line of a Pin Aliases section into ``aliases`` (alias -> (pin, kind))."""
    try:
        s = line.decode().strip()
    except UnicodeError:
        return
    if s.startswith("|"):
        cells = s.strip("|").split("|")
        if len(cells) < 2:
            return
        name, pin, rest = cells[0], cells[1], cells[2:]
        kind = _kind(" ".join(rest).split() + cells[1].split()[1:])
    else:
        if s[:2] in ("- ", "* ", "+ "):
            s = s[2:]
        cut = -1
        for sep in (":", "="):
            i = s.find(sep)
            if i > 0 and (cut < 0 or i < cut):
                cut = i
        if cut < 0:
            return
        name, pin = s[:cut], s[cut + 1:]
        kind = _kind(pin.split()[1:])
    p = parse_pin(pin)
    a = norm_alias(name)
    if p is None or not a or len(a) > 40:
        return
    aliases[a] = (p, kind)


def aliases(board=None):
    """Aliases for ``board`` (default: the configured board) plus the generic ones:
    ``{alias: (pin, kind)}``; the board's own entry wins over a generic one."""
    ix = index()
    b = (board or config.get("board") or "").lower()
    out = dict(ix.aliases.get(None, {}))
    out.update(ix.aliases.get(b, {}))
    return out


def read_chunk(ix, i, buf):
    """Read chunk ``i`` of ``ix`` into ``buf`` (a bytearray of HW_CHUNK_MAX_BYTES); return
    the number of bytes, 0 when the file went away."""
    path = ix.files[ix.c_file[i]][0]
    n = ix.c_len[i]
    try:
        with open(seam.real_path(path), "rb") as f:
            f.seek(ix.c_off[i])
            return f.readinto(memoryview(buf)[:n]) or 0
    except OSError:
        return 0


def text(ix, i):
    """Chunk ``i`` as str; a piece that does not start its section is preceded by the
    section's heading line and ``(continued)``."""
    buf = bytearray(ix.c_len[i])
    n = read_chunk(ix, i, buf)
    body = bytes(buf[:n]).decode()
    h = ix.c_head[i]
    if h < 0 or h == ix.c_off[i]:
        return body
    try:
        with open(seam.real_path(ix.files[ix.c_file[i]][0]), "rb") as f:
            f.seek(h)
            head = f.readline(_HEAD_LINE_MAX)
        k = _utf8_tail(head)
        head = head[:len(head) - k].decode().rstrip()
    except (OSError, UnicodeError):
        return body
    return "%s (continued)\n%s" % (head, body)


def files_text():
    """One line per datasheet: ``name (board): N chunks, M aliases``; for tools and the CLI."""
    ix = index()
    if not ix.files:
        return "no datasheets in %s" % config.DATASHEETS_DIR
    counts = [0] * len(ix.files)
    for fi in ix.c_file:
        counts[fi] += 1
    lines = []
    for fi in range(len(ix.files)):
        path, board = ix.files[fi]
        lines.append("%s (%s): %d chunks" % (path, board or "every board", counts[fi]))
    return "\n".join(lines)
