"""Telegram text handling, pure functions: Markdown to Telegram HTML, splitting at the
4096 limit, UTF-16 lengths, and repairing surrogate pairs.

Everything works on UTF-8 bytes, where indexing is O(1) on both runtimes (MicroPython
indexes a ``str`` by walking it). Markup characters are ASCII, and a UTF-8 multi-byte
character never contains an ASCII byte, so scanning bytes is safe.

Sources: https://core.telegram.org/bots/api#html-style (supported tags, escaping),
https://core.telegram.org/bots/api#sendmessage ("1-4096 characters after entities
parsing"; Telegram counts UTF-16 code units), tdlib ``parse_html`` (what is rejected).
"""
from micropython import const

TEXT_MAX_UNITS = const(4096)  # sendMessage limit, UTF-16 code units after parsing
_FENCE_RESERVE = const(32)  # room for closing and reopening a code fence across a cut
_LANG_MAX = const(16)
_DEPTH_MAX = const(4)  # nesting of inline markup (bounds recursion on hostile input)

_BS = const(92)  # backslash
_TICK = const(96)
_STAR = const(42)
_UNDER = const(95)
_TILDE = const(126)
_LBRACKET = const(91)
_PUNCT = b"\\`*_~[]()#+-.!>|{}"
_LINK_SCHEMES = (b"http://", b"https://", b"tg://", b"mailto:")


# -- lengths and surrogates -------------------------------------------------------------


def units(b):
    """UTF-16 code units in UTF-8 bytes ``b``: 1 per character, 2 above U+FFFF."""
    n = 0
    for c in b:
        if c < 0x80 or c >= 0xC0:
            n += 2 if c >= 0xF0 else 1
    return n


def utf16_len(s):
    """Length of ``s`` as Telegram counts it (UTF-16 code units)."""
    return units(s.encode())


def fix_surrogates(s):
    """Join UTF-16 surrogate pairs left apart in ``s``; a lone half becomes U+FFFD.

    Telegram escapes every non-ASCII character in its JSON (``\\ud83d\\ude00`` for an
    emoji) and MicroPython's ``json.loads`` decodes each escape on its own, giving two
    3-byte sequences ``ED A0 BD ED B8 80`` instead of one 4-byte character. CPython
    joins pairs itself but can leave a lone half, which cannot be encoded; both end here
    as valid text. Returns ``s`` itself when there is nothing to fix.
    """
    try:
        b = s.encode()
    except UnicodeError:  # CPython: a lone surrogate
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in s)
    i = b.find(b"\xed")
    if i < 0:
        return s
    out = bytearray()
    n = len(b)
    last = 0
    while 0 <= i < n - 2:
        c1 = b[i + 1]
        if c1 < 0xA0:  # ED 80-9F: an ordinary character (U+D000-U+D7FF)
            i = b.find(b"\xed", i + 1)
            continue
        out += b[last:i]
        cp = 0xD000 | ((c1 & 0x3F) << 6) | (b[i + 2] & 0x3F)
        if cp <= 0xDBFF and i + 5 < n and b[i + 3] == 0xED and 0xB0 <= b[i + 4] <= 0xBF:
            lo = 0xD000 | ((b[i + 4] & 0x3F) << 6) | (b[i + 5] & 0x3F)
            out += chr(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)).encode()
            i += 6
        else:
            out += b"\xef\xbf\xbd"
            i += 3
        last = i
        i = b.find(b"\xed", i)
    out += b[last:]
    return bytes(out).decode()


# -- Markdown to Telegram HTML ----------------------------------------------------------


def escape(b):
    """HTML-escape bytes: ``&``, ``<``, ``>`` (all Telegram requires)."""
    if b"&" in b:
        b = b.replace(b"&", b"&amp;")
    if b"<" in b:
        b = b.replace(b"<", b"&lt;")
    if b">" in b:
        b = b.replace(b">", b"&gt;")
    return b


def _attr(b):
    return escape(b).replace(b'"', b"&quot;")


def _space(c):
    return c in (32, 9, 10, 13)


def _alnum(c):
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c >= 0x80


def _close(b, start, end, marker):
    """Position of the marker that closes an emphasis opened before ``start``, or -1."""
    m = marker[0]
    single = len(marker) == 1
    j = start
    while True:
        j = b.find(marker, j, end)
        if j < 0:
            return -1
        k = j + len(marker)
        ok = j > start and not _space(b[j - 1])
        if ok and single and ((k < end and b[k] == m) or b[j - 1] == m):
            ok = False  # part of a double marker
        if ok and m == _UNDER and k < end and _alnum(b[k]):
            ok = False  # snake_case_word
        if ok:
            return j
        j += 1


def _link(b, i, end):
    """Parse ``[text](url)`` at ``i``: (text_end, url_start, url_end, after) or None."""
    j = b.find(b"](", i + 1, end)
    if j < 0:
        return None
    k = b.find(b")", j + 2, end)
    if k < 0:
        return None
    url = b[j + 2:k]
    if b" " in url or not any(url.startswith(s) for s in _LINK_SCHEMES):
        return None
    return (j, j + 2, k, k + 1)


def _inline(b, i, end, out, depth):
    """Append the HTML for inline Markdown ``b[i:end]`` (one line) to ``out``.

    Tags are only ever written in matched pairs, so the result always parses.
    """
    lit = i
    while i < end:
        c = b[i]
        if c == _BS and i + 1 < end and b[i + 1] in _PUNCT:
            out += escape(b[lit:i])
            out += escape(b[i + 1:i + 2])
            i += 2
            lit = i
            continue
        if c == _TICK:
            n = 1
            while i + n < end and b[i + n] == _TICK:
                n += 1
            j = b.find(b[i:i + n], i + n, end)
            if j > i + n:
                out += escape(b[lit:i])
                out += b"<code>"
                out += escape(b[i + n:j])
                out += b"</code>"
                i = j + n
                lit = i
            else:
                i += n
            continue
        if depth < _DEPTH_MAX and c in (_STAR, _UNDER, _TILDE):
            double = i + 1 < end and b[i + 1] == c
            if double or c != _TILDE:
                marker = b[i:i + 2] if double else b[i:i + 1]
                k = i + len(marker)
                opens = k < end and not _space(b[k])
                if opens and c == _UNDER and i > 0 and _alnum(b[i - 1]):
                    opens = False
                j = _close(b, k, end, marker) if opens else -1
                if j > k:
                    tag = b"s" if c == _TILDE else (b"b" if double else b"i")
                    out += escape(b[lit:i])
                    out += b"<" + tag + b">"
                    _inline(b, k, j, out, depth + 1)
                    out += b"</" + tag + b">"
                    i = j + len(marker)
                    lit = i
                    continue
            i += 2 if double else 1
            continue
        if c == _LBRACKET and depth < _DEPTH_MAX:
            ln = _link(b, i, end)
            if ln and ln[0] > i + 1:
                out += escape(b[lit:i])
                out += b'<a href="' + _attr(b[ln[1]:ln[2]]) + b'">'
                _inline(b, i + 1, ln[0], out, _DEPTH_MAX)  # no links inside links
                out += b"</a>"
                i = ln[3]
                lit = i
                continue
        i += 1
    out += escape(b[lit:end])


def _fence(line):
    """For a fence line (up to 3 spaces, then ```), the language (bytes); else None."""
    s = line.lstrip(b" ")
    if len(line) - len(s) > 3 or not s.startswith(b"```"):
        return None
    lang = s[3:].strip()
    ok = bytearray()
    for c in lang[:_LANG_MAX]:
        if _alnum(c) and c < 0x80 or c in b"+-#_":
            ok.append(c)
    return bytes(ok)


def _heading(line):
    n = 0
    while n < len(line) and n < 7 and line[n] == 35:  # '#'
        n += 1
    if 1 <= n <= 6 and n < len(line) and line[n] == 32:
        return n + 1
    return 0


def _bullet(line):
    s = line.lstrip(b" ")
    if len(s) >= 2 and s[0] in b"-*+" and s[1] == 32:
        return len(line) - len(s)
    return -1


def md_to_html(md):
    """Convert the model's Markdown to Telegram HTML (str to str).

    Handles fenced code blocks (with language), inline code, ``**bold**``/``__bold__``,
    ``*italic*``/``_italic_`` (not inside snake_case), ``~~strike~~``, ``[text](url)``
    (http, https, tg, mailto), ``#`` headings (bold), ``-``/``*``/``+`` bullets, and
    ``>`` quotes. Everything else is text with ``&``, ``<``, ``>`` escaped. The visible
    text is never longer than ``md``, so a chunk from ``split`` still fits once converted.
    """
    lines = md.encode().split(b"\n")
    out = bytearray()
    lang = None  # inside a fence: its language (bytes, maybe empty)
    first_code = False
    quoting = False
    n = len(lines)
    for idx in range(n):
        line = lines[idx]
        f = _fence(line)
        if lang is not None:
            if f is not None and not f:  # a bare ``` closes the block
                out += b"</code></pre>" if lang else b"</pre>"
                lang = None
                if idx + 1 < n:
                    out += b"\n"
                continue
            if not first_code:
                out += b"\n"
            first_code = False
            out += escape(line)
            continue
        if f is not None:
            lang = f
            first_code = True
            out += b'<pre><code class="language-' + f + b'">' if f else b"<pre>"
            continue
        if line.startswith(b">"):  # a quote; never a fence line, so never inside code
            if not quoting:
                out += b"<blockquote>"
            body = line[1:]
            if body.startswith(b" "):
                body = body[1:]
            _inline(body, 0, len(body), out, 0)
            quoting = idx + 1 < n and lines[idx + 1].startswith(b">")
            if not quoting:
                out += b"</blockquote>"
        else:
            h = _heading(line)
            bl = _bullet(line) if not h else -1
            if h:
                out += b"<b>"
                _inline(line, h, len(line), out, 0)
                out += b"</b>"
            elif bl >= 0:
                out += line[:bl] + b"\xe2\x80\xa2 "  # U+2022 bullet, as long as "- "
                _inline(line, bl + 2, len(line), out, 0)
            else:
                _inline(line, 0, len(line), out, 0)
        if idx + 1 < n:
            out += b"\n"
    if lang is not None:  # an unclosed fence ends with the text
        out += b"</code></pre>" if lang else b"</pre>"
    return bytes(out).decode()


# -- splitting --------------------------------------------------------------------------


def cut_points(b, limit):
    """Where to cut UTF-8 bytes ``b`` so each piece has at most ``limit`` UTF-16 units.

    Returns the end offsets of the pieces (the last is ``len(b)``); the pieces are an
    exact partition of ``b``. A cut goes after a blank line when one lies in the second
    half of the window, else after a line break, else after a space, else (one long
    word) between two characters, never inside one.
    """
    n = len(b)
    cuts = []
    start = 0
    half = limit // 2
    while start < n:
        used = 0
        i = start
        para = line = word = -1
        pu = lu = wu = 0
        full = False
        while i < n:
            c = b[i]
            if c < 0x80 or c >= 0xC0:
                u = 2 if c >= 0xF0 else 1
                if used + u > limit:
                    full = True
                    break
                used += u
            i += 1
            if c == 10:
                if i - 2 >= start and b[i - 2] == 10:
                    para, pu = i, used
                line, lu = i, used
            elif c == 32 or c == 9:
                word, wu = i, used
        if not full:
            cuts.append(n)
            break
        if para > 0 and pu >= half:
            cut = para
        elif line > 0 and lu >= half:
            cut = line
        elif word > 0 and wu >= half:
            cut = word
        else:
            cut = max(para, line, word)
            if cut <= start:
                cut = i
        cuts.append(cut)
        start = cut
    return cuts


def _fence_state(piece, lang, at_line_start):
    """The fence state after ``piece``: None outside a code block, else its language."""
    lines = piece.split(b"\n")
    for k in range(len(lines)):
        if k == 0 and not at_line_start:
            continue
        f = _fence(lines[k])
        if f is None:
            continue
        lang = f if lang is None else (None if not f else lang)
    return lang


def split(md, limit=TEXT_MAX_UNITS):
    """Split Markdown ``md`` into chunks of at most ``limit`` UTF-16 units (list of str).

    Each chunk is sent as one message (converted with ``md_to_html``, or as it is when
    Telegram rejects the HTML). A code block cut in two is closed at the end of one chunk
    and reopened at the start of the next, so both render as code. Nothing is lost or
    repeated: without code fences, ``"".join(split(md))`` is ``md``.
    """
    b = md.encode()
    if len(b) <= limit or units(b) <= limit:
        return [md] if md else []
    reserve = _FENCE_RESERVE if b.find(b"```") >= 0 else 0
    cuts = cut_points(b, limit - reserve)
    out = []
    start = 0
    lang = None
    for cut in cuts:
        piece = b[start:cut]
        head = b"```" + lang + b"\n" if lang is not None else b""
        lang = _fence_state(piece, lang, start == 0 or b[start - 1] == 10)
        tail = b""
        if lang is not None:
            tail = b"```" if piece.endswith(b"\n") else b"\n```"
        out.append((head + piece + tail).decode())
        start = cut
    return out
