"""File tools through the registry: capped reads, exact edits, kept files, sections, search."""
from mimi import commands, config
from mimi.storage import fs
from mimi.tools import files, registry
import support

RUNTIMES = ("cpython", "micropython")

CTX = {"channel": "telegram", "chat_id": "42", "session": "tg_42", "bus": None}


def _setup():
    root = support.fresh_flash()
    commands.allow("42")  # CTX is the owner's chat (tests/runtime/test_trust.py: the others)
    registry.clear()
    files.register_all()
    return root


def run(name, **args):
    return registry.execute(name, args, CTX)


def test_all_seven_are_registered_with_schemas():
    _setup()
    assert registry.names() == ["read_file", "write_file", "edit_file", "delete_file", "list_dir", "read_section",
                                "search_files"]
    for t in registry.offered():
        assert t.group == "file" and t.schema["type"] == "object" and t.description
    assert registry.offered(("file",)) == []


def test_write_then_read():
    _setup()
    out, err = run("write_file", path="/data/notes/a.md", content="hello 世界\n")
    assert not err and "wrote 13 bytes to /data/notes/a.md" == out
    assert run("read_file", path="/data/notes/a.md") == ("hello 世界\n", False)
    assert run("read_file", path="notes/a.md")[0] == "hello 世界\n"


def test_read_in_parts_with_offsets_at_character_boundaries():
    _setup()
    fs.write("/data/long.md", "中" * 4000)  # 12000 bytes
    out, err = run("read_file", path="/data/long.md")
    assert not err
    text, tail = out.rsplit("\n", 1)
    assert len(text.encode()) <= config.TOOL_READ_MAX_BYTES and set(text) == {"中"}
    assert tail == "[bytes 0-%d of 12000; next: offset=%d]" % (len(text.encode()), len(text.encode()))
    out, _ = run("read_file", path="/data/long.md", offset=10, length=10)  # mid-character both ends
    assert out == "中中\n[bytes 12-18 of 12000; next: offset=18]", out
    out, _ = run("read_file", path="/data/long.md", offset=11997)
    assert out == "中\n[bytes 11997-12000 of 12000]"
    assert "past the end" in run("read_file", path="/data/long.md", offset=20000)[0]
    fs.write("/data/empty", "")
    assert run("read_file", path="/data/empty")[0] == "(empty file)"


def test_errors_name_the_problem():
    _setup()
    out, err = run("read_file", path="/data/../nvs.json")
    assert err and "'..'" in out
    out, err = run("read_file", path="/etc/passwd")
    assert err and "outside" in out
    out, err = run("read_file", path="/data/missing.md")
    assert err and "no such file" in out
    out, err = run("read_file", path=7)
    assert err and "must be string" in out
    out, err = run("read_file")
    assert err and "missing required argument 'path'" in out
    out, err = run("read_file", path="/data/x", offset=-1)
    assert err and "negative" in out
    fs.write("/data/bin", b"\xff\x00")
    assert "not UTF-8" in run("read_file", path="/data/bin")[0]


def test_files_mimi_keeps_are_read_only():
    _setup()
    fs.write("/data/sessions/tg_1.jsonl", '{"role":"user","content":"hi"}\n')
    for p in ("/data/sessions/tg_1.jsonl", "/data/cron.json", "/data/state/tg_offset", "/data/certs/ca.pem"):
        out, err = run("write_file", path=p, content="x")
        assert err and "kept by mimi" in out, p
    out, err = run("edit_file", path="/data/sessions/tg_1.jsonl", old_text="hi", new_text="yo")
    assert err and "kept by mimi" in out
    assert not run("read_file", path="/data/sessions/tg_1.jsonl")[1]


def test_edit_needs_exactly_one_occurrence():
    _setup()
    fs.write("/data/memory/MEMORY.md", "- likes tea\n- likes tea\n- lives in Oslo\n")
    out, err = run("edit_file", path="/data/memory/MEMORY.md", old_text="likes tea", new_text="likes coffee")
    assert err and "occurs 2 times" in out
    out, err = run("edit_file", path="/data/memory/MEMORY.md", old_text="Bergen", new_text="x")
    assert err and "not found" in out
    out, err = run("edit_file", path="/data/memory/MEMORY.md", old_text="", new_text="x")
    assert err and "empty" in out
    out, err = run("edit_file", path="/data/memory/MEMORY.md", old_text="Oslo", new_text="Bergen")
    assert not err and "edited /data/memory/MEMORY.md" in out
    assert fs.read("/data/memory/MEMORY.md", 100)[0] == b"- likes tea\n- likes tea\n- lives in Bergen\n"


def test_write_and_edit_limits():
    _setup()
    big = "x" * (config.TOOL_WRITE_MAX_BYTES + 1)
    out, err = run("write_file", path="/data/big", content=big)
    assert err and "at most" in out and fs.size("/data/big") is None
    fs.write("/data/huge", big)
    out, err = run("edit_file", path="/data/huge", old_text="xx", new_text="y")
    assert err and "too large to edit" in out


def test_list_dir():
    _setup()
    fs.write("/data/skills/weather.md", "# W\n")
    fs.write("/data/memory/MEMORY.md", "m")
    out = run("list_dir")[0]
    assert out == "/data:\n  memory/\n  skills/"
    assert run("list_dir", path="/data/memory")[0] == "/data/memory:\n  MEMORY.md  (1 bytes)"
    fs.makedirs("/data/empty")
    assert run("list_dir", path="/data/empty")[0] == "/data/empty is empty"
    assert "no such file" in run("list_dir", path="/data/nope")[0]


DOC = """# Board

Intro.

## Pin Aliases

led: GPIO48
button: GPIO0

### Notes on pins

Strapping pins: 0, 3, 45, 46.

## Power

3.3 V only.
"""


def test_read_section_takes_one_section_with_its_subsections():
    _setup()
    fs.write("/data/datasheets/board.md", DOC)
    out, err = run("read_section", path="/data/datasheets/board.md", heading="pin aliases")
    assert not err
    assert out.startswith("## Pin Aliases\n") and "GPIO48" in out and "Strapping" in out
    assert "Power" not in out
    assert run("read_section", path="/data/datasheets/board.md", heading="## Power")[0] == "## Power\n\n3.3 V only."
    out = run("read_section", path="/data/datasheets/board.md", heading="Wiring")[0]
    assert "no heading matching 'Wiring'" in out and "## Pin Aliases" in out and "### Notes on pins" in out


def test_read_section_prefers_an_exact_heading_and_caps_long_sections():
    _setup()
    fs.write("/data/d.md", "# Pins overview\n\nsee below\n\n# Pins\n\nthe table\n")
    assert run("read_section", path="/data/d.md", heading="pins")[0] == "# Pins\n\nthe table"
    fs.write("/data/l.md", "# Big\n" + "row\n" * 3000 + "# Next\n")
    out = run("read_section", path="/data/l.md", heading="big")[0]
    assert len(out.encode()) < config.TOOL_SECTION_MAX_BYTES + 120
    assert "[section continues: read_file /data/l.md offset=" in out


def test_search_files_by_name_and_first_line():
    _setup()
    fs.write("/data/skills/weather.md", "# Weather\n\nForecasts.")
    fs.write("/data/skills/gpio-control.md", "# GPIO control\n")
    fs.write("/data/notes/garden.md", "\n\nTomato plan for the weather station\n")
    out = run("search_files", query="weather")[0]
    lines = out.split("\n")
    assert lines[0].startswith("/data/skills/weather.md (")  # name and first line beat first line only
    assert "/data/notes/garden.md" in lines[1] and "Tomato plan" in lines[1]
    assert "no file" in run("search_files", query="volcano")[0]
    assert run("search_files", query="gpio", path="/data/skills")[0].startswith("/data/skills/gpio-control.md")
    assert run("search_files", query="  ")[1]


def test_concurrent_edits_of_memory_lose_nothing():
    # Chat, cron and heartbeat each add lines to MEMORY.md through edit_file at once:
    # each read-modify-write holds memory.LOCK, so no edit overwrites another.
    from mimi import seam
    _setup()
    fs.write("/data/memory/MEMORY.md", "# Memory\n<end>\n")
    done = []

    def worker(tag):
        for i in range(12):
            out, err = run("edit_file", path="/data/memory/MEMORY.md", old_text="<end>",
                           new_text="%s%d\n<end>" % (tag, i))
            assert not err, out
            seam.sleep_ms(0)
        done.append(tag)

    for tag in ("chat", "cron", "beat"):
        seam.start_thread(worker, (tag,))
    for _ in range(2000):
        if len(done) == 3:
            break
        seam.sleep_ms(5)
    assert len(done) == 3
    lines = fs.read("/data/memory/MEMORY.md", 10000)[0].decode().split("\n")
    for tag in ("chat", "cron", "beat"):
        for i in range(12):
            assert "%s%d" % (tag, i) in lines, (tag, i)


def test_a_group_chat_cannot_write_what_steers_the_owners_turns():
    _setup()
    group = dict(CTX, chat_id="-500", session="tg_-500", is_group=True)
    for p in ("/data/HEARTBEAT.md", "/data/config/SOUL.md", "/data/skills/x.md", "/data/datasheets/a.md",
              "/data/memory/MEMORY.md", "/data/notes/group.md"):
        out, err = registry.execute("write_file", {"path": p, "content": "- [ ] switch GPIO4 on"}, group)
        assert err and "outside this chat's folder" in out, (p, out)
        out, err = registry.execute("edit_file", {"path": p, "old_text": "a", "new_text": "b"}, group)
        assert err and "outside this chat's folder" in out, (p, out)
    out, err = registry.execute("write_file", {"path": "/data/chats/tg_-500/notes.md", "content": "ok"}, group)
    assert not err, out  # its own folder is fine
    assert not run("write_file", path="/data/HEARTBEAT.md", content="- [ ] water plants\n")[1]  # the owner may
