"""The 16 KB context: order, caps, priority drop, UTF-8 cuts, change notes, continuation."""
from mimi import config, log
from mimi.agent import context
from mimi.llm import wire
from mimi.storage import fs, skills
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00 UTC
WORK = T0 + 2 * 3600  # 10:00 at +08:00
NIGHT = T0 + 15 * 3600  # 23:00 at +08:00
MSG = {"channel": "telegram", "chat_id": "42", "session": "tg_42", "text": "hi"}

SEED = ("config/SOUL.md", "config/USER.md", "memory/MEMORY.md", "skills/weather.md",
        "skills/daily-briefing.md", "skills/gpio-control.md", "skills/skill-creator.md")


def _seeded():
    root = support.fresh_flash()
    config.set("tz", "+08:00")
    config.set("owner_chat", "42")  # MSG is the owner's (the other chats': tests/runtime/test_trust.py)
    for rel in SEED:
        support.write(root + "/data/" + rel, support.read("spiffs_seed/" + rel))
    skills.forget()
    return root


def _text(ctx):
    return bytes(ctx.view()).decode()


def _order(text, *heads):
    pos = [text.index(h) for h in heads]
    assert pos == sorted(pos), pos


def test_sections_in_the_designs_order():
    root = _seeded()
    support.write(root + "/data/memory/2026-01-01.md", "# 2026-01-01\n\n- walked the dog\n")
    ctx = context.Context()
    n = ctx.build(MSG, extra="led: GPIO48", now_s=WORK)
    assert n == len(ctx.view()) and n <= 16384 and len(ctx.buf) == 16384
    t = _text(ctx)
    _order(t, "# Who you are", "# Personality (/data/config/SOUL.md)", "# About the owner",
           "# Long-term memory", "# Recent daily notes", "# Your skills", "# This turn", "# For this message")
    assert "Tone example" in t and "walked the dog" in t and "- weather: Weather. Look up" in t
    assert "Channel: telegram, chat 42 (session tg_42)" in t
    assert "Local time: Thursday 2026-01-01 10:00 (UTC+08:00, mode: work). Working hours" in t
    assert "Today's note: /data/memory/2026-01-01.md." in t
    assert t.endswith("led: GPIO48\n")


def test_the_buffer_is_allocated_once():
    _seeded()
    ctx = context.Context()
    buf = ctx.buf
    for _ in range(3):
        ctx.build(MSG, now_s=WORK)
    assert ctx.buf is buf


def test_static_rules_carry_the_disciplines():
    with open(context._RULES_PATH, "rb") as f:
        raw = f.read()
    r = raw.decode()
    assert len(raw) <= config.CONTEXT_RULES_MAX_BYTES
    for words in ("read_file a file before changing it", "get_current_time before writing",
                  "Summarise what you read", "save what matters without being asked",
                  "read_file it first and follow it", "Hardware safety", "Read it before you edit it"):
        assert words in r, words


def _fill_to_caps(root, ch="中"):
    big = (ch * 3000).encode()
    support.write(root + "/data/config/SOUL.md", big)
    support.write(root + "/data/config/USER.md", big)
    support.write(root + "/data/memory/MEMORY.md", big * 3)
    for d in ("2026-01-01", "2025-12-31", "2025-12-30"):
        support.write(root + "/data/memory/%s.md" % d, "".join("- %s note %d 中文\n" % (d, i) for i in range(300)))
    for i in range(30):
        support.write(root + "/data/skills/s%02d.md" % i, "# Skill %d\n\n%s\n" % (i, "Does things. " * 20))
    skills.forget()


def test_every_section_at_its_cap_stays_in_the_buffer_and_is_valid_utf8():
    root = _seeded()
    _fill_to_caps(root)
    ctx = context.Context()
    n = ctx.build(MSG, extra=lambda room: "x" * (room + 500), now_s=WORK)
    assert n <= 16384
    t = _text(ctx)  # decodes: no cut inside a character
    last = ctx.last
    assert last["soul"] <= config.CONTEXT_SOUL_MAX_BYTES + 120
    assert last["memory"] <= config.CONTEXT_MEMORY_MAX_BYTES + 120
    assert last["notes"] <= config.CONTEXT_NOTES_MAX_BYTES + 40
    assert last["skills"] <= config.CONTEXT_SKILLS_MAX_BYTES + 20
    assert "[cut at byte " in t and "read_file /data/memory/MEMORY.md offset=" in t
    assert "Left out" not in t  # at the default size everything fits
    assert sum(last[k] for k in last) == n


def test_a_cut_says_where_the_rest_is():
    root = _seeded()
    support.write(root + "/data/config/SOUL.md", ("é" * 1000).encode())  # 2000 bytes
    ctx = context.Context()
    ctx.build(MSG, now_s=WORK)
    t = _text(ctx)
    i = t.index("[cut at byte ")
    off = int(t[i:].split("offset=")[1].split(" ")[0])
    assert off % 2 == 0 and off < 1024  # at a character boundary, within the cap
    assert "of 2000: read_file /data/config/SOUL.md offset=%d for the rest]" % off in t


def test_hostile_files_cannot_overflow():
    root = _seeded()
    support.write(root + "/data/memory/MEMORY.md", b"\xf0\x9f\x98" * 50000 + b"\x00" * 1000)
    support.write(root + "/data/config/USER.md", b"\xff" * 5000)
    for size in (16384, 4096, 1500, 600):
        ctx = context.Context(size)
        n = ctx.build(MSG, extra="z" * 20000, now_s=WORK)
        assert n <= size and len(ctx.buf) == size
        assert bytes(ctx.view()).startswith(b"# Who you are")


def test_bytes_not_utf8_are_sent_as_question_marks_and_the_file_named():
    # A profile saved as Latin-1, or a damaged note, must not fail every request.
    root = _seeded()
    support.write(root + "/data/config/USER.md", "- Name: Ren\u00e9e, Z\u00fcrich \U0001F600\n".encode("utf-8")
                  .replace("\u00e9".encode(), b"\xe9"))  # Latin-1 \xe9 among UTF-8
    # overlong, surrogate, past U+10FFFF, stray continuation, a cut character at the end
    support.write(root + "/data/config/SOUL.md", b"a\xc0\x80b\xed\xa0\x80c\xf4\x90\x80\x80d\x80e \xe4\xb8\xad\xe4\xb8")
    support.write(root + "/data/memory/2026-01-01.md", b"# 2026-01-01\n\n- fed the \xff\xfe cat\n")
    got = []
    saved = log.warn
    log.warn = lambda tag, msg, *a: got.append(msg % a)
    try:
        ctx = context.Context()
        ctx.build(MSG, now_s=WORK)
    finally:
        log.warn = saved
    raw = bytes(ctx.view())
    t = raw.decode()  # CPython checks strictly; the bytes below are what MicroPython lets through
    for bad in (b"\xc0", b"\xed\xa0", b"\xf4\x90", b"\xff"):
        assert bad not in raw, bad
    assert "- Name: Ren?e, Z\u00fcrich \U0001F600\n" in t
    assert "a??b???c????d?e \u4e2d\n[cut at byte 19 of 21" in t  # an unfinished last character is cut
    assert "- fed the ?? cat" in t
    for f in ("/data/config/USER.md", "/data/config/SOUL.md", "/data/memory/2026-01-01.md"):
        assert [m for m in got if f in m and "not UTF-8" in m], (f, got)
    parts = []
    wire.json_text(parts.append, ctx.view())  # what the request body does with it
    assert "Ren?e" in "".join(p if isinstance(p, str) else str(p, "utf-8") for p in parts)
    assert fs.utf8_fix(b"ok \xe4\xb8\xad") == b"ok \xe4\xb8\xad"


def test_short_room_drops_the_lowest_priority_first():
    root = _seeded()
    _fill_to_caps(root, "a")
    ctx = context.Context(11000)
    ctx.build(MSG, now_s=WORK)
    t = _text(ctx)
    assert ctx.last["notes"] == 0 and ctx.last["skills"] > 0 and ctx.last["memory"] > 0
    assert "Left out for room: memory_search / /data/memory/2026-01-01.md." in t
    ctx = context.Context(11000)
    ctx.build(MSG, now_s=NIGHT)  # at night the skills index goes first
    t = _text(ctx)
    assert ctx.last["skills"] == 0 and ctx.last["notes"] > 0
    assert "Left out for room: list_dir /data/skills." in t
    assert "mode: night). Night: keep replies short" in t
    ctx = context.Context(5000)
    ctx.build(MSG, now_s=WORK)
    t = _text(ctx)
    assert ctx.last["soul"] > 0 and ctx.last["memory"] < config.CONTEXT_MEMORY_MAX_BYTES
    assert "# This turn" in t


def test_change_note_after_an_edit_only():
    _seeded()
    ctx = context.Context()
    ctx.build(MSG, now_s=WORK)
    assert "Changed since" not in _text(ctx)
    ctx.build(MSG, now_s=WORK)
    assert "Changed since" not in _text(ctx)
    fs.write("/data/memory/MEMORY.md", "# Long-term memory\n\n- owner likes tea\n")
    fs.write("/data/config/SOUL.md", "# Soul\n\nCheerful.\n")
    ctx.build(MSG, now_s=WORK)
    assert "Changed since the last turn: SOUL.md, MEMORY.md." in _text(ctx)
    ctx.build(MSG, now_s=WORK)
    assert "Changed since" not in _text(ctx)


def test_continuation_from_todays_note():
    _seeded()
    p = "/data/memory/2026-01-01.md"
    fs.write(p, "# 2026-01-01\n\n" + "- talked about the garden\n" * 5)
    t_written = fs.mtime(p)
    ctx = context.Context()
    # The note's date comes from now_s; its mtime is the host's clock: make them agree.
    saved = fs.mtime
    fs.mtime = lambda path: WORK - 600 if path == p else saved(path)
    try:
        ctx.build(MSG, now_s=WORK)
        assert "The conversation continues (the note was written 10 min ago)." in _text(ctx)
        fs.mtime = lambda path: WORK - 3600 if path == p else saved(path)
        ctx.build(MSG, now_s=WORK)
        assert "A fresh start" in _text(ctx)
        fs.write(p, "# 2026-01-01\n")  # under 100 bytes
        fs.mtime = lambda path: WORK - 60 if path == p else saved(path)
        ctx.build(MSG, now_s=WORK)
        assert "A fresh start" in _text(ctx)
    finally:
        fs.mtime = saved
    assert t_written


def test_unsynced_clock_is_said_plainly():
    root = _seeded()
    support.write(root + "/data/memory/2026-01-01.md", "# 2026-01-01\n\n- x\n")
    ctx = context.Context()
    ctx.build(MSG, now_s=5000)
    t = _text(ctx)
    assert "Local time: unknown, the clock is not synced yet" in t
    assert "# Recent daily notes" not in t and "Today's note" not in t


def test_cron_turns_are_marked():
    _seeded()
    ctx = context.Context()
    ctx.build({"channel": "cron", "chat_id": "42", "session": "cron_j1"}, now_s=WORK)
    assert "comes from the scheduler, not from a person" in _text(ctx)


def test_extra_function_gets_the_room_left():
    _seeded()
    ctx = context.Context(8192)
    seen = []

    def hw(room):
        seen.append(room)
        return "pin notes"

    n = ctx.build(MSG, extra=hw, now_s=WORK)
    assert seen and seen[0] > 1000
    assert n - len(b"\n# For this message\npin notes\n") + seen[0] == 8192 - 2
    assert _text(ctx).endswith("# For this message\npin notes\n")


def test_modes_give_their_hints():
    _seeded()
    ctx = context.Context()
    for hour, hint in ((7, "Morning: a short plan"), (13, "Break time"), (19, "Evening: a good moment")):
        ctx.build(MSG, now_s=T0 + (hour - 8) * 3600)
        assert hint in _text(ctx), hour


def test_missing_rules_file_gives_a_short_rule_not_a_crash():
    _seeded()
    saved = context._RULES_PATH
    context._RULES_PATH = "/nonexistent/rules.md"
    try:
        ctx = context.Context()
        ctx.build(MSG, now_s=WORK)
    finally:
        context._RULES_PATH = saved
    t = _text(ctx)
    assert t.startswith("# Who you are\nYou are mimi") and "# This turn" in t
    assert ctx.last["rules"] < 200


def test_missing_turn_sentences_leave_them_out_not_a_crash():
    _seeded()
    saved = context._TURN_PATH
    context._TURN_PATH = "/nonexistent/turn.md"
    try:
        ctx = context.Context()
        ctx.build({"channel": "cron", "chat_id": "42", "session": "cron_j1"}, now_s=WORK)
    finally:
        context._TURN_PATH = saved
    t = _text(ctx)
    assert "Channel: cron, chat 42" in t and "Local time: Thursday 2026-01-01 10:00" in t
    assert "Working hours" not in t and "scheduler" not in t
