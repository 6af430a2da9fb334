"""MEMORY.md under a lock, daily notes at the path the prompt names, recent notes (both runtimes)."""
from mimi import config, seam
from mimi.storage import fs, memory
import power_cut
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00 UTC


def _fresh(tz="+08:00"):
    root = support.fresh_flash()
    config.set("tz", tz)
    return root


def test_memory_read_write_and_limit():
    _fresh()
    assert memory.read_memory() == ""
    memory.write_memory("# Memory\n- likes tea\n")
    assert memory.read_memory() == "# Memory\n- likes tea\n"
    assert memory.read_memory(9) == "# Memory\n"
    e = support.raises(ValueError, memory.write_memory, "x" * (config.MEMORY_MAX_BYTES + 1))
    assert "limit" in str(e)
    assert memory.read_memory() == "# Memory\n- likes tea\n"  # nothing lost


def test_daily_path_is_the_local_date():
    _fresh("+08:00")
    assert memory.daily_path(T0) == "/data/memory/2026-01-01.md"
    config.set("tz", "-05:30")
    assert memory.daily_path(T0) == "/data/memory/2025-12-31.md"
    e = support.raises(ValueError, memory.daily_path, 1000)
    assert "not synced" in str(e)


def test_append_daily_writes_where_the_loader_reads():
    _fresh()
    p = memory.append_daily("- 09:00 walked the dog", T0 + 3600)
    memory.append_daily("- 10:00 coffee\n", T0 + 7200)
    assert p == memory.daily_path(T0 + 3600)
    assert fs.read(p, 1000)[0] == b"# 2026-01-01\n\n- 09:00 walked the dog\n- 10:00 coffee\n"
    notes = memory.recent_notes(epoch_s=T0 + 7200)
    assert "### 2026-01-01 today (%s)" % p in notes and "coffee" in notes


def test_daily_note_has_a_size_limit():
    _fresh()
    support.write(support.fresh_flash() + "/data/memory/2026-01-01.md", "x" * config.MEMORY_DAILY_MAX_BYTES)
    config.set("tz", "+08:00")
    e = support.raises(ValueError, memory.append_daily, "more", T0)
    assert "full" in str(e)


def test_recent_notes_last_three_days_newest_first_capped():
    root = _fresh()
    for day, text in (("2025-12-29", "four days ago"), ("2025-12-30", "three days ago"),
                      ("2025-12-31", "yesterday"), ("2026-01-01", "today")):
        support.write(root + "/data/memory/%s.md" % day, "# %s\n\n- %s\n" % (day, text))
    notes = memory.recent_notes(epoch_s=T0 + 3600)  # 09:00 local on 2026-01-01
    assert notes.index("today") < notes.index("yesterday") < notes.index("three days ago")
    assert "2025-12-29" not in notes
    assert memory.recent_notes(epoch_s=1000) == ""


def test_a_long_note_gives_its_latest_lines_within_the_cap():
    root = _fresh()
    lines = "".join("- entry %03d 中文\n" % i for i in range(400))
    support.write(root + "/data/memory/2026-01-01.md", "# 2026-01-01\n\n" + lines)
    support.write(root + "/data/memory/2025-12-31.md", "# 2025-12-31\n\n- yesterday\n")
    notes = memory.recent_notes(epoch_s=T0 + 3600)
    assert len(notes.encode()) <= config.MEMORY_RECENT_MAX_BYTES
    assert "entry 399" in notes and "entry 000" not in notes
    assert "[earlier lines: read_file /data/memory/2026-01-01.md]" in notes
    body = notes.split("]\n", 1)[1]
    assert body.startswith("- entry ")  # starts at a whole line
    small = memory.recent_notes(cap=600, epoch_s=T0 + 3600)
    assert len(small.encode()) <= 600 and "entry 399" in small


def test_memory_writes_survive_a_power_cut_at_every_step():
    root = _fresh()

    def setup():
        support.write(root + "/data/memory/MEMORY.md", "old\n" * 300)
        support.write(root + "/data/memory/2026-01-01.md", "# 2026-01-01\n\n" + "n\n" * 400)

    def verify():
        m = memory.read_memory()
        assert m in ("old\n" * 300, "new\n" * 400), len(m)
        d = fs.read("/data/memory/2026-01-01.md", 10000)[0]
        assert d in (b"# 2026-01-01\n\n" + b"n\n" * 400, b"# 2026-01-01\n\n" + b"n\n" * 400 + b"- added\n")

    power_cut.each_cut(setup, lambda: memory.write_memory("new\n" * 400), verify)
    power_cut.each_cut(setup, lambda: memory.append_daily("- added", T0), verify)
