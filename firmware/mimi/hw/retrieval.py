"""Hardware notes for one message: the pin aliases it names and the datasheet chunks its
keywords pick (ZeroClaw's HardwareRag, seed 002; no vectors, keywords only).

Keywords: latin words of 3 or more characters, lower-cased, minus a short list of
stop words; Chinese/Japanese/Korean text has no spaces, so each run of such characters
gives its overlapping two-character pieces ("打开板载灯" -> 打开, 开板, 板载, 载灯), the usual
dictionary-free way to index CJK. At most ``HW_RAG_MAX_KEYWORDS`` per message.

Score of a chunk: +1 per keyword found in it (case-insensitive), +2 when the chunk's board
is the configured one (``config.get("board")``). A chunk is a candidate only when it
matches at least one keyword, or two when the message has three or more (ZeroClaw ranks
every chunk, so its board boost alone pulls in documentation for "hello"; a weather
question that shares one common word with a datasheet should not either).

An alias is named when all its words are words of the message (``red_led``: "the red
LED"), or, for an alias with non-latin characters, when it appears in the message.
"""
from mimi import config, seam
from mimi.hw import datasheets

TAG = "hw"

_STOP = (" the and for you your are was were can could would should will what when where which"
         " who how why this that these those with from into about please have has had does did"
         " not but all any its our out there their them they then than too very just also some"
         " get got let like want need tell know make now today yes okay thanks thank hello hey ")
_STOP_CJK = " 一下 什么 怎么 可以 我们 你们 这个 那个 帮我 请问 一个 现在 "
_ALIASES_HEAD = "[Pin aliases for this message]\n"
_DOCS_HEAD = "[Hardware documentation]\n"

_buf = []


def _cls(ch):
    """0: separator, 1: latin letter or digit, 2: CJK character."""
    o = ord(ch)
    if o < 128:
        return 1 if ch.isalpha() or ch.isdigit() else 0
    if 0x3400 <= o <= 0x9FFF or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF:
        return 2
    return 1 if 0xC0 <= o < 0x2000 and o not in (0xD7, 0xF7) else 0


def runs(text):
    """Split ``text`` into ``[(run, kind)]``: latin words (kind 1, lower-cased) and CJK runs (2)."""
    out = []
    start = 0
    kind = 0
    for i in range(len(text) + 1):
        k = _cls(text[i]) if i < len(text) else 0
        if k != kind:
            if kind:
                out.append((text[start:i].lower(), kind))
            start = i
            kind = k
    return out


def keywords(text):
    """The message's keywords as lower-case UTF-8 ``bytes``, first seen first, deduplicated."""
    out = []
    for run, kind in runs(text):
        if kind == 1:
            words = (run,) if len(run) > 2 and (" %s " % run) not in _STOP else ()
        else:
            words = [run[i:i + 2] for i in range(len(run) - 1)]
        for w in words:
            if kind == 2 and (" %s " % w) in _STOP_CJK:
                continue
            b = w.encode()
            if b not in out:
                out.append(b)
                if len(out) >= config.HW_RAG_MAX_KEYWORDS:
                    return out
    return out


def named_aliases(text, board=None):
    """Aliases the message names: ``[(board or None, alias, pin, kind)]``, the configured
    board's first, then the generic ones (an alias in both is given once, the board's)."""
    ix = datasheets.index()
    b = (board or config.get("board") or "").lower()
    words = []
    for run, kind in runs(text):
        if kind == 1:
            words.append(run)
    low = text.lower()
    out = []
    seen = []
    for bd in (b, None):
        for a, (pin, kind) in sorted(ix.aliases.get(bd, {}).items()):
            if a in seen:
                continue
            hit = True
            if max(a) > "\x7f":  # non-latin alias: look for it as written
                hit = a in low or a.replace("_", "") in low
            else:
                for part in a.split("_"):
                    if part and part not in words:
                        hit = False
                        break
            if hit:
                seen.append(a)
                out.append((bd, a, pin, kind))
    return out


def _buffer():
    if not _buf:
        _buf.append(bytearray(config.HW_CHUNK_MAX_BYTES))
    return _buf[0]


def rank(ix, kws, limit, board=None):
    """Score every chunk of ``ix`` for keywords ``kws`` (list of bytes); return the best
    ``[(score, chunk index)]``, highest first (earlier chunk first on a tie). Reads each
    file once, chunk by chunk, into one reused buffer. Pin Aliases sections are left out:
    their lines reach the model as the aliases a message names."""
    if not kws:
        return []
    b = (board or config.get("board") or "").lower()
    need = 1 if len(kws) <= 2 else 2
    best = []
    with datasheets._locked():
        buf = _buffer()
        mv = memoryview(buf)
        f = None
        fi = -1
        try:
            for i in range(len(ix)):
                if i in ix.alias_chunks:
                    continue
                if ix.c_file[i] != fi:
                    if f:
                        f.close()
                    fi = ix.c_file[i]
                    try:
                        f = open(seam.real_path(ix.files[fi][0]), "rb")
                    except OSError:
                        f = None
                if f is None:
                    continue
                f.seek(ix.c_off[i])
                n = f.readinto(mv[:ix.c_len[i]]) or 0
                low = bytes(mv[:n]).lower()
                hits = 0
                for k in kws:
                    if k in low:
                        hits += 1
                low = None
                if hits < need:
                    continue
                score = hits + (2 if ix.board_of(i) == b else 0)
                j = len(best)
                while j > 0 and best[j - 1][0] < score:
                    j -= 1
                if j < limit:
                    best.insert(j, (score, i))
                    if len(best) > limit:
                        best.pop()
        finally:
            if f:
                f.close()
    return best


def _bytes(s):
    return len(s.encode())


def _cut(s, limit):
    """``s`` cut to at most ``limit`` bytes of UTF-8 at a character boundary, with a marker."""
    mark = "\n[cut to fit]\n"
    b = s.encode()
    if len(b) <= limit:
        return s
    end = limit - len(mark)
    if end <= 0:
        return ""
    while end > 0 and (b[end] & 0xC0) == 0x80:
        end -= 1
    return b[:end].decode() + mark


def build(text, budget_bytes, max_chunks):
    """The notes for ``text`` in at most ``budget_bytes`` of UTF-8: an aliases section and a
    documentation section (either may be absent). Returns ``(notes str, chunks used)``."""
    if not text or budget_bytes < 64:
        return ("", 0)
    ix = datasheets.index()
    if not ix.files:
        return ("", 0)
    parts = []
    left = budget_bytes
    al = named_aliases(text)
    if al:
        lines = [_ALIASES_HEAD]
        for bd, a, pin, kind in al:
            lines.append("%s: %s = GPIO%d%s\n" % (bd or "generic", a, pin, "" if kind == "out" else " (%s)" % kind))
        s = _cut("".join(lines), left)
        parts.append(s)
        left -= _bytes(s)
    used = 0
    ranked = rank(ix, keywords(text), max_chunks)
    if ranked and left > len(_DOCS_HEAD) + 64:
        left -= len(_DOCS_HEAD)
        docs = [_DOCS_HEAD]
        first = None
        for score, i in ranked:  # whole chunks, best first, each that still fits
            piece = "--- %s (%s) ---\n%s\n" % (ix.source(i), ix.board_of(i) or "every board",
                                              datasheets.text(ix, i).strip())
            n = _bytes(piece)
            if n <= left:
                docs.append(piece)
                left -= n
                used += 1
            elif first is None:
                first = piece
        if not used and first is not None and left >= 256:  # none fits whole: the best, cut
            docs.append(_cut(first, left))
            used = 1
        if used:
            parts.extend(docs)
    return ("".join(parts), used)


def for_message(text, budget_bytes):
    """The hardware notes the context adds for this inbound ``text`` (str), at most
    ``budget_bytes`` of UTF-8; "" when the message names no alias and matches no chunk.

    Shape::

        [Pin aliases for this message]
        esp32-s3-devkitc-1: rgb_led = GPIO38 (ws2812)
        [Hardware documentation]
        --- esp32-s3-devkitc-1.md (esp32-s3-devkitc-1) ---
        ## Onboard RGB LED ...

    Reads the datasheet chunks from flash (``mimi.hw.datasheets``); never raises for a
    missing or unreadable datasheet folder (returns "").
    """
    return build(text, budget_bytes, config.HW_RAG_MAX_CHUNKS)[0]
