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

# Stop words, latin and CJK pairs, each between spaces.
_STOP = (" the and for you your are was were can could would should will what when where which"
         " who how why this that these those with from into about please have has had does did"
         " not but all any its our out there their them they then than too very just also some"
         " get got let like want need tell know make now today yes okay thanks thank hello hey"
         " 一下 什么 怎么 可以 我们 你们 这个 那个 帮我 请问 一个 现在 ")

_buf = []  # one chunk buffer, allocated on first use


def runs(text):
    """Split ``text`` into ``[(run, kind)]``: latin words (kind 1, lower-cased) and runs of
    CJK characters (kind 2); everything else separates them."""
    out = []
    run = []
    kind = 0
    for ch in text + " ":
        o = ord(ch)
        if o < 128:
            k = 1 if ch.isalpha() or ch.isdigit() else 0
        elif 0x3040 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF:  # kana, CJK, hangul
            k = 2
        else:  # accented latin, greek, cyrillic... are letters; symbols are not
            k = 1 if 0xC0 <= o < 0x2000 and o not in (0xD7, 0xF7) else 0
        if k != kind and run:
            out.append(("".join(run).lower(), kind))
            run = []
        if k:
            run.append(ch)
        kind = k
    return out


def keywords(text):
    """The message's keywords as lower-case UTF-8 ``bytes``, first seen first, deduplicated."""
    out = []
    for run, kind in runs(text):
        words = [run[i:i + 2] for i in range(len(run) - 1)] if kind == 2 else [run] if len(run) > 2 else ()
        for w in words:
            b = w.encode()
            if " %s " % w not in _STOP and b not in out:
                out.append(b)
                if len(out) >= config.HW_RAG_MAX_KEYWORDS:
                    return out
    return out


def rank(ix, kws, limit, board=None):
    """Score every chunk of ``ix`` for keywords ``kws`` (list of bytes); return the best
    ``[(score, chunk index)]``, highest first (earlier chunk first on a tie). Reads each
    file once, chunk by chunk, into one reused buffer. Pin Aliases sections are left out:
    their lines reach the model as the aliases a message names."""
    b = (board or config.get("board") or "").lower()
    need = 1 if len(kws) < 3 else 2
    best = []
    ch = ix[2]
    with datasheets._lock:
        if not _buf:
            _buf.append(bytearray(config.HW_CHUNK_MAX_BYTES))
        mv = memoryview(_buf[0])
        for fi in range(len(ix[1]) if kws else 0):
            try:
                f = open(seam.real_path(ix[1][fi][0]), "rb")
            except OSError:
                continue
            with f:
                for j in range(0, len(ch), 4):
                    if ch[j] != fi:  # another file's, or a Pin Aliases section
                        continue
                    f.seek(ch[j + 1])
                    n = f.readinto(mv[:ch[j + 2]]) or 0
                    low = bytes(mv[:n]).lower()
                    hits = 0
                    for k in kws:
                        hits += k in low
                    if hits >= need:  # (score, -chunk): sorted high to low, the earlier chunk wins a tie
                        best.append((hits + (2 if ix[1][fi][1] == b else 0), -(j // 4)))
                        best.sort(reverse=True)
                        del best[limit:]
    return [(s, -i) for s, i in best]


def _cut(s, limit):
    """``s`` cut to at most ``limit`` bytes of UTF-8 at a character boundary, with a marker."""
    b = s.encode()
    if len(b) <= limit:
        return s
    end = limit - 14  # the marker's length
    if end <= 0:
        return ""
    while b[end] & 0xC0 == 0x80:
        end -= 1
    return b[:end].decode() + "\n[cut to fit]\n"


def for_message(text, budget_bytes, max_chunks=config.HW_RAG_MAX_CHUNKS):
    """The hardware notes the context adds for this inbound ``text`` (str), at most
    ``budget_bytes`` of UTF-8 and ``max_chunks`` chunks; "" when the message names no alias
    and matches no chunk. The ``hardware_docs`` tool calls it with its own limits.

    Shape::

        [Pin aliases for this message]
        esp32-s3-devkitc-1: rgb_led = GPIO38 (ws2812)
        [Hardware documentation]
        --- esp32-s3-devkitc-1.md (esp32-s3-devkitc-1) ---
        ## Onboard RGB LED ...

    Whole chunks go in best first, each that still fits; when none fits, the best one cut
    to fit. Reads the datasheet chunks from flash (``mimi.hw.datasheets``); never raises
    for a missing or unreadable datasheet folder (returns "").
    """
    if not text or budget_bytes < 64:
        return ""
    ix = datasheets.index()
    b = (config.get("board") or "").lower()
    words = [r for r, k in runs(text) if k == 1]
    low = text.lower()
    out = []
    seen = []
    for bd in (b, None):  # the configured board's aliases first; a generic one of the same name is not repeated
        for a, (pin, kind) in sorted(ix[3].get(bd, {}).items()):
            if a not in seen and (a in low or a.replace("_", "") in low if max(a) > "\x7f"
                                  else all(w in words for w in a.split("_") if w)):
                seen.append(a)
                out.append("%s: %s = GPIO%d%s\n" % (bd or "generic", a, pin, "" if kind == "out" else " (%s)" % kind))
    left = budget_bytes
    if out:
        out = [_cut("[Pin aliases for this message]\n" + "".join(out), left)]
        left -= len(out[0].encode())
    docs = []
    first = None
    left -= 25  # the heading's length
    for s, i in rank(ix, keywords(text), max_chunks, b) if left > 64 else ():
        fi = ix[2][4 * i]
        piece = "--- %s (%s) ---\n%s\n" % (ix[1][fi][0].rsplit("/", 1)[-1], ix[1][fi][1] or "every board",
                                          datasheets.text(ix, i).strip())
        n = len(piece.encode())
        if n <= left:
            docs.append(piece)
            left -= n
        elif first is None:
            first = piece
    if not docs and first and left >= 256:
        docs.append(_cut(first, left))
    if docs:
        out.append("[Hardware documentation]\n")
    return "".join(out + docs)
