"""Datasheet chunks and pin aliases (issue 7, seed 002; both runtimes)."""
from mimi import config
from mimi.hw import datasheets as ds
import support

RUNTIMES = ("cpython", "micropython")

_SEED = "spiffs_seed/datasheets/"  # tests run from the worktree root


def _flash(files):
    """A fresh flash whose /data/datasheets holds ``files`` ({name: text})."""
    root = support.fresh_flash()
    support.makedirs(root + config.DATASHEETS_DIR)
    for name in files:
        support.write(root + config.DATASHEETS_DIR + "/" + name, files[name])
    ds.forget()
    return root


def _count(ix):
    """Chunks in an index ``[stamp, files, chunks, aliases]`` (4 ints per chunk)."""
    return len(ix[2]) // 4


def _chunk(ix, i):
    """``(file number, offset, length, heading offset)`` of chunk ``i``."""
    return tuple(ix[2][4 * i:4 * i + 4])


def test_aliases_from_a_markdown_table():
    _flash({"myboard.md": "# B\n\n## Pin Aliases\n\n| alias | pin | kind |\n|---|---|---|\n"
                          "| red_led | 13 |\n| Porch Light | GPIO4 | output |\n| `door` | IO 5 | input, active low |\n"
                          "| strip | 6 | ws2812 |\n| 客厅灯 | 7 |\n\n## Other\n| not_alias | 9 |\n"})
    assert ds.aliases("myboard") == {"red_led": (13, "out"), "porch_light": (4, "out"), "door": (5, "in"),
                                     "strip": (6, "ws2812"), "客厅灯": (7, "out")}


def test_aliases_from_colon_and_equals_lines():
    _flash({"myboard.txt": "# B\n## pin aliases\nred_led: 13\n- builtin_led = 13\n* fan = gpio 21 (output)\n"
                           "door_sensor: 5 input\nrgb = pin 48 neopixel\n"
                           "Add yours like this (`porch: 4`, or `x = 5`) to the list.\n"
                           "ratio = 1:2\nnote: see below\n\n## Wiring\nled: 99\n"})
    assert ds.aliases("myboard") == {"red_led": (13, "out"), "builtin_led": (13, "out"), "fan": (21, "out"),
                                     "door_sensor": (5, "in"), "rgb": (48, "ws2812")}


def test_aliases_are_per_board_plus_generic_and_the_board_wins():
    _flash({"board-a.md": "## Pin Aliases\nlamp: 4\n", "board-b.md": "## Pin Aliases\nlamp: 5\nfan: 6\n",
            "generic.md": "## Pin Aliases\nlamp: 7\nbell: 8\n"})
    assert ds.aliases("board-a") == {"lamp": (4, "out"), "bell": (8, "out")}
    assert ds.aliases("board-b") == {"lamp": (5, "out"), "fan": (6, "out"), "bell": (8, "out")}
    assert ds.aliases("nothing-here") == {"lamp": (7, "out"), "bell": (8, "out")}
    # the file name, lower-cased and without the extension, is the board; generic.txt too is for all
    _flash({"ESP32-S3-DevKitC-1.md": "## Pin Aliases\nlamp: 4\n", "generic.txt": "## Pin Aliases\nbell: 8\n"})
    assert ds.aliases("esp32-s3-devkitc-1") == {"lamp": (4, "out"), "bell": (8, "out")}
    assert ds.aliases("other") == {"bell": (8, "out")}


def test_pin_and_alias_parsing_edge_cases():
    assert ds.parse_pin("GPIO13") == 13 and ds.parse_pin(" io_4 ") == 4 and ds.parse_pin("pin 48 (v1.0)") == 48
    assert ds.parse_pin("pin") is None and ds.parse_pin("---") is None and ds.parse_pin("4`, x") is None
    assert ds.parse_pin("1234") is None
    assert ds.norm_alias(" **Red LED** ") == "red_led" and ds.norm_alias("air-pump") == "air_pump"
    assert ds.norm_alias("(`porch") == "" and ds.norm_alias("a/b") == ""


def test_chunks_follow_headings_and_stay_under_the_cap():
    para = ("word " * 60 + "\n") * 3 + "\n"  # about 900 bytes per paragraph
    text = ("# Title\nintro\n\n## Small\nsmall section\n\n## Big\n" + para * 6 + "## Huge line\n" + "é" * 3000 + "\n"
            + "```\n# not a heading inside a fence\n```\n## Last\nend\n")
    _flash({"b.md": text})
    ix = ds.index()
    data = text.encode()
    texts = []
    prev_end = 0
    for i in range(_count(ix)):
        fi, off, n, head = _chunk(ix, i)
        assert n <= config.HW_CHUNK_MAX_BYTES
        assert off == prev_end  # contiguous: nothing lost, nothing doubled
        prev_end = off + n
        raw = data[off:prev_end]
        raw.decode()  # every chunk ends on a character boundary
        texts.append(ds.text(ix, i))
    assert prev_end == len(data)
    assert texts[0].startswith("# Title") and texts[1].startswith("## Small")
    big = [t for t in texts if t.startswith("## Big")]
    assert len(big) >= 3 and big[1].startswith("## Big (continued)\n")
    assert [t for t in texts if "not a heading inside a fence" in t][0].startswith("## Huge line")
    assert texts[-1].startswith("## Last")


def test_the_index_is_rebuilt_when_a_file_changes_or_appears():
    root = _flash({"b.md": "## Pin Aliases\nlamp: 4\n"})
    assert ds.aliases("b") == {"lamp": (4, "out")}
    support.write(root + config.DATASHEETS_DIR + "/b.md", "## Pin Aliases\nlamp: 4\nfan: 5\n")
    assert ds.aliases("b") == {"lamp": (4, "out"), "fan": (5, "out")}
    support.write(root + config.DATASHEETS_DIR + "/generic.md", "## Pin Aliases\nbell: 6\n")
    assert "bell" in ds.aliases("b")
    assert "generic.md (every board)" in ds.files_text()


def test_no_datasheet_folder_is_not_an_error():
    support.fresh_flash()
    ds.forget()
    ix = ds.index()
    assert _count(ix) == 0 and ds.aliases() == {}
    assert "no datasheets" in ds.files_text()


def test_the_shipped_devkitc_datasheet():
    with open(_SEED + "esp32-s3-devkitc-1.md") as f:
        board = f.read()
    with open(_SEED + "generic.md") as f:
        generic = f.read()
    _flash({"esp32-s3-devkitc-1.md": board, "generic.md": generic})
    al = ds.aliases("esp32-s3-devkitc-1")
    assert al["rgb_led"] == (38, "ws2812") and al["onboard_led"] == (38, "ws2812")
    assert al["boot_button"] == (0, "in") and al["板载灯"] == (38, "ws2812")
    ix = ds.index()
    assert ix[3].get(None) == {}  # generic.md's examples are prose, not aliases
    heads = []
    for i in range(_count(ix)):
        assert _chunk(ix, i)[2] <= config.HW_CHUNK_MAX_BYTES
        heads.append(ds.text(ix, i).split("\n", 1)[0])
    for h in ("## Pin Aliases", "## Header J1 (left side, USB ports at the bottom)", "## Header J3 (right side)",
              "## Onboard RGB LED", "## BOOT and RESET buttons", "## Strapping pins", "## Analog inputs (ADC)"):
        assert h in heads
    # The facts the pin policy rests on are stated.
    for fact in ("GPIO19 (D-) and GPIO20 (D+)", "GPIO26-32", "GPIO33-37", "GPIO38 on v1.1, GPIO48",
                 "- GPIO0: boot mode", "ADC1: channels 0-9 on GPIO1-10"):
        assert fact in board


def test_a_minus_is_no_pin():
    assert ds.parse_pin("GPIO-1") is None and ds.parse_pin("pin -5") is None and ds.parse_pin("io--4") is None
    assert ds.parse_pin("GPIO_5") == 5 and ds.parse_pin("gpio 5") == 5


def test_the_boards_file_stays_indexed_however_many_files_or_sections_others_have():
    board = "## Pin Aliases\nporch_light: 4\n\n## RGB LED\nThe rgb led is on gpio38.\n"
    files = {"esp32-s3-devkitc-1.md": board}
    for i in range(config.HW_MAX_FILES):  # the model may write these: a00.md sorts first
        files["a%02d.md" % i] = "## A\nnothing\n"
    _flash(files)
    assert ds.aliases("esp32-s3-devkitc-1") == {"porch_light": (4, "out")}
    assert any(p.endswith("esp32-s3-devkitc-1.md") for p, _ in ds.index()[1])
    _flash({"esp32-s3-devkitc-1.md": board, "a-parts.md": "".join("## Part %d\ntext %d\n" % (i, i)
                                                                     for i in range(config.HW_MAX_CHUNKS + 10))})
    ix = ds.index()
    mine = [i for i in range(_count(ix)) if ix[1][_chunk(ix, i)[0] & 127][0].endswith("devkitc-1.md")]
    assert mine and _count(ix) - len(mine) <= config.HW_MAX_CHUNKS // 4  # the other file got a quarter
