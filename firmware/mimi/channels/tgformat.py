"""Telegram text handling, pure functions: Markdown to Telegram HTML, splitting at the
4096 limit, UTF-16 lengths, and repairing surrogate pairs.

Everything works on UTF-8 bytes, where indexing is O(1) on both runtimes (MicroPython
indexes a ``str`` by walking it). Markup characters are ASCII, and a UTF-8 multi-byte
character never contains an ASCII byte, so scanning bytes is safe. (Tags are written as
short ``str`` literals encoded when used: a ``bytes`` literal costs a heap object each.)

Sources: https://core.telegram.org/bots/api#html-style (supported tags, escaping),
https://core.telegram.org/bots/api#sendmessage ("1-4096 characters after entities
parsing"; Telegram counts UTF-16 code units), tdlib ``parse_html`` (what is rejected).
"""
from micropython import const

TEXT_MAX_UNITS = const(4096)  # sendMessage limit, UTF-16 code units after parsing
# (Private numbers are written in place: a named constant costs an interned name.)
# Inline markup nests at most 4 deep (bounds recursion on hostile input); a fence
# language keeps 16 characters; a split keeps 32 bytes to close and reopen a fence.


def utf16_len(s):
    """Length of ``s`` (str, or UTF-8 bytes) as Telegram counts it: UTF-16 code units, 1
    per character, 2 above U+FFFF."""
    n = 0
    for c in s.encode() if isinstance(s, str) else s:
        if c < 0x80 or c >= 0xC0:
            n += 2 if c >= 0xF0 else 1
    return n


def fix_surrogates(s):
    """Join UTF-16 surrogate pairs left apart in ``s``; a lone half becomes U+FFFD.

    Telegram escapes every non-ASCII character in its JSON (``\\ud83d\\ude00`` for an
    emoji) and MicroPython's ``json.loads`` decodes each escape on its own, giving two
    3-byte sequences ``ED A0 BD ED B8 80`` instead of one 4-byte character. CPython
    joins pairs itself but can leave a lone half, which it cannot encode, except with
    ``surrogatepass``, which gives the same 3 bytes; both end here as valid text.
    Returns ``s`` itself when there is nothing to fix.
    """
    b = s.encode("utf-8", "surrogatepass")  # CPython: a lone half as MicroPython has it
    out = bytearray()
    n = len(b)
    last = i = 0
    while 0 <= i < n - 2:
        i = b.find(b"\xed", i)
        if i < 0 or i >= n - 2:
            break
        c1 = b[i + 1]
        if c1 < 0xA0:  # ED 80-9F: an ordinary character (U+D000-U+D7FF)
            i += 1
            continue
        out += b[last:i]
        cp = 0xD000 | ((c1 & 0x3F) << 6) | (b[i + 2] & 0x3F)
        if cp <= 0xDBFF and i + 5 < n and b[i + 3] == 0xED and 0xB0 <= b[i + 4] <= 0xBF:
            lo = 0xD000 | ((b[i + 4] & 0x3F) << 6) | (b[i + 5] & 0x3F)
            out += chr(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)).encode()
            i += 6
        else:
            out += "\ufffd".encode()
            i += 3
        last = i
    if not last:
        return s
    out += b[last:]
    return bytes(out).decode()


# -- Markdown to Telegram HTML ----------------------------------------------------------


def escape(b):
    """HTML-escape bytes: ``&``, ``<``, ``>`` (all Telegram requires)."""
    return b.replace(b"&", "&amp;".encode()).replace(b"<", "&lt;".encode()).replace(b">", "&gt;".encode())


def _alnum(c):
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c >= 0x80


def _inline(b, i, end, out, depth):
    """Append the HTML for inline Markdown ``b[i:end]`` (one line) to ``out``.

    Tags are only ever written in matched pairs, so the result always parses.
    """
    lit = i
    while i < end:
        c = b[i]
        if c == 92 and i + 1 < end and b[i + 1] in b"\\`*_~[]()#+-.!>|{}":  # a backslash escape
            out += escape(b[lit:i])
            out += escape(b[i + 1:i + 2])
            i += 2
            lit = i
            continue
        if c == 96:  # code: up to the same run of backticks
            n = 1
            while i + n < end and b[i + n] == 96:
                n += 1
            j = b.find(b[i:i + n], i + n, end)
            if j > i + n:
                out += escape(b[lit:i])
                out += "<code>".encode()
                out += escape(b[i + n:j])
                out += "</code>".encode()
                i = j + n
                lit = i
            else:
                i += n
            continue
        if depth < 4 and c in b"*_~":
            double = i + 1 < end and b[i + 1] == c
            if double or c != 126:  # "~" only doubled
                marker = b[i:i + 2] if double else b[i:i + 1]
                k = i + len(marker)
                opens = k < end and b[k] > 32 and not (c == 95 and i > 0 and _alnum(b[i - 1]))  # 95: "_"
                j = k
                while opens:  # the marker that closes it, or -1
                    j = b.find(marker, j, end)
                    if j < 0:
                        break
                    e = j + len(marker)
                    if (j > k and b[j - 1] > 32
                            and not (not double and ((e < end and b[e] == c) or b[j - 1] == c))  # part of a double
                            and not (c == 95 and e < end and _alnum(b[e]))):  # snake_case_word
                        break
                    j += 1
                if opens and j > k:
                    tag = ("s" if c == 126 else "b" if double else "i").encode()  # 126: "~"
                    out += escape(b[lit:i])
                    out += b"<" + tag + b">"
                    _inline(b, k, j, out, depth + 1)
                    out += b"</" + tag + b">"
                    i = j + len(marker)
                    lit = i
                    continue
            i += 2 if double else 1
            continue
        if c == 104 and (i == 0 or not _alnum(b[i - 1])) and (b[i:i + 8] == b"https://" or b[i:i + 7] == b"http://"):
            while i < end and b[i] > 32:  # a bare URL stays as it is (no emphasis in __init__.py)
                i += 1
            continue
        if c == 91 and depth < 3:  # [text](url)
            j = b.find(b"](", i + 1, end)
            k = -1
            if j > i + 1:  # its end: the ")" that balances, as in ...wiki/Python_(language)
                k = j + 2
                d = 0
                while k < end and b[k] > 32 and not (b[k] == 41 and d == 0):
                    d += (b[k] == 40) - (b[k] == 41)
                    k += 1
                if k >= end or b[k] != 41:
                    k = -1
            url = b[j + 2:k]
            ok = False
            for s in b"http:// https:// tg:// mailto:".split():
                ok = ok or url.startswith(s)
            if k > 0 and 32 not in url and ok:
                out += escape(b[lit:i])
                out += '<a href="'.encode() + escape(url).replace(b'"', "&quot;".encode()) + b'">'
                _inline(b, i + 1, j, out, 3)  # emphasis, but no links, inside a link
                out += "</a>".encode()
                i = k + 1
                lit = i
                continue
        i += 1
    out += escape(b[lit:end])


def _fence(line):
    """For a fence line (up to 3 spaces, then ```), the language (bytes); else None.

    As in CommonMark, the text after the backticks (the info string) holds no backtick:
    "```pip install x```" on one line is inline code, not a fence."""
    s = line.lstrip(b" ")
    if len(line) - len(s) > 3 or not s.startswith(b"```"):
        return None
    k = 3
    while k < len(s) and s[k] == 96:
        k += 1
    if 96 in s[k:]:
        return None
    ok = bytearray()
    for c in s[k:].strip()[:16]:
        if _alnum(c) and c < 0x80 or c in b"+-#_":
            ok.append(c)
    return bytes(ok)


def blank(md):
    """True when chunk ``md`` (str) holds nothing but spaces and fence lines: converted, it
    would be an empty message, which Telegram refuses. A one-line ```code``` is content."""
    for line in md.encode().split(b"\n"):
        s = line.strip()
        if s and _fence(line) is None:
            return False
    return True


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
    first = False
    quoting = False
    n = len(lines)
    for idx in range(n):
        line = lines[idx]
        f = _fence(line)
        if lang is not None:
            if f is not None and not line.strip().strip(b"`"):  # a bare ``` closes the block ("```." does not)
                out += ("</code></pre>" if lang else "</pre>").encode()
                lang = None
            else:
                if not first:
                    out += b"\n"
                first = False
                out += escape(line)
                continue
        elif f is not None:
            lang = f
            first = True
            out += '<pre><code class="language-'.encode() + f + b'">' if f else "<pre>".encode()
            continue
        elif line.startswith(b">"):  # a quote; never a fence line, so never inside code
            if not quoting:
                out += "<blockquote>".encode()
            body = line[2:] if line.startswith(b"> ") else line[1:]
            _inline(body, 0, len(body), out, 0)
            quoting = idx + 1 < n and lines[idx + 1].startswith(b">")
            if not quoting:
                out += "</blockquote>".encode()
        else:
            h = 0
            while h < len(line) and h < 7 and line[h] == 35:  # '#'
                h += 1
            s = line.lstrip(b" ")
            if 1 <= h <= 6 and h < len(line) and line[h] == 32:  # a heading: bold
                out += "<b>".encode()
                _inline(line, h + 1, len(line), out, 0)
                out += "</b>".encode()
            elif len(s) >= 2 and s[0] in b"-*+" and s[1] == 32:  # a bullet
                bl = len(line) - len(s)
                out += line[:bl] + "\u2022 ".encode()  # as long as "- "
                _inline(line, bl + 2, len(line), out, 0)
            else:
                _inline(line, 0, len(line), out, 0)
        if idx + 1 < n:
            out += b"\n"
    if lang is not None:  # an unclosed fence ends with the text
        out += ("</code></pre>" if lang else "</pre>").encode()
    return bytes(out).decode()


# -- splitting --------------------------------------------------------------------------


def split(md, limit=TEXT_MAX_UNITS):
    """Split Markdown ``md`` into chunks of at most ``limit`` UTF-16 units (list of str).

    A cut goes after a blank line when one lies in the second half of the window, else
    after a line break, else after a space, else (one long word) between two characters,
    never inside one. Each chunk is sent as one message (converted with ``md_to_html``,
    or as it is when Telegram rejects the HTML). A code block cut in two is closed at the
    end of one chunk and reopened at the start of the next, so both render as code.
    Nothing is lost or repeated: without code fences, ``"".join(split(md))`` is ``md``.
    """
    b = md.encode()
    n = len(b)
    if n <= limit or utf16_len(b) <= limit:
        return [md] if md else []
    fence = "```".encode()
    if b.find(fence) >= 0:
        limit -= 32  # room for closing and reopening a fence
    half = limit // 2
    out = []
    start = 0
    lang = None  # the fence open at the cut: its language, else None
    while start < n:
        used = 0  # UTF-16 units from start to i
        i = start
        para = line = word = -1  # the last cut of each kind so far, and the units before it
        pu = lu = wu = 0
        while i < n:
            c = b[i]
            if c < 0x80 or c >= 0xC0:  # a character starts here
                u = 2 if c >= 0xF0 else 1
                if used + u > limit:
                    break
                used += u
            i += 1
            if c == 10:
                if i - 2 >= start and b[i - 2] == 10:
                    para, pu = i, used
                line, lu = i, used
            elif c == 32 or c == 9:
                word, wu = i, used
        cut = i
        if i < n:  # full: the best boundary in the window
            if para > 0 and pu >= half:
                cut = para
            elif line > 0 and lu >= half:
                cut = line
            elif word > 0 and wu >= half:
                cut = word
            elif max(para, line, word) > start:
                cut = max(para, line, word)
        piece = b[start:cut]
        head = fence + lang + b"\n" if lang is not None else b""
        lines = piece.split(b"\n")
        for k in range(len(lines)):  # follow the fences in this piece
            f = _fence(lines[k]) if k or start == 0 or b[start - 1] == 10 else None
            if f is not None:
                lang = f if lang is None else (None if not lines[k].strip().strip(b"`") else lang)
        tail = b"" if lang is None else fence if piece.endswith(b"\n") else b"\n" + fence
        out.append((head + piece + tail).decode())
        start = cut
    return out
