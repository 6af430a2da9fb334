"""``mimi.channels.fsformat``: Markdown as a Feishu post, a received post as text (plain
asserts: also run under MicroPython)."""
from mimi.channels import fsformat

RUNTIMES = ("cpython", "micropython")


def _paras(md):
    return fsformat.post(md)["zh_cn"]["content"]


def test_inline_styles_links_and_code_spans():
    assert fsformat.inline("a **b** c") == [{"tag": "text", "text": "a "},
                                            {"tag": "text", "text": "b", "style": ["bold"]},
                                            {"tag": "text", "text": " c"}]
    assert fsformat.inline("*it* and ~~no~~") == [{"tag": "text", "text": "it", "style": ["italic"]},
                                                  {"tag": "text", "text": " and "},
                                                  {"tag": "text", "text": "no", "style": ["lineThrough"]}]
    assert fsformat.inline("see [docs](https://x.example/a) now") == [
        {"tag": "text", "text": "see "}, {"tag": "a", "text": "docs", "href": "https://x.example/a"},
        {"tag": "text", "text": " now"}]
    # not markup: snake_case, a lone star, a code span's inside, a link that is not http(s)
    for s in ("my_var_name", "2 * 3 = 6", "`**x**` stays", "[a](javascript:x)", "a ** b"):
        assert fsformat.inline(s) == [{"tag": "text", "text": s}], s
    assert fsformat.inline("_x_") == [{"tag": "text", "text": "x", "style": ["italic"]}]


def test_blocks():
    md = "# Title\n\nline one\nline two\n\n- item *a*\n> quoted\n---\n```py\nx = 1\n\ny = 2\n```\nafter"
    assert _paras(md) == [
        [{"tag": "text", "text": "Title", "style": ["bold"]}],
        [{"tag": "text", "text": "line one\nline two"}],
        [{"tag": "text", "text": "• "}, {"tag": "text", "text": "item "},
         {"tag": "text", "text": "a", "style": ["italic"]}],
        [{"tag": "text", "text": "│ "}, {"tag": "text", "text": "quoted"}],
        [{"tag": "hr"}],
        [{"tag": "code_block", "language": "PY", "text": "x = 1\n\ny = 2"}],
        [{"tag": "text", "text": "after"}]]


def test_an_unclosed_code_block_and_an_empty_reply():
    assert _paras("```\nno end") == [[{"tag": "code_block", "language": "TEXT", "text": "no end"}]]
    assert _paras("") == [[{"tag": "text", "text": " "}]]
    assert fsformat.post("x")["zh_cn"]["title"] == ""


def test_a_received_post_as_text():
    c = {"title": "T", "content": [[{"tag": "at", "user_id": "@_user_1", "user_name": "mimi"},
                                    {"tag": "text", "text": " hi "}, {"tag": "at", "user_id": "@_user_2",
                                                                     "user_name": "Tom"}],
                                   [{"tag": "img", "image_key": "k"}],
                                   [{"tag": "code_block", "language": "PYTHON", "text": "x"}]]}
    assert fsformat.post_text(c, {"@_user_1": ""}) == "T\nhi @Tom\n```python\nx\n```"
    assert fsformat.post_text({"en_us": c}) == "T\n@mimi hi @Tom\n```python\nx\n```"
