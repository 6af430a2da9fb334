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

An alias is named when its words are words of the message, in order (``red_led``: "the
red LED"), or, for an alias with non-latin characters, when it appears in the message.
"""
from micropython import const

from mimi import config, seam
from mimi.hw import datasheets

# Tunables (config.py holds those shared by several modules and the settings).
_HW_RAG_MAX_CHUNKS = const(3)  # datasheet chunks per message

# Stop words, latin and CJK pairs, each between spaces.
_STOP = const(" the and for you your are was can what when where which who how why this that with from about"
              " please have has not but all any there they them then just some get like want need tell know make now"
              " today yes thanks hello hey 一下 什么 怎么 可以 这个 帮我 请问 现在 ")

_buf = []  # one chunk buffer, allocated on first use


def keywords(text, words=None):
    """The message's keywords as lower-case UTF-8 ``bytes``, first seen first, deduplicated.

    ``words``: a list that gets every latin word of the message (lower-cased), stop words
    and short ones too (for matching pin aliases).
    """
    out = []
    b = seam.as_bytes(text)
    if len(b) == len(text):  # ASCII: its bytes, not its characters (see mimi.storage.fs.check)
        _ascii_words(b, words, out)
        return out
    run = []
    kind = 0
    for ch in text + " ":  # runs of latin letters or digits (kind 1) and of CJK characters (2)
        o = ord(ch)
        # ASCII letters and digits, and accented latin, greek, cyrillic...: 1; kana, CJK, hangul: 2
        k = (1 if ch.isalpha() or ch.isdigit() else 0) if o < 128 else 2 if 0x3040 <= o <= 0x9FFF or \
            0xAC00 <= o <= 0xD7AF else 1 if 0xC0 <= o < 0x2000 and o not in (0xD7, 0xF7) else 0
        if k != kind and run:
            r = "".join(run).lower()
            run = []
            if kind == 1 and words is not None:
                words.append(r)
            for i in range(len(r) - 1 if kind == 2 else len(r) > 2):  # CJK: each pair; latin: the word
                w = r[i:i + 2] if kind == 2 else r
                b = w.encode()
                if " %s " % w not in _STOP and b not in out and len(out) < config.HW_RAG_MAX_KEYWORDS:
                    out.append(b)
        if k:
            run.append(ch)
        kind = k
    return out


_hits = [None, {}, 0]  # the index they are for, keyword -> the chunks holding it (tuple), entries kept
_HITS_WORDS_MAX = const(48)  # keywords remembered (each about 40 bytes with its entry)...
_HITS_MAX = const(192)  # ...and chunk numbers over all of them (8 bytes each), before starting afresh


def _ascii_words(b, words, out):
    """``keywords`` for ASCII text ``b`` (bytes-like): runs of letters and digits."""
    start = -1
    n = len(b)
    for i in range(n + 1):
        c = b[i] if i < n else 32
        if 97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57:
            if start < 0:
                start = i
        elif start >= 0:
            w = bytes(b[start:i]).lower()
            start = -1
            r = None
            if words is not None:
                r = w.decode()
                words.append(r)
            if len(w) > 2 and w not in out and len(out) < config.HW_RAG_MAX_KEYWORDS:
                if " %s " % (r or w.decode()) not in _STOP:
                    out.append(w)


def rank(ix, kws, limit, board=None):
    """Score every chunk of ``ix`` for keywords ``kws`` (list of bytes); return the best
    ``[(score, chunk index)]``, highest first (earlier chunk first on a tie). Pin Aliases
    sections are left out: their lines reach the model as the aliases a message names.

    Which chunks hold a keyword is remembered for the index (a few KB at most, started
    afresh past ``_HITS_WORDS_MAX`` words or ``_HITS_MAX`` chunk numbers): a chat repeats its words, and reading every chunk again
    for each message was a third of a turn's context build (issue 17). Only keywords not
    seen yet are looked for, reading each file once, chunk by chunk, into one reused
    buffer."""
    b = (board or config.get("board") or "").lower()
    if not kws:
        return []
    h = _hits
    if h[0] is not ix:
        h[0], h[1], h[2] = ix, {}, 0
    memo = h[1]
    new = [k for k in kws if k not in memo]
    if new:
        _look(ix, new, memo)
    counts = {}
    for k in kws:
        for c in memo.get(k, ()):
            counts[c] = counts.get(c, 0) + 1
    best = []
    need = 1 if len(kws) < 3 else 2
    for c in counts:
        hits = counts[c]
        if hits >= need:
            # kept as (score, -chunk): high to low, the earlier chunk wins a tie
            best.append((hits + (2 if ix[1][ix[2][4 * c]][1] == b else 0), -c))
    best.sort(reverse=True)
    return [(s, -i) for s, i in best[:limit]]


def _look(ix, new, memo):
    """Find the chunks of ``ix`` holding each keyword of ``new`` and remember them."""
    h = _hits
    found = [[] for _ in new]
    ch = ix[2]
    with datasheets._lock:
        if not _buf:
            _buf.append(bytearray(config.HW_CHUNK_MAX_BYTES))
        mv = memoryview(_buf[0])
        for fi in range(len(ix[1])):
            try:
                f = open(seam.real_path(ix[1][fi][0]), "rb")
            except OSError:
                continue
            with f:
                for j in range(0, len(ch), 4):
                    if ch[j] == fi:  # not another file's, nor a Pin Aliases section
                        f.seek(ch[j + 1])
                        low = bytes(mv[:f.readinto(mv[:ch[j + 2]]) or 0]).lower()
                        for t in range(len(new)):
                            if new[t] in low:
                                found[t].append(j // 4)
    n = 0
    for t in found:
        n += len(t)
    if h[2] + n > _HITS_MAX or len(memo) + len(new) > _HITS_WORDS_MAX:  # a word in no chunk takes an entry too
        memo.clear()
        h[2] = 0
    for t in range(len(new)):
        memo[new[t]] = tuple(found[t])
    h[2] += n


def for_message(text, budget_bytes, max_chunks=_HW_RAG_MAX_CHUNKS):
    """The hardware notes the context adds for this inbound ``text`` (str), at most
    ``budget_bytes`` of UTF-8 and ``max_chunks`` chunks; "" when the message names no alias
    and matches no chunk. The ``hardware_docs`` tool calls it with its own limits.

    Shape::

        [Pin aliases for this message]
        esp32-s3-devkitc-1: rgb_led = GPIO38 (ws2812)
        [Hardware documentation]
        --- esp32-s3-devkitc-1.md (esp32-s3-devkitc-1) ---
        ## Onboard RGB LED ...

    Alias lines and whole chunks (best first) go in while they fit; when no chunk fits
    whole, the best one cut to fit. Reads the datasheet chunks from flash
    (``mimi.hw.datasheets``); never raises for a missing or unreadable datasheet folder
    (returns "").
    """
    ix = datasheets.index()
    b = (config.get("board") or "").lower()
    low = text.lower()
    words = [""]
    kws = keywords(text, words)
    words = " ".join(words) + " "  # the latin words of the message, each between spaces
    left = budget_bytes
    out = []
    seen = []
    for bd in (b, None):  # the configured board's aliases first; a generic one of the same name is not repeated
        al = ix[3].get(bd, {})
        for a in sorted(al):
            # named: a non-latin alias as written; a latin one when its words are words of the message
            # non-latin: more bytes than characters (max(a) made each character a string: issue 17)
            hit = a in low or a.replace("_", "") in low if len(seam.as_bytes(a)) > len(a) else \
                " %s " % a.replace("_", " ") in words
            if not hit or a in seen:
                continue
            pin, kind = al[a]
            s = "%s: %s = GPIO%d%s\n" % (bd or "generic", a, pin, "" if kind == "out" else " (%s)" % kind)
            n = len(s.encode()) + (0 if out else 31)  # the first line brings the section's heading
            if n <= left:
                seen.append(a)
                out.append(s if out else "[Pin aliases for this message]\n" + s)
                left -= n
    cut = None
    n = len(out)
    for s, i in rank(ix, kws, max_chunks, b) if left > 89 else ():
        fi = ix[2][4 * i]
        s = "--- %s (%s) ---\n%s\n" % (ix[1][fi][0].rsplit("/", 1)[1], ix[1][fi][1] or "every board",
                                      datasheets.text(ix, i).strip())
        if len(out) == n:
            s = "[Hardware documentation]\n" + s
        if len(s.encode()) <= left:
            out.append(s)
            left -= len(s.encode())
        elif cut is None:
            cut = s if len(out) == n else ""
    if cut and len(out) == n and left >= 256:  # no chunk fits whole: the best one, cut to fit
        s = cut.encode()
        i = left - 14  # the marker's length
        while s[i] & 0xC0 == 0x80:
            i -= 1
        out.append(s[:i].decode() + "\n[cut to fit]\n")
    return "".join(out)
