"""Keyword retrieval of datasheet chunks and aliases for one message (issue 7, seed 002;
both runtimes)."""
from mimi import config
from mimi.hw import datasheets as ds, retrieval
import support

RUNTIMES = ("cpython", "micropython")

BOARD = "esp32-s3-devkitc-1"  # the configured board (config default)
_MINE = ("# Mine\n\n## Pin Aliases\n| alias | pin |\n|---|---|\n| porch light | 4 |\n| rgb_led | 38 | ws2812 |\n"
         "| 客厅灯 | 6 |\n\n## Relay wiring\nThe relay module input goes to GPIO4.\n\n"
         "## Servo motor\nServo signal on GPIO5 with PWM at 50 Hz.\n\n## 串口\n串口在引脚 43 和 44。\n")
_OTHER = "# Other\n\n## Pin Aliases\nporch_light: 9\n\n## Relay wiring\nThe relay module input goes to pin 9.\n"
_GENERIC = "# Generic\n\n## Relays\nA relay module needs a driver transistor.\n\n## Servo motor\nServos want 50 Hz.\n"


def _flash(files=None):
    root = support.fresh_flash()
    support.makedirs(root + config.DATASHEETS_DIR)
    files = files or {BOARD + ".md": _MINE, "other-board.md": _OTHER, "generic.md": _GENERIC}
    for name in files:
        support.write(root + config.DATASHEETS_DIR + "/" + name, files[name])
    ds.forget()
    return root


def test_keywords_drop_short_and_stop_words_and_split_chinese_into_pairs():
    kw = retrieval.keywords("Turn ON the LED on GPIO 48, please! Is it an RGB led?")
    assert kw == [b"turn", b"led", b"gpio", b"rgb"]
    assert retrieval.keywords("打开板载灯") == ["打开".encode(), "开板".encode(), "板载".encode(), "载灯".encode()]
    assert retrieval.keywords("灯 a b") == []  # one CJK character, short latin words
    kw = retrieval.keywords("帮我看看串口")
    assert "串口".encode() in kw and "帮我".encode() not in kw
    many = " ".join("word%02d" % i for i in range(40))
    assert len(retrieval.keywords(many)) == config.HW_RAG_MAX_KEYWORDS


def test_score_is_one_per_keyword_plus_two_for_the_configured_board():
    _flash()
    ix = ds.index()
    ranked = retrieval.rank(ix, [b"relay", b"module"], 10)
    got = [(s, ix[1][ix[2][4 * i]][0].rsplit("/", 1)[1], ds.text(ix, i).split("\n", 1)[0]) for s, i in ranked]
    assert got == [(4, BOARD + ".md", "## Relay wiring"),  # 2 words + board
                   (2, "generic.md", "## Relays"),  # 2 words, every board: no boost
                   (2, "other-board.md", "## Relay wiring")]  # another board: no boost
    assert [s for s, _ in retrieval.rank(ix, [b"servo"], 10)] == [3, 1]
    assert len(retrieval.rank(ix, [b"relay", b"module"], 1)) == 1


def test_remembered_keyword_hits_stay_bounded_and_right():
    # Every message brings new words (numbers, names): what rank remembers must not grow
    # with them, and what it remembers must give the ranks a fresh look gives.
    root = _flash()
    ix = ds.index()
    want = retrieval.rank(ix, [b"relay", b"module"], 10)
    for i in range(300):
        retrieval.rank(ix, [b"word%03d" % i, b"relay"], 3)
        assert len(retrieval._hits[1]) <= 48 and retrieval._hits[2] <= 192  # _HITS_WORDS_MAX, _HITS_MAX (const)
    assert retrieval.rank(ix, [b"relay", b"module"], 10) == want
    # A datasheet changed: a new index, and nothing remembered of the old one is used.
    support.write(root + config.DATASHEETS_DIR + "/generic.md", "# G\n\n## Relays\nA relay module, at last.\n")
    ds.forget()
    ix2 = ds.index()
    got = retrieval.rank(ix2, [b"relay", b"module"], 10)
    retrieval._hits[0] = None  # forget: a fresh look
    assert got == retrieval.rank(ix2, [b"relay", b"module"], 10) != want


def test_three_or_more_keywords_need_two_matches():
    _flash()
    ix = ds.index()
    assert retrieval.rank(ix, [b"weather", b"forecast", b"relay"], 5) == []
    assert len(retrieval.rank(ix, [b"weather", b"module", b"relay"], 5)) == 3


def test_for_message_gives_the_aliases_named_and_the_best_chunks():
    _flash()
    out = retrieval.for_message("How is the porch light wired to the relay module?", 4000)
    assert out.startswith("[Pin aliases for this message]\n" + BOARD + ": porch_light = GPIO4\n")
    assert "GPIO9" not in out.split("[Hardware documentation]")[0]  # other boards' aliases stay out
    docs = out.split("[Hardware documentation]\n", 1)[1]
    assert docs.startswith("--- %s.md (%s) ---\n## Relay wiring\n" % (BOARD, BOARD))
    assert "--- generic.md (every board) ---\n## Relays" in docs
    assert "## Pin Aliases" not in docs  # alias tables reach the model as alias lines only
    out = retrieval.for_message("打开客厅灯", 4000)
    assert (BOARD + ": 客厅灯 = GPIO6") in out
    assert "[Pin aliases for this message]" in retrieval.for_message("turn on the RGB LED", 4000)
    assert "rgb_led = GPIO38 (ws2812)" in retrieval.for_message("turn on the RGB LED", 4000)
    assert "串口在引脚 43" in retrieval.for_message("串口用哪个引脚", 4000)


def test_unrelated_messages_add_nothing():
    _flash()
    assert retrieval.for_message("hello, how are you today?", 4000) == ""
    assert retrieval.for_message("", 4000) == ""
    assert retrieval.for_message("porch light", 10) == ""  # no room for anything useful


def test_the_budget_is_never_exceeded():
    big = "# Big\n\n## Relay one\n" + "relay module wiring notes. " * 70 + "\n\n## Relay two\nrelay module short.\n"
    _flash({BOARD + ".md": big + _MINE})
    full = retrieval.for_message("relay module for the porch light", 100000)
    assert "## Relay one" in full and "## Relay two" in full
    for budget in (64, 100, 200, 300, 500, 800, 1200, 2000, 3000):
        out = retrieval.for_message("relay module for the porch light", budget)
        assert len(out.encode()) <= budget, (budget, len(out.encode()))
    mid = retrieval.for_message("relay module for the porch light", 1000)
    assert "porch_light = GPIO4" in mid and "## Relay two" in mid  # the big chunk was skipped
    small = retrieval.for_message("notes", 600)  # only the big chunk matches: cut to fit
    assert "## Relay one" in small and small.endswith("[cut to fit]\n") and len(small.encode()) <= 600


def test_no_datasheets_no_notes():
    support.fresh_flash()
    ds.forget()
    assert retrieval.for_message("turn on the porch light", 4000) == ""
