"""Telegram formatting and splitting (pure logic, both runtimes)."""
import json

from mimi.channels import tgformat as f

RUNTIMES = ("cpython", "micropython")

EMOJI = "\U0001F600"  # 4 bytes in UTF-8, 2 UTF-16 units


def test_utf16_len_counts_astral_characters_twice():
    assert f.utf16_len("") == 0
    assert f.utf16_len("abc") == 3
    assert f.utf16_len("é€") == 2
    assert f.utf16_len(EMOJI) == 2
    assert f.utf16_len("a" + EMOJI + "b") == 4


def test_fix_surrogates_joins_pairs_from_json_escapes():
    # Telegram escapes non-ASCII; MicroPython's json.loads leaves the pair apart.
    s = json.loads('"hi \\ud83d\\ude00 there \\u00e9"')
    fixed = f.fix_surrogates(s)
    assert fixed == "hi " + EMOJI + " there é"
    assert fixed.encode() == b"hi \xf0\x9f\x98\x80 there \xc3\xa9"
    assert f.utf16_len(fixed) == 13


def test_fix_surrogates_replaces_a_lone_half_and_keeps_hangul():
    s = json.loads('"a\\ud83db\\ude00c"')
    assert f.fix_surrogates(s) == "a\ufffdb\ufffdc"
    hangul = "\ud7a3\ud000"  # U+D7A3, U+D000: real characters that start with byte ED
    assert f.fix_surrogates(hangul) == hangul
    assert f.fix_surrogates("plain") == "plain"


def test_fix_surrogates_two_emoji_in_a_row():
    s = json.loads('"\\ud83d\\ude00\\ud83d\\udc4d"')
    assert f.fix_surrogates(s) == EMOJI + "\U0001F44D"


def test_escape_and_plain_text():
    assert f.md_to_html("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    assert f.md_to_html("<b>not a tag</b>") == "&lt;b&gt;not a tag&lt;/b&gt;"


def test_inline_markup():
    assert f.md_to_html("**bold** and __bold__") == "<b>bold</b> and <b>bold</b>"
    assert f.md_to_html("*it* and _it_") == "<i>it</i> and <i>it</i>"
    assert f.md_to_html("~~gone~~") == "<s>gone</s>"
    assert f.md_to_html("**bold _it_**") == "<b>bold <i>it</i></b>"
    assert f.md_to_html("`x < 1` **`y`**") == "<code>x &lt; 1</code> <b><code>y</code></b>"
    assert f.md_to_html("``a ` b``") == "<code>a ` b</code>"


def test_markers_that_are_not_markup_stay_text():
    assert f.md_to_html("snake_case_name and __init__") == "snake_case_name and <b>init</b>"
    assert f.md_to_html("my_var_name") == "my_var_name"
    assert f.md_to_html("2 * 3 * 4") == "2 * 3 * 4"
    assert f.md_to_html("**unclosed bold") == "**unclosed bold"
    assert f.md_to_html("a `lone backtick") == "a `lone backtick"
    assert f.md_to_html("\\*not italic\\*") == "*not italic*"
    assert f.md_to_html("~one tilde~") == "~one tilde~"


def test_links():
    assert f.md_to_html("[mimi](https://example.org/a?b=1&c=\"2\")") == \
        '<a href="https://example.org/a?b=1&amp;c=&quot;2&quot;">mimi</a>'
    assert f.md_to_html("[x](javascript:alert)") == "[x](javascript:alert)"
    assert f.md_to_html("[**b**](http://x.y)") == '<a href="http://x.y"><b>b</b></a>'  # Telegram nests them


def test_blocks():
    md = "# Title\n- one\n  * two\n> quoted\n> still\nafter"
    html = f.md_to_html(md)
    assert html == ("<b>Title</b>\n\u2022 one\n  \u2022 two\n<blockquote>quoted\nstill</blockquote>\nafter")


def test_code_blocks():
    md = "see:\n```python\nif a < b:\n    x = a**2 * b**2\n```\ndone"
    assert f.md_to_html(md) == ('see:\n<pre><code class="language-python">if a &lt; b:\n'
                                '    x = a**2 * b**2</code></pre>\ndone')
    assert f.md_to_html("```\nplain\n```") == "<pre>plain</pre>"
    assert f.md_to_html("```sh\nunclosed") == '<pre><code class="language-sh">unclosed</code></pre>'
    # a language with odd characters is cleaned, never injected
    assert 'class="language-abc"' in f.md_to_html('```a"b<c\nx\n```')


def test_deep_nesting_is_bounded():
    md = "**a " * 400 + "x" + " a**" * 400
    html = f.md_to_html(md)
    assert html.count("<b>") == html.count("</b>") <= 4


def _visible(html):
    # text as Telegram shows it: tags dropped, the 4 entities decoded
    out = []
    i = 0
    while i < len(html):
        if html[i] == "<":
            i = html.index(">", i) + 1
            continue
        out.append(html[i])
        i += 1
    s = "".join(out)
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


def test_visible_text_is_never_longer_than_the_markdown():
    for md in ("**b** _i_ `c` [l](http://x.y) # h", "- a\n> q\n```py\nx\n```", "a & b < c", EMOJI * 3):
        assert f.utf16_len(_visible(f.md_to_html(md))) <= f.utf16_len(md)


def test_cuts_partition_and_prefer_paragraphs():
    text = ("word " * 300 + "\n\n") * 5  # paragraphs of 1502 units
    parts = f.split(text, 4096)
    assert len(parts) > 1 and "".join(parts) == text
    for p in parts[:-1]:
        assert p.endswith("\n\n")  # each cut follows a blank line
        assert f.utf16_len(p.encode()) <= 4096


def test_split_falls_back_to_lines_then_words_then_characters():
    lines = ("x" * 99 + "\n") * 100  # no blank line
    parts = f.split(lines, 4096)
    assert "".join(parts) == lines
    assert all(p.endswith("\n") for p in parts[:-1])
    words = ("abcdefghi " * 1000)
    parts = f.split(words, 4096)
    assert "".join(parts) == words
    assert all(p.endswith(" ") for p in parts[:-1])
    blob = "y" * 9000
    parts = f.split(blob, 4096)
    assert [len(p) for p in parts] == [4096, 4096, 808]


def test_split_never_cuts_a_character():
    s = (EMOJI * 2500) + ("é" * 10)  # 5010 units of emoji, no spaces
    parts = f.split(s, 4096)
    assert "".join(parts) == s
    for p in parts:
        assert f.utf16_len(p) <= 4096
        p.encode()  # a cut inside a character would not survive this on CPython
    assert f.utf16_len(parts[0]) in (4095, 4096)
    odd = "a" + EMOJI * 3000  # a pair would straddle unit 4096
    parts = f.split(odd, 4096)
    assert f.utf16_len(parts[0]) == 4095 and "".join(parts) == odd


def test_split_counts_utf16_not_bytes_or_characters():
    cjk = "\u4e2d" * 4096  # 4096 units, 12288 bytes: one message
    assert f.split(cjk, 4096) == [cjk]
    emoji = EMOJI * 2049  # 2049 characters but 4098 units: two messages
    assert len(f.split(emoji, 4096)) == 2


def test_split_short_and_empty():
    assert f.split("hello") == ["hello"]
    assert f.split("") == []


def test_split_closes_and_reopens_a_code_block():
    code = "\n".join("line %d = %d" % (i, i) for i in range(600))
    md = "intro\n\n```python\n" + code + "\n```\nend"
    parts = f.split(md, 4096)
    assert len(parts) >= 2
    for p in parts:
        assert f.utf16_len(p) <= 4096
        assert p.count("```") % 2 == 0  # every chunk's fences balance
        html = f.md_to_html(p)
        assert html.count("<pre>") + html.count("<pre><code") >= 1
    assert parts[1].startswith("```python\n")
    # nothing lost or repeated: every line of code appears exactly once
    body = "".join(parts)
    for i in range(600):
        assert body.count("line %d = %d\n" % (i, i)) + body.count("line %d = %d`" % (i, i)) == 1


def test_what_models_write_that_broke_before():
    # one-line ```code``` is inline code (an info string holds no backtick), not a fence
    assert f.md_to_html("To install it:\n```pip install requests```\nThen **restart**.") == \
        "To install it:\n<code>pip install requests</code>\nThen <b>restart</b>."
    # "```." is no closing fence: its text stays (in the block)
    assert "```." in f.md_to_html("```\ncode\n```.\nmore") and "more" in f.md_to_html("```\ncode\n```.\nmore")
    # balanced parentheses belong to the URL; the link text gets emphasis
    assert f.md_to_html("[Python (language)](https://en.wikipedia.org/wiki/Python_(programming_language))") == \
        '<a href="https://en.wikipedia.org/wiki/Python_(programming_language)">Python (language)</a>'
    assert f.md_to_html("[**Docs**](https://x.org/a).") == '<a href="https://x.org/a"><b>Docs</b></a>.'
    # a bare URL is left as it is: no emphasis out of __init__ or _private_
    for url in ("https://github.com/python/cpython/blob/main/Lib/json/__init__.py", "http://example.com/_private_/x"):
        assert f.md_to_html("see " + url + " now") == "see " + url + " now"
    assert f.md_to_html("a *b* https://x.org/a_b_c **c**") == "a <i>b</i> https://x.org/a_b_c <b>c</b>"


def test_blank_chunks():
    assert f.blank("```json\n```") and f.blank("\n \n\n") and f.blank("")
    assert not f.blank("```ls -l```") and not f.blank("```\nx\n```") and not f.blank("a")
