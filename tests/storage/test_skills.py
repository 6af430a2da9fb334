"""Skills: title and first paragraph, a capped index (both runtimes)."""
from mimi import config
from mimi.storage import skills
import support

RUNTIMES = ("cpython", "micropython")


def _skill(root, name, text):
    support.write(root + "/data/skills/%s.md" % name, text)
    skills.forget()  # written behind the file tools' back


def test_summary_is_the_first_paragraph_after_the_title():
    # MimiClaw stops at the blank line after the title and gets nothing.
    assert skills.parse("# Weather\n\nLook up the weather\nfor a place.\n\nMore.\n") == \
        ("Weather", "Look up the weather for a place.")
    assert skills.parse("\n\n# T\n## When\n\nUse it daily.\n") == ("T", "Use it daily.")
    assert skills.parse("no title here\nsecond\n\nx", "name") == ("name", "no title here second")
    assert skills.parse("# Only a title\n", "n") == ("Only a title", "")


def test_index_lists_every_skill_within_its_cap():
    root = support.fresh_flash()
    _skill(root, "weather", "# Weather\n\nFetch the weather and say it in one line.\n")
    _skill(root, "gpio-control", "# GPIO control\n\nSwitch pins safely.\n\n## Steps\n...")
    support.write(root + "/data/skills/notes.txt", "not a skill")
    idx = skills.index()
    assert idx.startswith("Skills (read_file /data/skills/<name>.md")
    assert "- gpio-control: GPIO control. Switch pins safely.\n" in idx
    assert "- weather: Weather. Fetch the weather and say it in one line.\n" in idx
    assert idx.index("gpio-control") < idx.index("weather")
    assert skills.list() == [("gpio-control", "GPIO control"), ("weather", "Weather")]


def test_index_never_passes_its_cap():
    root = support.fresh_flash()
    for i in range(40):
        _skill(root, "skill%02d" % i, "# Skill number %d\n\n%s\n" % (i, "Does a thing. " * 30))
    idx = skills.index()
    assert len(idx.encode()) <= config.SKILLS_INDEX_MAX_BYTES
    assert "more: list_dir /data/skills" in idx
    for line in idx.split("\n")[1:-2]:
        assert len(line.encode()) <= config.SKILLS_SUMMARY_MAX_BYTES
    small = skills.index(300)
    assert len(small.encode()) <= 300 and "more" in small


def test_no_skills_no_index_and_bad_files_do_not_break_it():
    root = support.fresh_flash()
    skills.forget()
    assert skills.index() == ""
    _skill(root, "bin", b"\xff\xfe\xfd")
    assert "- bin: bin" in skills.index()


def test_index_is_cached_until_a_tool_writes_a_skill_or_it_expires():
    from mimi.tools import files, registry
    root = support.fresh_flash()
    _skill(root, "a", "# A\n\nfirst\n")
    assert "first" in skills.index()
    support.write(root + "/data/skills/a.md", "# A\n\nsecond\n")  # behind its back
    assert "first" in skills.index()
    registry.clear()
    files.register_all()
    out, err = registry.execute("edit_file", {"path": "/data/skills/a.md", "old_text": "second",
                                              "new_text": "third"}, {"channel": "cli"})
    assert not err, out
    assert "third" in skills.index()
    support.write(root + "/data/skills/a.md", "# A\n\nfourth\n")
    saved = config.SKILLS_INDEX_TTL_S
    config.SKILLS_INDEX_TTL_S = 0
    try:
        assert "fourth" in skills.index()
    finally:
        config.SKILLS_INDEX_TTL_S = saved
