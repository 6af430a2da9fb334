"""Every chunk mimi sends parses as Telegram HTML and fits the limit (host only).

The check is the fake's tdlib-faithful parser (itself checked against tdlib's vectors in
tests/fakes/), fed random Markdown built from the pieces models write.
"""
import random

from host_sim.fakes.telegram import parse_html, utf16_len
from mimi.channels import tgformat

PIECES = ["**", "*", "__", "_", "~~", "`", "```", "```python\n", "\n```\n", "[", "](", ")",
          "https://example.org/a?b=1&c=2", "<", ">", "&", "&amp;", '"', "# ", "- ", "> ", "\n",
          "\n\n", " ", "word", "snake_case", "\U0001F600", "\u4e2d\u6587", "é", "\\*", "<b>", "</i>",
          "1. ", "| a | b |", "2 * 3"]


def _random_md(rng, n):
    return "".join(rng.choice(PIECES) for _ in range(n))


def test_random_markdown_always_converts_to_valid_html():
    rng = random.Random(1234)
    for _ in range(3000):
        md = _random_md(rng, rng.randint(1, 40))
        html = tgformat.md_to_html(md)
        text, _ = parse_html(html)  # raises HtmlError on anything Telegram would refuse
        assert utf16_len(text) <= utf16_len(md)


def test_random_long_markdown_splits_into_valid_chunks():
    rng = random.Random(99)
    for _ in range(30):
        md = _random_md(rng, rng.randint(1500, 4000))
        for chunk in tgformat.split(md, 4096):
            assert utf16_len(chunk) <= 4096  # also fits when sent as plain text
            text, _ = parse_html(tgformat.md_to_html(chunk))
            assert utf16_len(text) <= 4096


def test_long_code_block_chunks_render_as_code():
    code = "\n".join("x%d = a < b and c > d  # %s" % (i, "\u4e2d" * (i % 7)) for i in range(700))
    md = "Here:\n\n```python\n" + code + "\n```\n\nDone."
    chunks = tgformat.split(md, 4096)
    assert len(chunks) >= 3
    for chunk in chunks:
        text, ents = parse_html(tgformat.md_to_html(chunk))
        assert any(e["type"] == "pre" and e.get("language") == "python" for e in ents)
