"""The fake's HTML parser agrees with tdlib's own test vectors (host only).

Vectors from tdlib ``test/message_entities.cpp`` (``TEST(MessageEntities, parse_html)``):
the same input must give the same error text, or the same plain text and entities.
"""
import pytest

from host_sim.fakes.telegram import HtmlError, parse_html

ERRORS = [
    ("\U0001F3DF \U0001F3DF&lt;<abacaba", "Unclosed start tag at byte offset 13"),
    ("\U0001F3DF \U0001F3DF&lt;<abac aba>", 'Unsupported start tag "abac" at byte offset 13'),
    ("\U0001F3DF \U0001F3DF&lt;<abac>", 'Unsupported start tag "abac" at byte offset 13'),
    ("\U0001F3DF \U0001F3DF&lt;<i   =aba>", 'Empty attribute name in the tag "i" at byte offset 13'),
    ("\U0001F3DF \U0001F3DF&lt;<i    aba>",
     'Expected equal sign in declaration of an attribute of the tag "i" at byte offset 13'),
    ("\U0001F3DF \U0001F3DF&lt;<i    aba  =  ", 'Unclosed start tag "i" at byte offset 13'),
    ("\U0001F3DF \U0001F3DF&lt;<i    aba  =  190azAz-.,", "Unexpected end of name token at byte offset 27"),
    ('\U0001F3DF \U0001F3DF&lt;<i    aba  =  "&lt;&gt;&quot;>', "Unclosed start tag at byte offset 13"),
    ("\U0001F3DF \U0001F3DF&lt;</", "Unexpected end tag at byte offset 13"),
    ("\U0001F3DF \U0001F3DF&lt;<b></b></", "Unexpected end tag at byte offset 20"),
    ("\U0001F3DF \U0001F3DF&lt;<i>a</i   ", "Unclosed end tag at byte offset 17"),
    ("\U0001F3DF \U0001F3DF&lt;<i>a</em   >", 'Unmatched end tag at byte offset 17, expected "</i>", found "</em>"'),
    ("<b>x", "Can't find end tag corresponding to start tag b"),
    ("a < b", 'Unsupported start tag "" at byte offset 2'),
]


@pytest.mark.parametrize("html,message", ERRORS)
def test_errors_match_tdlib(html, message):
    with pytest.raises(HtmlError) as e:
        parse_html(html)
    assert str(e.value) == message


S = "\U0001F3DF"
ARROW = "\u27a1\ufe0f"


@pytest.mark.parametrize("html,text,ents", [
    ("", "", []),
    ("&lt;&gt;&amp;&quot;&laquo;&raquo;&#12345678;", '<>&"&laquo;&raquo;&#12345678;', []),
    (ARROW + " " + ARROW + "<i>" + ARROW + " " + ARROW + "</i>", (ARROW + " " + ARROW) * 2,
     [("italic", 5, 5)]),
    (S + " " + S + "<i>" + S + " &lt" + S + "</i>", S + " " + S + S + " <" + S, [("italic", 5, 6)]),
    (S + " " + S + "&lt;<i    aba  =  190azAz-.   >a</i>", S + " " + S + "<a", [("italic", 6, 1)]),
    (S + " " + S + "&lt;<i>a</    >", S + " " + S + "<a", [("italic", 6, 1)]),
    (S + " " + S + "&lt;<b></b>", S + " " + S + "<", []),
    ("<a href=telegram.org> </a>", " ", [("text_link", 0, 1)]),
    ("<i><b> </b> <code> </code></i>", "   ", [("italic", 0, 3), ("bold", 0, 1), ("code", 2, 1)]),
])
def test_texts_and_entities_match_tdlib(html, text, ents):
    got_text, got = parse_html(html)
    assert got_text == text
    assert [(e["type"], e["offset"], e["length"]) for e in got] == ents


def test_pre_code_language():
    text, ents = parse_html(S + " " + S + '&lt;<pre><code class="language-fift">' + S + " " + S + "&lt;</></>")
    assert text == S + " " + S + "<" + S + " " + S + "<"
    assert ents == [{"type": "pre", "offset": 6, "length": 6, "language": "fift"}]
