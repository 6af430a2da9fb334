"""Safe paths, capped reads, atomic writes proven by cutting the power at every step."""
from mimi import seam
from mimi.storage import fs
import power_cut
import support

RUNTIMES = ("cpython", "micropython")


def _rule(path):
    return str(support.raises(fs.PathError, fs.check, path))


def test_check_normalises_data_paths():
    assert fs.check("/data") == "/data"
    assert fs.check("/data/") == "/data"
    assert fs.check("/data/memory/MEMORY.md") == "/data/memory/MEMORY.md"
    assert fs.check("/data/./memory/MEMORY.md") == "/data/memory/MEMORY.md"
    assert fs.check("memory/MEMORY.md") == "/data/memory/MEMORY.md"
    assert fs.check("/data/skills/") == "/data/skills"
    assert fs.check("/data/日记.md") == "/data/日记.md"


def test_check_refuses_with_the_rule_named():
    assert "'..'" in _rule("/data/../nvs.json")
    assert "'..'" in _rule("../nvs.json")
    assert "'..'" in _rule("/data/memory/../../etc/passwd")
    assert "outside" in _rule("/etc/passwd")
    assert "outside" in _rule("/database/x")  # a prefix is not a folder
    assert "outside" in _rule("/nvs.json")
    assert "empty" in _rule("")
    assert "empty" in _rule("   ")
    assert "empty name" in _rule("/data//x")
    assert "NUL" in _rule("/data/a\x00b")
    assert "control" in _rule("/data/a\nb")
    assert "longer than" in _rule("/data/" + "n" * 65)
    assert "longer than" in _rule("/data/" + "/".join(["abcdefghij"] * 20))
    assert "reserved" in _rule("/data/x.md.~tmp")
    assert "must be text" in str(support.raises(fs.PathError, fs.check, None))
    assert "file name" in str(support.raises(fs.PathError, fs.check_file, "/data"))
    # PathError is a ValueError, so generic handlers catch it.
    assert isinstance(support.raises(ValueError, fs.check, "/etc"), fs.PathError)


def test_names_up_to_the_limit_pass():
    assert fs.check("/data/" + "n" * 64) == "/data/" + "n" * 64


def test_settings_store_is_not_reachable():
    root = support.fresh_flash()
    support.write(root + "/nvs.json", '{"mimi": {"api_key": ["blob", "sk-ant-FAKE"]}}')
    for p in ("/nvs.json", "../nvs.json", "/data/../nvs.json", "nvs.json"):
        try:
            data, _, _ = fs.read(p, 100)
        except (fs.PathError, fs.NotFound):
            continue
        assert b"sk-ant" not in data, p


def test_read_is_capped_and_says_so():
    support.fresh_flash()
    fs.write("/data/a.txt", b"0123456789")
    assert fs.read("/data/a.txt", 4) == (b"0123", True, 10)
    assert fs.read("/data/a.txt", 100) == (b"0123456789", False, 10)
    assert fs.read("/data/a.txt", 3, offset=8) == (b"89", False, 10)
    assert fs.read("/data/a.txt", 3, offset=4) == (b"456", True, 10)
    assert fs.read("/data/a.txt", 3, offset=99) == (b"", False, 10)
    e = support.raises(fs.NotFound, fs.read, "/data/nope.txt", 10)
    assert "no such file" in str(e) and "/data/nope.txt" in str(e)
    assert isinstance(e, OSError)
    fs.makedirs("/data/dir")
    assert "folder" in str(support.raises(fs.PathError, fs.read, "/data/dir", 10))


def test_read_text_cuts_at_a_character():
    support.fresh_flash()
    fs.write("/data/c.txt", "ab中文")  # 2 + 3 + 3 bytes
    assert fs.read_text("/data/c.txt", 4) == ("ab", True, 8)
    assert fs.read_text("/data/c.txt", 5) == ("ab中", True, 8)
    fs.write("/data/bin", b"\xff\xfe")
    assert "UTF-8" in str(support.raises(ValueError, fs.read_text, "/data/bin", 10))


def test_write_makes_folders_and_replaces():
    root = support.fresh_flash()
    fs.write("/data/x/y/z.md", "one")
    fs.write("/data/x/y/z.md", "two")
    assert support.read(root + "/data/x/y/z.md") == b"two"
    assert fs.size("/data/x/y/z.md") == 3
    assert fs.size("/data/none") is None
    assert fs.listdir("/data/x") == [("y", True, 0)]
    assert [e[0] for e in fs.listdir("/data/x/y")] == ["z.md"]  # no temp file left
    fs.makedirs("/data/q")
    assert "folder" in str(support.raises(fs.PathError, fs.write, "/data/q", "x"))
    assert "file" in str(support.raises(fs.PathError, fs.makedirs, "/data/x/y/z.md/w"))


def test_append_plain_and_atomic():
    support.fresh_flash()
    fs.append("/data/s/log.jsonl", "a\n")
    fs.append("/data/s/log.jsonl", b"b\n")
    fs.append("/data/s/log.jsonl", "c\n", atomic=True)
    fs.append("/data/s/new.md", "first", atomic=True)
    assert fs.read("/data/s/log.jsonl", 100)[0] == b"a\nb\nc\n"
    assert fs.read("/data/s/new.md", 100)[0] == b"first"


def test_listdir_sorted_with_sizes_and_no_temp_files():
    root = support.fresh_flash()
    fs.write("/data/d/b.md", "bb")
    fs.write("/data/d/a.md", "a")
    fs.makedirs("/data/d/sub")
    support.write(root + "/data/d/c.md.~tmp", "half")
    assert fs.listdir("/data/d") == [("a.md", False, 1), ("b.md", False, 2), ("sub", True, 0)]
    assert "file" in str(support.raises(fs.PathError, fs.listdir, "/data/d/a.md"))
    support.raises(fs.NotFound, fs.listdir, "/data/none")


def test_remove_and_rename():
    support.fresh_flash()
    fs.write("/data/r1", "1")
    fs.write("/data/r2", "2")
    fs.rename("/data/r1", "/data/sub/r2")
    assert fs.size("/data/r1") is None
    fs.rename("/data/sub/r2", "/data/r2")  # replaces
    assert fs.read("/data/r2", 10)[0] == b"1"
    fs.remove("/data/r2")
    assert fs.size("/data/r2") is None
    support.raises(fs.NotFound, fs.remove, "/data/r2")
    fs.remove("/data/sub")
    assert fs.size("/data/sub") is None


def test_mtime_is_unix_seconds():
    support.fresh_flash()
    fs.write("/data/t", "x")
    m = fs.mtime("/data/t")
    assert abs(m - seam.time_s()) < 120
    assert fs.mtime("/data/none") is None


def test_utf8_boundaries():
    b = "a中b".encode()  # 61 e4 b8 ad 62
    assert [fs.utf8_end(b, i) for i in range(6)] == [0, 1, 1, 1, 4, 5]
    assert [fs.utf8_start(b, i) for i in range(6)] == [0, 1, 4, 4, 4, 5]
    e = "é😀".encode()  # c3 a9 f0 9f 98 80
    assert [fs.utf8_end(e, i) for i in range(7)] == [0, 0, 2, 2, 2, 2, 6]


def _power_cut_write():
    root = support.fresh_flash()
    old = b"old content\n" * 100  # 1200 bytes: three chunks
    new = b"NEW" * 700
    path = "/data/memory/MEMORY.md"

    def setup():
        support.write(root + "/data/memory/MEMORY.md", old)

    def op():
        fs.write(path, new)

    seen = {}

    def verify():
        data = fs.read(path, 10000)[0]
        assert data in (old, new), "torn: %d bytes" % len(data)
        seen[data == new] = True
        for name, _, _ in fs.listdir("/data/memory"):
            assert name == "MEMORY.md", name

    n = power_cut.each_cut(setup, op, verify)
    assert seen.get(True) and seen.get(False)
    return n


def test_write_survives_a_power_cut_at_every_step():
    assert _power_cut_write() >= 6


def test_write_of_a_new_file_leaves_nothing_or_all():
    root = support.fresh_flash()
    new = b"x" * 1500

    def setup():
        support.rmtree(root + "/data")
        support.makedirs(root + "/data")

    def verify():
        if fs.size("/data/n.md") is not None:
            assert fs.read("/data/n.md", 4000)[0] == new
        assert [e[0] for e in fs.listdir("/data")] in ([], ["n.md"])

    power_cut.each_cut(setup, lambda: fs.write("/data/n.md", new), verify)


def test_atomic_append_survives_a_power_cut_at_every_step():
    root = support.fresh_flash()
    old = b"line\n" * 300

    def setup():
        support.write(root + "/data/memory/2026-01-05.md", old)

    def verify():
        data = fs.read("/data/memory/2026-01-05.md", 10000)[0]
        assert data in (old, old + b"- added\n" * 80), len(data)

    power_cut.each_cut(setup, lambda: fs.append("/data/memory/2026-01-05.md", b"- added\n" * 80, atomic=True),
                       verify)


def test_rename_is_one_step_old_or_new():
    root = support.fresh_flash()

    def setup():
        support.rmtree(root + "/data")
        support.write(root + "/data/a", "A")
        support.write(root + "/data/b", "B")

    def state():
        a = fs.read("/data/a", 9)[0] if fs.size("/data/a") is not None else None
        return a, fs.read("/data/b", 9)[0]

    # The file system's rename replaces atomically (LittleFS, POSIX): a single step, so a
    # cut leaves the old pair and a whole run the new one.
    setup()
    h = power_cut.install(1)
    try:
        support.raises(power_cut.Cut, fs.rename, "/data/a", "/data/b")
    finally:
        power_cut.uninstall()
    assert h.n == 1 and state() == (b"A", b"B")
    fs.rename("/data/a", "/data/b")
    assert state() == (None, b"A")


def test_lines_stream_with_offsets_and_bounded_pieces():
    support.fresh_flash()
    long = "中" * 700  # 2100 bytes
    fs.write("/data/l.md", "one\n\n" + long + "\nlast")
    got = list(fs.lines("/data/l.md", max_line=1000))
    assert got[0] == (0, b"one") and got[1] == (4, b"")
    pieces = got[2:-1]
    assert b"".join(p[1] for p in pieces).decode() == long
    for off, piece in pieces:
        assert len(piece) <= 1000
        piece.decode()  # never split inside a character
    assert pieces[0][0] == 5 and pieces[1][0] == 5 + len(pieces[0][1])
    assert got[-1] == (5 + 2100 + 1, b"last")


def test_lines_from_an_offset_read_only_what_follows_it():
    support.fresh_flash()
    fs.write("/data/l.md", "one\ntwo\n" + "x" * 5000 + "\nlast")
    assert list(fs.lines("/data/l.md", 8000, 4)) == [(4, b"two"), (8, b"x" * 5000), (5009, b"last")]
    assert list(fs.lines("/data/l.md", 8000, 5009)) == [(5009, b"last")]  # past a whole read's worth


def test_a_write_refused_at_close_leaves_no_temporary_file_and_the_old_content():
    # on LittleFS a small file reaches the flash when closed: "no space" comes from close()
    root = support.fresh_flash()
    fs.write("/data/notes/a.md", "old")
    real = fs._open

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, b):
            return self.f.write(b)

        def close(self):
            self.f.close()
            raise OSError(28, "No space left on device")

    fs._open = lambda p, mode="r": Full(real(p, mode)) if "w" in mode else real(p, mode)
    try:
        support.raises(OSError, fs.write, "/data/notes/a.md", "new content")
    finally:
        fs._open = real
    assert fs.read("/data/notes/a.md", 100)[0] == b"old"
    import os

    assert sorted(os.listdir(seam.real_path("/data/notes"))) == ["a.md"]  # no a.md.~tmp left
