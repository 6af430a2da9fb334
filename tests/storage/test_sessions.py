"""Session files: read back from the end, torn and malformed lines, repaired windows, rotation."""
import json

from mimi import config
from mimi.storage import fs, sessions
import power_cut
import support

RUNTIMES = ("cpython", "micropython")

P = "/data/sessions/tg_1.jsonl"


def _archives():
    try:
        names = [e[0] for e in fs.listdir("/data/sessions/archive")]
    except fs.NotFound:
        return []
    names.sort(key=lambda n: int(n.split(".")[1]))
    return ["/data/sessions/archive/" + n for n in names]


def _user(i):
    return {"role": "user", "content": "message %d" % i, "ts": 1767225600 + i}


def _line(m):
    return json.dumps(m, separators=(",", ":")) + "\n"


def _write_lines(root, msgs, tail=""):
    support.write(root + "/data/sessions/tg_1.jsonl", "".join(_line(m) for m in msgs) + tail)


def _call(cid, name="read_file"):
    return {"role": "assistant", "content": "", "tool_calls": [{"id": cid, "name": name, "input": {}}]}


def _result(cid, text="ok"):
    return {"role": "tool", "tool_call_id": cid, "name": "read_file", "content": text, "is_error": False}


def test_keys_for_people_cron_and_heartbeat_differ():
    assert sessions.key_for("telegram", 123) == "tg_123"
    assert sessions.key_for("telegram", "-100200") == "tg_-100200"
    assert sessions.key_for("cron", "job3") == "cron_job3"
    assert sessions.key_for("heartbeat", 123) == "hb_123"
    assert sessions.key_for("cli", "../x") == "cli____x"
    support.raises(ValueError, sessions.path_for, "../etc")
    support.raises(ValueError, sessions.path_for, "")


def test_append_then_load_the_last_n_in_order():
    support.fresh_flash()
    for i in range(30):
        sessions.append("tg_1", _user(i))
    got = sessions.load("tg_1", 20)
    assert [m["content"] for m in got] == ["message %d" % i for i in range(10, 30)]
    assert sessions.load("tg_1", 3)[0]["content"] == "message 27"
    assert sessions.keys() == ["tg_1"]
    assert sessions.load("tg_404") == []


def test_append_adds_a_timestamp():
    support.fresh_flash()
    sessions.append("tg_1", {"role": "user", "content": "hi"})
    assert sessions.load("tg_1")[0]["ts"] > 1704067200


def test_load_reads_only_the_end_of_a_long_file():
    root = support.fresh_flash()
    _write_lines(root, [_user(i) for i in range(4000)])
    total = fs.size(P)
    counted = [0]
    real_open = fs._open

    class Counting:
        def __init__(self, f):
            self.f = f

        def readinto(self, b):
            n = self.f.readinto(b)
            counted[0] += n or 0
            return n

        def read(self, n=-1):
            d = self.f.read(n)
            counted[0] += len(d)
            return d

        def seek(self, *a):
            return self.f.seek(*a)

        def close(self):
            self.f.close()

    fs._open = lambda p, mode="r": Counting(real_open(p, mode))
    try:
        got = sessions.load("tg_1", 20)
    finally:
        fs._open = real_open
    assert got[-1]["content"] == "message 3999" and len(got) == 20
    assert total > 150000
    assert counted[0] < 6000, counted[0]


def test_a_line_of_any_length_survives():
    root = support.fresh_flash()
    big = "x" * 12000 + "中" * 500  # over 10 KB: MimiClaw would lose it
    _write_lines(root, [_user(1), {"role": "assistant", "content": big}, _user(2)])
    got = sessions.load("tg_1")
    assert [m["role"] for m in got] == ["user", "assistant", "user"]
    assert got[1]["content"] == big


def test_a_line_too_long_to_load_becomes_a_pointer():
    root = support.fresh_flash()
    huge = "y" * (config.SESSION_LINE_MAX_BYTES + 10)
    _write_lines(root, [_user(1), {"role": "assistant", "content": huge}, _user(2)])
    got = sessions.load("tg_1")
    assert [m["role"] for m in got] == ["user", "assistant", "user"]
    assert "/data/sessions/tg_1.jsonl" in got[1]["content"] and "offset" in got[1]["content"]
    assert sessions.report["oversize"] == 1
    # the role may come after the long field (MicroPython's json does not keep key order)
    support.write(root + "/data/sessions/tg_1.jsonl", _line(_user(1)) + '{"content":"%s","role":"assistant"}\n' % huge
                  + '{"content":"%s","role":"tool","tool_call_id":"x"}\n' % huge + _line(_user(2)))
    got = sessions.load("tg_1")
    assert [m["role"] for m in got] == ["user", "assistant", "user"]
    assert sessions.report["oversize"] == 2


def test_torn_last_line_is_skipped_reported_and_healed():
    root = support.fresh_flash()
    _write_lines(root, [_user(1), _user(2)], tail='{"role":"user","content":"mess')
    got = sessions.load("tg_1")
    assert [m["content"] for m in got] == ["message 1", "message 2"]
    assert sessions.report["torn"] == 1
    sessions.append("tg_1", _user(3))  # must not glue onto the torn line
    got = sessions.load("tg_1")
    assert [m["content"] for m in got] == ["message 1", "message 2", "message 3"]
    assert sessions.report["malformed"] == 1 and sessions.report["torn"] == 0


def test_unterminated_but_whole_last_line_is_kept():
    root = support.fresh_flash()
    _write_lines(root, [_user(1)], tail=_line(_user(2))[:-1])
    assert [m["content"] for m in sessions.load("tg_1")] == ["message 1", "message 2"]


def test_malformed_lines_are_skipped():
    root = support.fresh_flash()
    support.write(root + "/data/sessions/tg_1.jsonl",
                  _line(_user(1)) + "not json\n\n[1,2]\n\xff\xfe\n" + _line(_user(2)))
    got = sessions.load("tg_1")
    assert [m["content"] for m in got] == ["message 1", "message 2"]
    assert sessions.report["malformed"] == 3


def test_window_never_starts_with_an_orphan_tool_result():
    root = support.fresh_flash()
    msgs = [_user(0), _call("t1"), _result("t1"), {"role": "assistant", "content": "done"}]
    for i in range(1, 12):
        msgs += [_user(i), _call("c%d" % i), _result("c%d" % i), {"role": "assistant", "content": "ok %d" % i}]
    _write_lines(root, msgs)
    for n in range(2, 22):
        got = sessions.load("tg_1", n)
        assert got[0]["role"] == "user", (n, got[0])
        ids = [m["tool_call_id"] for m in got if m["role"] == "tool"]
        calls = [c["id"] for m in got if m.get("tool_calls") for c in m["tool_calls"]]
        assert sorted(ids) == sorted(calls), n


def test_repair_drops_duplicates_and_orphans_and_answers_open_calls():
    msgs = [_result("zz"), _user(1), _call("a"), _result("a"), _result("a"), _result("b"),
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "x", "input": {}},
                                                                 {"id": "c", "name": "list_dir", "input": {}}]},
            _user(2), _result("c"), {"role": "system", "content": "?"}, _call("d")]
    out, fixes = sessions.repair(msgs)
    roles = [(m["role"], m.get("tool_call_id")) for m in out]
    assert roles == [("user", None), ("assistant", None), ("tool", "a"), ("assistant", None),
                     ("tool", "c"), ("user", None), ("assistant", None), ("tool", "d")], roles
    assert out[3]["tool_calls"] == [{"id": "c", "name": "list_dir", "input": {}}]
    assert out[4]["is_error"] and "interrupted" in out[4]["content"] and out[4]["name"] == "list_dir"
    assert out[7]["is_error"]
    assert fixes == 8, fixes
    assert msgs[6]["tool_calls"][0]["id"] == "a"  # input untouched


def test_lines_of_the_wrong_types_are_dropped_or_fixed():
    # Valid JSON with wrong types would make every request of the chat fail with a 400.
    root = support.fresh_flash()
    bad_calls = [{"id": 5, "name": "x", "input": {}}, {"id": "n", "name": 7, "input": {}},
                 {"id": "s", "name": "x", "input": "notadict"}, 5, {"id": "ok", "name": "x", "input": None}]
    _write_lines(root, [
        {"role": "user", "content": 123}, {"role": "assistant", "content": ["x", 1]},
        _user(1), {"role": "assistant", "content": {"a": 1}, "tool_calls": "str"},
        {"role": "assistant", "content": None, "tool_calls": bad_calls},
        {"role": "tool", "tool_call_id": 5, "content": "r"}, {"role": "tool", "tool_call_id": "s", "content": "r"},
        {"role": "tool", "tool_call_id": "ok", "content": {"x": 1}},
        {"role": "assistant", "content": "a", "tool_calls": [{"id": "b", "name": "x", "input": {}}]},
        {"role": "tool", "tool_call_id": "b", "content": None}, _user(2)])
    got = sessions.load("tg_1")
    assert got[0] == _user(1)
    assert got[1]["tool_calls"] == [{"id": "ok", "name": "x", "input": None}]
    assert got[2]["tool_call_id"] == "ok" and got[2]["is_error"] and "no result" in got[2]["content"]
    assert got[3]["content"] == "a" and got[4] == {"role": "tool", "tool_call_id": "b", "content": None}
    assert got[5] == _user(2) and len(got) == 6
    for m in got:
        assert m.get("content") is None or isinstance(m["content"], str), m
        for c in m.get("tool_calls") or ():
            assert isinstance(c["id"], str) and isinstance(c["name"], str) and isinstance(c["input"] or {}, dict)
    assert sessions.report["repaired"] >= 10
    out, fixes = sessions.repair(got)
    assert out == got and fixes == 0


def test_repair_leaves_a_good_history_alone():
    msgs = [_user(1), _call("a"), _result("a"), {"role": "assistant", "content": "fine"}, _user(2)]
    out, fixes = sessions.repair(msgs)
    assert out == msgs and fixes == 0


def test_tool_results_are_stored_capped():
    support.fresh_flash()
    sessions.append("tg_1", _user(1))
    sessions.append("tg_1", _call("a"))
    sessions.append("tg_1", _result("a", "é" * 3000))
    got = sessions.load("tg_1")
    c = got[2]["content"]
    assert len(c.encode()) <= config.SESSION_TOOL_RESULT_MAX_BYTES
    assert c.startswith("éé") and "cut to 1024 bytes" in c


def test_budget_limits_the_window_but_keeps_the_newest():
    root = support.fresh_flash()
    _write_lines(root, [{"role": "user", "content": "%d %s" % (i, "z" * 900)} for i in range(10)])
    got = sessions.load("tg_1", 20, budget=3000)
    assert len(got) == 3 and got[-1]["content"].startswith("9 ")
    got = sessions.load("tg_1", 20, budget=10)
    assert len(got) == 1


def _with_rotate_at(n, fn):
    saved = (config.SESSION_ROTATE_BYTES, config.SESSION_ARCHIVES_MAX)
    config.SESSION_ROTATE_BYTES = n
    config.SESSION_ARCHIVES_MAX = 3
    try:
        fn()
    finally:
        config.SESSION_ROTATE_BYTES, config.SESSION_ARCHIVES_MAX = saved


def test_rotation_archives_and_carries_the_conversation_on():
    support.fresh_flash()

    def run():
        for i in range(120):
            sessions.append("tg_1", _user(i))

    _with_rotate_at(3000, run)
    arch = _archives()
    assert 1 <= len(arch) <= 3
    assert fs.size(P) <= 3000
    got = sessions.load("tg_1", 20)
    assert [m["content"] for m in got] == ["message %d" % i for i in range(100, 120)]
    data = fs.read(arch[-1], 4000)[0]  # the model can read an archive
    assert b"message" in data
    names = [a.rsplit("/", 1)[1] for a in arch]
    assert names[-1] == "tg_1.%d.jsonl" % (int(names[0].split(".")[1]) + len(names) - 1)


def test_clear_starts_afresh_and_keeps_the_old_file_readable():
    support.fresh_flash()
    sessions.append("tg_1", _user(1))
    arch = sessions.clear("tg_1")
    assert arch == "/data/sessions/archive/tg_1.1.jsonl"
    assert sessions.load("tg_1") == []
    assert b"message 1" in fs.read(arch, 1000)[0]
    assert sessions.clear("tg_1") is None
    assert sessions.keys() == []


def test_append_survives_a_power_cut_at_every_step():
    root = support.fresh_flash()
    old = [_user(i) for i in range(5)]
    new = {"role": "assistant", "content": "w" * 1500}

    def setup():
        _write_lines(root, old)

    def verify():
        got = sessions.load("tg_1")
        assert [m["content"] for m in got[:5]] == ["message %d" % i for i in range(5)]
        assert len(got) == 5 or got[5]["content"] == new["content"]
        sessions.append("tg_1", _user(9))  # the next message always lands whole
        got = sessions.load("tg_1")
        assert got[-1]["content"] == "message 9"

    power_cut.each_cut(setup, lambda: sessions.append("tg_1", new), verify)


def test_rotation_survives_a_power_cut_at_every_step():
    root = support.fresh_flash()
    old = [_user(i) for i in range(40)]

    def setup():
        support.rmtree(root + "/data/sessions")
        _write_lines(root, old)

    def verify():
        seen = set()
        files = _archives() + ([P] if fs.size(P) is not None else [])
        for p in files:
            data = fs.read(p, 100000)[0].decode()
            for ln in data.split("\n"):
                if ln.startswith("{"):
                    try:
                        seen.add(json.loads(ln)["content"])
                    except ValueError:
                        pass
        for m in old:
            assert m["content"] in seen, m["content"]
        sessions.load("tg_1")

    def op():
        sessions.append("tg_1", _user(99))

    _with_rotate_at(1500, lambda: power_cut.each_cut(setup, op, verify))


def test_a_carry_that_starts_mid_exchange_loads_without_a_repair():
    # after a rotation the file may begin with a tool result or an answer: a window
    # boundary, not damage, so no warning and nothing counted
    root = support.fresh_flash()
    _write_lines(root, [_result("c0"), {"role": "assistant", "content": "ok"}, _user(1), _call("c1"),
                        _result("c1"), {"role": "assistant", "content": "done"}])
    got = sessions.load("tg_1", 20)
    assert got[0] == _user(1)
    assert sessions.report["repaired"] == 0 and len(got) == 4


def test_on_a_full_flash_rotation_frees_the_oldest_archive_before_it_copies():
    support.fresh_flash()

    def fill():
        for i in range(200):
            sessions.append("tg_1", _user(i))

    _with_rotate_at(2000, fill)  # three archives (the most kept) and a current file
    assert len(_archives()) == 3
    real_copy = fs.copy
    seen = []

    def full(*a):
        seen.append(len(_archives()))  # how many archives are there when the carry is copied
        raise OSError(28, "No space left on device")

    fs.copy = full
    try:
        _with_rotate_at(2000, lambda: support.raises(OSError, fill))
    finally:
        fs.copy = real_copy
    assert seen == [3]  # the oldest went first, and the new archive holds the file
    assert len(_archives()) == 3 and fs.size(P) is None
    _with_rotate_at(2000, lambda: sessions.append("tg_1", _user(999)))  # room again: it goes on
    assert sessions.load("tg_1")[-1]["content"] == "message 999"


def test_a_jobs_session_keeps_one_archive_a_chat_keeps_more():
    support.fresh_flash()

    def fill():
        for i in range(200):
            sessions.append("cron_j1", _user(i))
            sessions.append("tg_1", _user(i))

    _with_rotate_at(2000, fill)
    names = [a.rsplit("/", 1)[1] for a in _archives()]
    assert len([n for n in names if n.startswith("cron_j1.")]) == 1
    assert len([n for n in names if n.startswith("tg_1.")]) == 3  # SESSION_ARCHIVES_MAX here


def _from_flash(key):
    """What load gives when it reads the file, not the kept window."""
    sessions._win[0] = None
    return sessions.load(key)


def test_the_kept_window_is_what_the_flash_holds():
    # The window kept between turns must be, after every change, what a load from flash
    # gives: appends of every kind and size, two chats in turn, rotations, a clear, a torn
    # write and an edit by hand behind the module's back.
    root = support.fresh_flash()

    def add_raw(key, text):
        with open(root + "/data/sessions/%s.jsonl" % key, "ab") as f:
            f.write(text.encode())

    saved = config.SESSION_ROTATE_BYTES
    config.SESSION_ROTATE_BYTES = 30000
    hits = [0]
    window = sessions._window

    def counted(*a):
        hits[0] += 1
        return window(*a)

    sessions._window = counted
    try:
        seed = 7
        cid = 0
        for step in range(160):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            key = "tg_1" if seed % 5 else "tg_2"
            k = (seed >> 8) % 40
            k = 9 if k == 39 else k % 9  # one message in 40 too long to load
            if k < 3:
                m = {"role": "user", "content": "question %d ü 中文 %s" % (step, "x" * (seed % 300))}
            elif k < 5:
                cid += 1
                m = {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c%d" % cid, "name": "read_file", "input": {"path": "/data/a%d" % step}}]}
            elif k < 7:
                m = {"role": "tool", "tool_call_id": "c%d" % cid, "name": "read_file",
                     "content": "r" * (seed % 2000), "is_error": False}  # some over the stored cap
            elif k < 9:
                m = {"role": "assistant", "content": "answer %d 😀" % step}
            else:
                m = {"role": "assistant", "content": "long " * (config.SESSION_LINE_MAX_BYTES // 5 + 3)}
            sessions.load(key)  # a turn starts: the window is kept
            sessions.append(key, m)
            if step == 60:
                sessions.clear("tg_1")
            if step in (90, 91):  # a power cut mid-write: a torn line at the end of the kept chat
                add_raw(key, '{"role":"user","cont')
            if step in (120, 121):  # a line added by hand (mpremote) to the kept chat
                add_raw(key, json.dumps({"role": "user", "content": "by hand"}) + "\n")
            for kk in ("tg_1", "tg_2"):
                kept = sessions.load(kk)
                assert kept == _from_flash(kk), (step, kk)
                assert sessions.load(kk) == kept, (step, kk)
        assert hits[0] > 400  # the kept window was used (not only loads from flash)
        assert sessions._window is counted
    finally:
        sessions._window = window
        config.SESSION_ROTATE_BYTES = saved
