"""get_current_time, send_message, cron_add/list/remove through the registry."""
from mimi import bus, config, seam
from mimi.storage import cronjobs
from mimi.tools import clock as clock_tool
from mimi.tools import cron_tools, messaging, registry
import support

RUNTIMES = ("cpython", "micropython")


def _setup():
    support.fresh_flash()
    config.set("tz", "+08:00")
    registry.clear()
    clock_tool.register_all()
    messaging.register_all()
    cron_tools.register_all()


def _ctx(b=None, channel="telegram", chat="42"):
    return {"channel": channel, "chat_id": chat, "session": "tg_" + chat, "bus": b}


def _frozen(t, fn):
    saved = seam.time_s
    seam.time_s = lambda: t
    try:
        return fn()
    finally:
        seam.time_s = saved


def test_get_current_time_synced_and_not():
    _setup()
    T = 1767225600 + 6 * 3600  # 14:00 at +08:00, Thursday 2026-01-01
    out, err = _frozen(T, lambda: registry.execute("get_current_time", {}, _ctx()))
    assert not err
    assert out == ("Thursday, 2026-01-01T14:00:00+08:00 (UTC+08:00), unix %d, mode work. "
                   "Today's note: /data/memory/2026-01-01.md" % T), out
    out, err = _frozen(5000, lambda: registry.execute("get_current_time", {}, _ctx()))
    assert not err and "not synced" in out and "2026" not in out


def test_send_message_to_this_chat_and_allowed_chats_only():
    _setup()
    config.set("owner_chat", "42")  # the owner's turns reach allowed chats (test_trust.py: the others')
    b = bus.Bus(4, 2)
    out, err = registry.execute("send_message", {"text": "water the plants"}, _ctx(b, "cron", "42"))
    assert not err and out.startswith("sent to telegram chat 42")
    assert b.outbound.get() == {"channel": "telegram", "chat_id": "42", "text": "water the plants", "kind": "text"}
    out, err = registry.execute("send_message", {"text": "hi", "chat_id": 777}, _ctx(b))
    assert err and "not this chat" in out
    config.set("allowed_chats", "777, 888")
    out, err = registry.execute("send_message", {"text": "hi", "chat_id": 777}, _ctx(b))
    assert not err and b.outbound.get()["chat_id"] == "777"
    assert registry.execute("send_message", {"text": " "}, _ctx(b))[1]
    assert "over" in registry.execute("send_message", {"text": "x" * 5000}, _ctx(b))[0]
    assert "no message bus" in registry.execute("send_message", {"text": "x"}, _ctx(None))[0]


def test_send_message_reports_a_full_queue():
    _setup()
    b = bus.Bus(1, 1)
    b.outbound.put({"kind": "text"})
    saved = bus.Queue.put_wait
    bus.Queue.put_wait = lambda self, item, timeout_ms: self.put(item)
    try:
        out, err = registry.execute("send_message", {"text": "x"}, _ctx(b))
    finally:
        bus.Queue.put_wait = saved
    assert err and "queue is full" in out


def test_cron_tools_add_list_remove():
    _setup()
    T = 1767225600

    def go():
        out, err = registry.execute("cron_add", {"kind": "daily", "hhmm": "07:30", "text": "morning briefing"}, _ctx())
        assert not err and out == "added job j1: daily at 07:30 (local), next 2026-01-02T07:30:00+08:00", out
        out, err = registry.execute("cron_add", {"kind": "every", "every_s": 10, "text": "x"}, _ctx())
        assert err and "every_s must be between" in out
        config.set("owner_chat", "42")  # a job for the owner's chat, made in another chat:
        config.set("allowed_chats", "42,99")
        config.set("cross_chat", "owner")  # as the owner allows (tests/runtime/test_trust.py)
        out, err = registry.execute("cron_add", {"kind": "at", "at": "2026-01-01 09:00", "text": "call mum",
                                                 "chat_id": 42}, _ctx(None, "cron", "99"))
        assert not err and "once at 2026-01-01T09:00:00+08:00" in out
        lst = registry.execute("cron_list", {}, _ctx())[0]
        assert lst.split("\n")[0] == "j1: daily at 07:30 (local), next 2026-01-02T07:30:00+08:00, to telegram 42: morning briefing"
        assert "j2: once at" in lst and "to telegram 42: call mum" in lst
        assert registry.execute("cron_remove", {"id": "j1"}, _ctx()) == ("removed job j1", False)
        out, err = registry.execute("cron_remove", {"id": "j1"}, _ctx())
        assert err and "no job" in out
        assert [j["id"] for j in cronjobs.list()] == ["j2"]

    _frozen(T, go)
    registry.execute("cron_remove", {"id": "j2"}, _ctx())
    assert registry.execute("cron_list", {}, _ctx())[0] == "no scheduled jobs"


def test_cron_add_targets_only_this_chat_the_owner_or_allowed_chats():
    # as send_message: a prompt cannot schedule messages to strangers
    _setup()
    spec = {"kind": "every", "every_s": 60, "text": "say hi", "chat_id": "777000"}
    out, err = registry.execute("cron_add", spec, _ctx(None, "telegram", "6001"))
    assert err and "chat 777000 is not this chat, the owner's, or an allowed chat" in out, out
    assert cronjobs.list() == []
    config.set("allowed_chats", "6001,777000")
    out, err = registry.execute("cron_add", spec, _ctx(None, "telegram", "6001"))
    assert not err and out.startswith("added job j1"), out


def test_a_job_made_in_a_group_chat_keeps_the_groups_tool_limits():
    _setup()
    ctx = _ctx(None, "telegram", "-100600")
    ctx["is_group"] = True
    assert not registry.execute("cron_add", {"kind": "every", "every_s": 60, "text": "gpio 4 on"}, ctx)[1]
    ctx["is_group"] = None  # a private chat
    assert not registry.execute("cron_add", {"kind": "every", "every_s": 60, "text": "x"}, ctx)[1]
    out, err = registry.execute("cron_add", {"kind": "every", "every_s": 60, "text": "x", "is_group": False}, ctx)
    assert err and "is_group" in out, out  # the model cannot set it: it is not an argument
    jobs = cronjobs.list()
    assert len(jobs) == 2 and jobs[0]["is_group"] is True and "is_group" not in jobs[1]


def test_registry_takes_type_lists_and_per_tool_caps():
    registry.clear()
    registry.register(registry.Tool("t", "d", {"type": "object", "properties": {
        "v": {"type": ["string", "integer"]}}}, lambda a, c: "y" * 300, max_bytes=100))
    out, err = registry.execute("t", {"v": 5}, {})
    assert not err and len(out.encode()) <= 100 and "truncated" in out
    assert not registry.execute("t", {"v": "5"}, {})[1]
    out, err = registry.execute("t", {"v": 1.5}, {})
    assert err and "must be string or integer" in out
