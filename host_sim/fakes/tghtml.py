"""Telegram's HTML parse mode as tdlib parses it (``td/telegram/MessageEntity.cpp``,
``parse_html``), for the fake Bot API: the same plain text, the same entities (UTF-16
offsets) and the same error messages ("Unsupported start tag \"x\" at byte offset N").
Checked against tdlib's own test vectors in tests/fakes/test_fake_telegram_html.py.
"""

_HTML_TAGS = ("a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler",
              "tg-emoji", "span", "pre", "code", "blockquote")
_SPACE = b" \t\r\n"


class HtmlError(ValueError):
    """The HTML would be refused by Telegram; ``str(e)`` is tdlib's message."""


def utf16_len(s):
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _decode_entity(b, pos):
    """tdlib ``decode_html_entity``: (code point or 0, position after it)."""
    def at(k):
        return b[k] if k < len(b) else 0

    end = pos + 1
    res = 0
    if at(pos + 1) == 0x23:  # '#'
        end += 1
        if at(pos + 2) == 0x78:  # 'x'
            end += 1
            while chr(at(end)) in "0123456789abcdefABCDEF" and at(end):
                res = res * 16 + int(chr(at(end)), 16)
                end += 1
        else:
            while 0x30 <= at(end) <= 0x39:
                res = res * 10 + at(end) - 0x30
                end += 1
        if res == 0 or res >= 0x10FFFF or end - pos >= 10:
            return 0, pos
    else:
        while chr(at(end)).isalpha() and at(end) < 0x80 and at(end):
            end += 1
        name = b[pos + 1:end]
        res = {b"lt": 0x3C, b"gt": 0x3E, b"amp": 0x26, b"quot": 0x22}.get(name, 0)
        if not res:
            return 0, pos
    if at(end) == 0x3B:  # ';'
        end += 1
    return res, end


def parse_html(text):
    """Parse Telegram HTML as tdlib's ``parse_html`` does: (plain text, entities).

    Entities are Bot API MessageEntity dicts with UTF-16 offsets. Raises ``HtmlError``
    with tdlib's message ("Unsupported start tag \\"x\\" at byte offset N", ...).
    """
    b = text.encode("utf-8", "surrogatepass")
    n = len(b)

    def at(k):
        return b[k] if k < n else 0

    out = []  # code points of the plain text
    u16 = 0
    stack = []  # (tag, argument, utf16 offset, len(out) at start)
    ents = []
    i = 0
    while i < n:
        c = b[i]
        if c == 0x26:  # '&'
            code, j = _decode_entity(b, i)
            if code:
                out.append(chr(code))
                u16 += 2 if code > 0xFFFF else 1
                i = j
                continue
        if c != 0x3C:  # not '<': one UTF-8 character of text
            k = i + 1
            while k < n and (b[k] & 0xC0) == 0x80:
                k += 1
            ch = b[i:k].decode("utf-8", "surrogatepass")
            out.append(ch)
            u16 += utf16_len(ch)
            i = k
            continue
        begin = i
        i += 1
        if at(i) != 0x2F:  # '/': an end tag otherwise
            while at(i) and at(i) not in _SPACE and at(i) != 0x3E:
                i += 1
            if at(i) == 0:
                raise HtmlError("Unclosed start tag at byte offset %d" % begin)
            tag = b[begin + 1:i].decode("utf-8", "replace").lower()
            if tag not in _HTML_TAGS:
                raise HtmlError('Unsupported start tag "%s" at byte offset %d' % (tag, begin))
            arg = ""
            while at(i) != 0x3E:
                while at(i) and at(i) in _SPACE:
                    i += 1
                if at(i) == 0x3E:
                    break
                a0 = i
                while at(i) and at(i) not in _SPACE and at(i) != 0x3D:
                    i += 1
                attr = b[a0:i].decode("utf-8", "replace")
                if not attr:
                    raise HtmlError('Empty attribute name in the tag "%s" at byte offset %d' % (tag, begin))
                while at(i) and at(i) in _SPACE:
                    i += 1
                if at(i) != 0x3D:
                    raise HtmlError('Expected equal sign in declaration of an attribute of the tag "%s" '
                                    'at byte offset %d' % (tag, begin))
                i += 1
                while at(i) and at(i) in _SPACE:
                    i += 1
                if at(i) == 0:
                    raise HtmlError('Unclosed start tag "%s" at byte offset %d' % (tag, begin))
                if at(i) not in (0x22, 0x27):  # a name token
                    t0 = i
                    while at(i) and (chr(at(i)).isalnum() and at(i) < 0x80 or at(i) in (0x2E, 0x2D)):
                        i += 1
                    value = b[t0:i].decode().lower()
                    if at(i) not in _SPACE and at(i) != 0x3E:
                        raise HtmlError("Unexpected end of name token at byte offset %d" % t0)
                else:
                    q = at(i)
                    i += 1
                    vb = []
                    while at(i) and at(i) != q:
                        if at(i) == 0x26:
                            code, j = _decode_entity(b, i)
                            if code:
                                vb.append(chr(code).encode())
                                i = j
                                continue
                        vb.append(bytes([at(i)]))
                        i += 1
                    if at(i) == q:
                        i += 1
                    value = b"".join(vb).decode("utf-8", "replace")
                if at(i) == 0:
                    raise HtmlError("Unclosed start tag at byte offset %d" % begin)
                if tag == "a" and attr == "href":
                    arg = value
                elif tag == "code" and attr == "class" and value.startswith("language-"):
                    arg = value[9:]
                elif tag == "span" and attr == "class" and value.startswith("tg-"):
                    arg = value[3:]
                elif tag == "tg-emoji" and attr == "emoji-id":
                    arg = value
            if tag == "span" and arg != "spoiler":
                raise HtmlError('Tag "span" must have class "tg-spoiler" at byte offset %d' % begin)
            stack.append((tag, arg, u16, len(out)))
            i += 1
        else:
            if not stack:
                raise HtmlError("Unexpected end tag at byte offset %d" % begin)
            while at(i) and at(i) not in _SPACE and at(i) != 0x3E:
                i += 1
            end_tag = b[begin + 2:i].decode("utf-8", "replace").lower()
            while at(i) and at(i) in _SPACE:
                i += 1
            if at(i) != 0x3E:
                raise HtmlError("Unclosed end tag at byte offset %d" % begin)
            i += 1
            tag, arg, off, pos = stack.pop()
            if end_tag and end_tag != tag:
                raise HtmlError('Unmatched end tag at byte offset %d, expected "</%s>", found "</%s>"'
                                % (begin, tag, end_tag))
            length = u16 - off
            if length <= 0:
                continue
            kind = {"i": "italic", "em": "italic", "b": "bold", "strong": "bold", "s": "strikethrough",
                    "strike": "strikethrough", "del": "strikethrough", "u": "underline", "ins": "underline",
                    "tg-spoiler": "spoiler", "span": "spoiler", "blockquote": "blockquote",
                    "pre": "pre", "code": "code", "a": "text_link", "tg-emoji": "custom_emoji"}[tag]
            e = {"type": kind, "offset": off, "length": length}
            if tag == "a":
                url = arg or "".join(out[pos:])
                if not url:
                    continue
                e["url"] = url
            elif tag == "tg-emoji":
                if not arg.isdigit() or int(arg) == 0:
                    raise HtmlError("Invalid custom emoji identifier specified")
                e["custom_emoji_id"] = arg
            elif tag == "code" and ents and ents[-1]["type"] == "pre" and ents[-1]["offset"] == off \
                    and ents[-1]["length"] == length and arg:
                ents[-1]["language"] = arg
                continue
            elif tag == "pre" and ents and ents[-1]["type"] == "code" and ents[-1]["offset"] == off \
                    and ents[-1]["length"] == length and ents[-1].get("language"):
                ents[-1]["type"] = "pre"
                continue
            elif tag == "code" and arg:
                e["language"] = arg  # kept only if a <pre> of the same span follows
            ents.append(e)
    if stack:
        raise HtmlError("Can't find end tag corresponding to start tag %s" % stack[-1][0])
    for e in ents:
        if e["type"] == "code":
            e.pop("language", None)
    ents.sort(key=lambda e: (e["offset"], -e["length"]))
    return "".join(out), ents
