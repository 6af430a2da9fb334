"""The cron service hands due jobs to the agent (both runtimes)."""
import support

from mimi import bus, seam
from mimi import services as cron
from mimi.storage import cronjobs

RUNTIMES = ("cpython", "micropython")


class Store:
    """A job store stand-in that records the calls."""

    def __init__(self, jobs):
        self.jobs = jobs
        self.marked = []

    def due(self, now_s):
        return [j for j in self.jobs if j["id"] not in [m[0] for m in self.marked]]

    def mark_run(self, job_id, now_s):
        self.marked.append((job_id, now_s))


JOB = {"id": "j3", "kind": "daily", "hhmm": "08:00", "text": "morning briefing", "chat_id": "42",
       "channel": "telegram", "next_s": 0}


def test_a_due_job_becomes_an_inbound_message_in_its_own_session():
    support.fresh_flash()
    b = bus.Bus(4, 4)
    st = Store([dict(JOB)])
    c = cron.Cron(b, st)
    now = seam.time_s()
    assert c.run_due(now) == 1
    m = b.inbound.get(0)
    assert m["channel"] == "cron" and m["chat_id"] == "42" and m["job"] == "j3"
    assert m["session"] == "cron_j3" and m["reply_channel"] == "telegram"
    assert m["text"] == "[scheduled job j3, daily at 08:00 (local); your reply goes to this chat] morning briefing"
    assert st.marked == [("j3", now)]


def test_a_full_bus_leaves_the_job_due():
    b = bus.Bus(1, 4)
    b.inbound.put({"text": "occupied"})
    st = Store([dict(JOB)])
    c = cron.Cron(b, st)
    assert c.run_due(seam.time_s()) == 0 and st.marked == []
    b.inbound.get(0)
    assert c.run_due(seam.time_s()) == 1 and len(st.marked) == 1


def test_nothing_fires_while_the_clock_is_unset():
    b = bus.Bus(4, 4)
    st = Store([dict(JOB)])
    c = cron.Cron(b, st)
    real = seam.clock_synced
    seam.clock_synced = lambda: False
    try:
        assert c.run_due(seam.time_s()) == 0
    finally:
        seam.clock_synced = real
    assert st.marked == [] and len(b.inbound) == 0


def test_tick_asks_the_store_only_every_period():
    b = bus.Bus(8, 4)
    calls = []

    class Counting(Store):
        def due(self, now_s):
            calls.append(now_s)
            return []

    c = cron.Cron(b, Counting([]))
    t = seam.ticks_ms()
    c.tick(t)
    c.tick(t + 100)
    c.tick(t + 4000)
    assert len(calls) == 1
    c.tick(t + 5001)
    assert len(calls) == 2


def test_with_the_real_store_a_missed_job_runs_once():
    support.fresh_flash()
    b = bus.Bus(8, 4)
    now = seam.time_s()
    jid = cronjobs.add({"kind": "every", "every_s": 60, "text": "check the plants", "chat_id": "42"}, now)
    c = cron.Cron(b)
    assert c.run_due(now + 30) == 0
    later = now + 60 * 10 + 5  # ten periods were missed (the board was off)
    assert c.run_due(later) == 1
    assert c.run_due(later) == 0  # once, not ten times
    m = b.inbound.get(0)
    assert m["job"] == jid and "check the plants" in m["text"]
    assert c.run_due(later + 60) == 1


def test_a_broken_store_is_logged_not_raised():
    class Broken(Store):
        def due(self, now_s):
            raise ValueError("cron.json is damaged; fix or delete it")

    assert cron.Cron(bus.Bus(2, 2), Broken([])).run_due(seam.time_s()) == 0


def test_a_job_made_in_a_group_runs_with_the_groups_tool_limits():
    support.fresh_flash()
    from mimi.agent import loop

    b = bus.Bus(4, 4)
    grp = dict(JOB, id="j4", chat_id="-100500", is_group=True)
    mine = dict(JOB, id="j5")
    c = cron.Cron(b, Store([grp, mine]))
    assert c.run_due(seam.time_s()) == 2
    m4, m5 = b.inbound.get(0), b.inbound.get(0)
    assert m4["job"] == "j4" and m4["is_group"] is True
    assert sorted(loop.denied_groups(m4)) == ["cron", "file", "gpio"]
    assert m5["is_group"] is False and loop.denied_groups(m5) == []
