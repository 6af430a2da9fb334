"""The model's Markdown as a Feishu rich-text (``post``) message, and inbound messages as text.

Out: ``post(md)`` builds the ``content`` of a ``msg_type: post`` message
(https://open.feishu.cn/document/server-docs/im-v1/message-content-description/create_json#45e0953e):
``{"zh_cn": {"title": "", "content": [paragraph, ...]}}``, each paragraph a list of
elements. The structured tags render the same on every Feishu client (the ``md`` tag
depends on the client's version, the lark-oapi SDK's channel notes), so:
- a fenced code block -> ``{"tag": "code_block", "language", "text"}``;
- ``# heading`` -> its text in bold; ``---`` -> ``{"tag": "hr"}``;
- ``- item`` -> ``• item``; ``> quote`` -> ``│ quote``; numbered items as they are;
- inline ``**bold**``/``__bold__``, ``*italic*``/``_italic_``, ``~~struck~~`` -> ``text``
  elements with ``style`` ``bold``, ``italic``, ``lineThrough`` (the styles post knows);
  ``[text](https://...)`` -> ``{"tag": "a"}``; `` `code` `` stays as typed (post has no
  inline code style); a line's other text is plain.
Lines of one paragraph (no blank line between) are one text run with line breaks.

In: ``post_text(content)``: a received ``post`` message's text (title, then paragraphs;
``at`` elements as ``@name``, mention keys resolved by the caller).
"""
from micropython import const

_FS_LANG_MAX = const(16)
_STYLES = (("**", "bold"), ("__", "bold"), ("~~", "lineThrough"), ("*", "italic"), ("_", "italic"))


def _text(out, s, style=None):
    if s:
        e = {"tag": "text", "text": s}
        if style:
            e["style"] = [style]
        out.append(e)


def inline(s):
    """Elements for one paragraph's inline Markdown ``s`` (str): a list of dicts."""
    out = []
    i = start = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "`":  # a code span: kept as typed, its inside not parsed
            j = s.find("`", i + 1)
            i = j + 1 if j > 0 else i + 1
            continue
        if c == "[":
            j = s.find("](", i + 1)
            k = s.find(")", j + 2) if j > 0 else -1
            href = s[j + 2:k] if k > 0 else ""
            if j > i + 1 and k > 0 and "\n" not in s[i:k] and (href[:8] == "https://" or href[:7] == "http://"):
                _text(out, s[start:i])
                out.append({"tag": "a", "text": s[i + 1:j], "href": href})
                i = start = k + 1
                continue
        if c in "*_~":
            for mark, style in _STYLES:
                m = len(mark)
                if s[i:i + m] != mark or i + m >= n or s[i + m] in " \n" + mark[0]:
                    continue
                if mark[0] == "_" and i and s[i - 1].isalpha():  # snake_case is no emphasis
                    continue
                j = s.find(mark, i + m + 1)
                while m == 1 and j > 0 and j + 1 < n and s[j + 1] == mark:  # "*a **b**": not this one
                    j = s.find(mark, j + 2)
                if j < 0 or s[j - 1] in " \n" or "\n\n" in s[i:j]:
                    continue
                _text(out, s[start:i])
                _text(out, s[i + m:j], style)
                i = start = j + m
                break
            else:
                i += 1
            continue
        i += 1
    _text(out, s[start:])
    return out


def _fence(st):
    """For an opening fence line (stripped), its language ('' for none); else None. Only
    ``` and a word count: a line with more after the backticks is text, so none of it
    is lost."""
    if st[:3] != "```":
        return None
    w = st[3:].strip()
    if len(w) > _FS_LANG_MAX:
        return None
    for c in w:
        if not (c.isalpha() or c.isdigit() or c in "_+#.-"):
            return None
    return w


def _heading(line):
    k = 0
    while k < len(line) and line[k] == "#":
        k += 1
    return line[k + 1:].strip() if 0 < k <= 6 and line[k:k + 1] == " " else None


def post(md, title=""):
    """The ``content`` dict of a post message for Markdown ``md`` (str)."""
    paras = []
    buf = []
    code = None  # lines of an open code block, after its language
    lang = ""

    def flush():
        if buf:
            el = inline("\n".join(buf))
            if el:
                paras.append(el)
            del buf[:]

    for line in md.split("\n"):
        st = line.strip()
        if code is not None:
            if st[:3] == "```" and not st.strip("`"):
                paras.append([{"tag": "code_block", "language": lang or "TEXT", "text": "\n".join(code)}])
                code = None
            else:
                code.append(line)
            continue
        f = _fence(st)
        if f is not None:
            flush()
            code, lang = [], f.upper()
            continue
        h = _heading(st)
        if not st:
            flush()
        elif h is not None:
            flush()
            el = inline(h)
            for e in el:
                if e["tag"] == "text" and "style" not in e:
                    e["style"] = ["bold"]
            if el:
                paras.append(el)
        elif len(st) >= 3 and st[0] in "-*_" and st == st[0] * len(st):
            flush()
            paras.append([{"tag": "hr"}])
        elif st[:2] in ("- ", "* ", "+ "):
            flush()
            paras.append([{"tag": "text", "text": "• "}] + inline(st[2:]))
        elif st[:1] == ">":
            flush()
            paras.append([{"tag": "text", "text": "│ "}] + inline(st[1:].strip()))
        else:
            buf.append(line.rstrip())
    if code is not None:  # an unclosed block: what came is code
        paras.append([{"tag": "code_block", "language": lang or "TEXT", "text": "\n".join(code)}])
    flush()
    return {"zh_cn": {"title": title, "content": paras or [[{"tag": "text", "text": " "}]]}}


def post_text(c, names=None):
    """The text of a received post's ``content`` dict ``c`` (``{"title", "content"}``, or
    the same under a language key): title, then each paragraph on a line. ``at`` elements
    become ``@name``; ``names`` maps a mention key (``@_user_1``) to the text that stands
    for it ("" drops it: the bot's own). Images and media are left out."""
    if "content" not in c:
        for v in c.values():
            if isinstance(v, dict):
                c = v
                break
    names = names or {}
    lines = [c["title"]] if c.get("title") else []
    for para in c.get("content") or ():
        parts = []
        for e in para if isinstance(para, list) else ():
            if not isinstance(e, dict):
                continue
            t = e.get("tag")
            if t in ("text", "md"):
                parts.append(e.get("text") or "")
            elif t == "a":
                parts.append("%s (%s)" % (e.get("text") or "", e.get("href") or ""))
            elif t == "at":
                k = e.get("user_id") or ""
                parts.append(names[k] if k in names else "@" + (e.get("user_name") or k))
            elif t == "code_block":
                parts.append("```%s\n%s\n```" % ((e.get("language") or "").lower(), e.get("text") or ""))
            elif t == "emotion":
                parts.append(":%s:" % e.get("emoji_type", ""))
        line = "".join(parts).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)
