"""Every post mimi builds is one the fake Feishu accepts, and no word is lost (host only).

Random Markdown from the pieces models write goes through ``fsformat.post`` and the
chunking the channel uses; the fake's content check (``host_sim.fakes.feishu._check``,
itself behind what lark-oapi sends in tests/fakes/) judges each post, and each chunk's
post body stays under Feishu's 30 KB limit, also in a non-Latin script.
"""
import json
import random

from host_sim.fakes.feishu import POST_MAX_BYTES, _check
from mimi.channels import feishu, fsformat, tgformat

PIECES = ["**", "*", "__", "_", "~~", "`", "```", "```python\n", "\n```\n", "[", "](", ")",
          "https://example.org/a?b=1&c=2", "<", ">", "&", '"', "# ", "- ", "> ", "---\n", "\n",
          "\n\n", " ", "word", "snake_case", "\U0001F600", "\u4e2d\u6587", "é", "\\*", "1. ", "| a | b |", "2 * 3"]


def _random_md(rng, n):
    return "".join(rng.choice(PIECES) for _ in range(n))


def _letters(s):
    return sorted(c for c in s.lower() if c.isalnum())


def _all_text(c):
    """Every letter a post carries: texts, link addresses, code languages."""
    out = []
    for para in c["zh_cn"]["content"]:
        for e in para:
            out += [e.get("text", ""), e.get("href", ""), e.get("language", "") if e["tag"] == "code_block" else ""]
    return "".join(out)


def test_random_markdown_makes_posts_the_fake_accepts_and_keeps_the_words():
    rng = random.Random(15)
    for _ in range(3000):
        md = _random_md(rng, rng.randint(1, 40))
        c = fsformat.post(md)
        assert _check("post", c) is None, (md, c)
        got = _all_text(c)
        if "```" in md and "TEXT" in got:  # a block without a language is marked TEXT
            got = got.replace("TEXT", "", got.count("TEXT") - md.upper().count("TEXT"))
        assert _letters(got) == _letters(md), (md, c)  # no letter lost, none invented


def test_long_replies_in_any_script_split_into_posts_under_the_limit():
    for unit in ("word ", "\u4e2d\u6587\u5b57 ", '"\\' * 3 + " ", "\U0001F600 "):
        md = unit * (30000 // len(unit))
        for chunk in tgformat.split(md, feishu._FS_CHUNK_UNITS):
            body = json.dumps({"receive_id": "ou_x", "msg_type": "post",
                               "content": json.dumps(fsformat.post(chunk))})
            assert len(body.encode()) <= min(POST_MAX_BYTES, feishu._FS_POST_MAX_BYTES), unit
