"""The cron job store: validation, ids, due and mark_run (both runtimes)."""
import json

from mimi import config
from mimi.storage import cronjobs, fs
import power_cut
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00 UTC; 08:00 at +08:00


def _fresh(tz="+08:00"):
    root = support.fresh_flash()
    config.set("tz", tz)
    return root


def _spec(**kw):
    d = {"kind": "every", "every_s": 3600, "text": "check the plants", "chat_id": "42"}
    d.update(kw)
    return d


def _err(spec, now=T0):
    return str(support.raises(ValueError, cronjobs.validate, spec, now))


def test_validation_names_the_problem():
    _fresh()
    assert "kind" in _err(_spec(kind="weekly"))
    assert "every_s must be between" in _err(_spec(every_s=5))
    assert "whole number" in _err(_spec(every_s="60"))
    assert "every_s is needed" in _err({"kind": "every", "text": "x", "chat_id": "1"})
    assert "text is needed" in _err(_spec(text="  "))
    assert "over 512 bytes" in _err(_spec(text="x" * 513))
    assert "chat_id is needed" in _err(_spec(chat_id=None))
    assert "must be a number" in _err(_spec(chat_id="@me"))
    assert "channel" in _err(_spec(channel="email"))
    assert "unknown field 'cron'" in _err(_spec(cron="* * * * *"))
    assert "has passed" in _err(_spec(kind="at", at_s=T0 - 10))
    assert "YYYY-MM-DD HH:MM" in _err(_spec(kind="at", at="tomorrow"))
    assert "at (YYYY-MM-DD HH:MM" in _err({"kind": "at", "text": "x", "chat_id": "1"})
    assert "HH:MM" in _err(_spec(kind="daily", hhmm="25:00"))


def test_the_three_kinds():
    _fresh("+08:00")
    j = cronjobs.validate(_spec(), T0)
    assert (j["kind"], j["every_s"], j["next_s"]) == ("every", 3600, T0 + 3600)
    j = cronjobs.validate(_spec(kind="at", at="2026-01-01 09:30"), T0)
    assert j["at_s"] == T0 + 5400 and j["next_s"] == T0 + 5400
    j = cronjobs.validate(_spec(kind="daily", hhmm="7:30"), T0)
    assert j["hhmm"] == "07:30" and j["next_s"] == T0 - 1800 + 86400
    j = cronjobs.validate(_spec(chat_id=-1001), T0)
    assert j["chat_id"] == "-1001" and j["channel"] == "telegram"


def test_add_list_remove_with_unique_ids():
    _fresh()
    a = cronjobs.add(_spec(), T0)
    b = cronjobs.add(_spec(kind="daily", hhmm="07:30"), T0)
    assert (a, b) == ("j1", "j2")
    assert [j["id"] for j in cronjobs.list()] == ["j1", "j2"]
    cronjobs.remove("j2")
    assert cronjobs.add(_spec(), T0) == "j3"  # an id is never reused
    assert "no job" in str(support.raises(ValueError, cronjobs.remove, "j2"))
    assert cronjobs.kind_text(cronjobs.list()[0]) == "every 3600 s"


def test_job_limit():
    _fresh()
    for _ in range(config.CRON_JOBS_MAX):
        cronjobs.add(_spec(), T0)
    assert "remove one" in str(support.raises(ValueError, cronjobs.add, _spec(), T0))


def test_every_job_after_downtime_runs_once_on_its_grid():
    _fresh()
    jid = cronjobs.add(_spec(every_s=600), T0)
    assert cronjobs.due(T0 + 599) == []
    assert [j["id"] for j in cronjobs.due(T0 + 600)] == [jid]
    later = T0 + 600 + 10 * 3600 + 5  # ten hours down: 60 periods missed
    assert len(cronjobs.due(later)) == 1
    j = cronjobs.mark_run(jid, later)
    assert j["last_s"] == later and j["next_s"] == T0 + 600 * 62
    assert cronjobs.due(later + 1) == []


def test_at_job_runs_once_and_is_removed():
    _fresh()
    jid = cronjobs.add(_spec(kind="at", at_s=T0 + 100), T0)
    assert cronjobs.due(T0 + 50) == []
    assert [j["id"] for j in cronjobs.due(T0 + 5000)] == [jid]
    cronjobs.mark_run(jid, T0 + 5000)
    assert cronjobs.list() == [] and cronjobs.due(T0 + 6000) == []
    assert cronjobs.mark_run(jid, T0 + 6000) is None


def test_daily_job_in_local_time_missed_days_run_once():
    _fresh("+08:00")
    jid = cronjobs.add(_spec(kind="daily", hhmm="09:00"), T0)  # 08:00 local now
    assert cronjobs.due(T0 + 3599) == []
    assert len(cronjobs.due(T0 + 3600)) == 1
    cronjobs.mark_run(jid, T0 + 3600)
    assert cronjobs.due(T0 + 3600 + 86399) == []
    late = T0 + 3600 + 3 * 86400 + 60  # three days down
    assert len(cronjobs.due(late)) == 1
    j = cronjobs.mark_run(jid, late)
    assert j["next_s"] == T0 + 3600 + 4 * 86400


def test_daily_job_follows_a_time_zone_change():
    _fresh("+08:00")
    cronjobs.add(_spec(kind="daily", hhmm="09:00"), T0)
    config.set("tz", "+09:00")  # 09:00 at +09:00 is 00:00 UTC
    assert cronjobs.due(T0 + 10) == []
    assert len(cronjobs.due(T0 + 86400)) == 1


def test_nothing_fires_while_the_clock_is_unset():
    _fresh()
    jid = cronjobs.add(_spec(every_s=60), 500)  # added before NTP: no next run yet
    jd = cronjobs.add(_spec(kind="daily", hhmm="09:00"), 500)
    assert cronjobs.list()[0]["next_s"] is None
    assert cronjobs.due(560) == [] and cronjobs.due(10 ** 6) == []
    assert cronjobs.due(T0) == []  # clock now set: schedules from now
    assert cronjobs.list()[0]["next_s"] == T0 + 60
    assert [j["id"] for j in cronjobs.due(T0 + 60)] == [jid]
    assert [j["id"] for j in cronjobs.due(T0 + 3600)] == [jid, jd]


def test_a_damaged_file_is_reported_and_kept():
    root = _fresh()
    support.write(root + "/data/cron.json", "{not json")
    assert "damaged" in str(support.raises(ValueError, cronjobs.add, _spec(), T0))
    assert cronjobs.due(T0) == []
    assert support.read(root + "/data/cron.json") == b"{not json"


def test_damaged_jobs_are_switched_off_once_and_never_queued():
    # A job with every_s 0 was queued every tick and failed in mark_run for ever.
    root = _fresh()
    good = cronjobs.validate(_spec(every_s=60), T0)
    good["id"] = "j9"
    bad = [dict(good, id="j1", every_s=0), dict(good, id="j2", every_s=-60, next_s=T0 - 10),
           dict(good, id="j3", kind="weekly"), dict(good, id="j4", text=None), dict(good, id="j5", next_s="soon"),
           dict(good, id="j6", kind="daily", hhmm=730), dict(good, id="j7", chat_id={"x": 1})]
    support.write(root + "/data/cron.json", json.dumps({"seq": 9, "jobs": bad + [5, dict(good, id=None), good]}))
    got = []
    saved = cronjobs.log.warn
    cronjobs.log.warn = lambda tag, msg, *a: got.append(msg % a)
    try:
        assert [j["id"] for j in cronjobs.due(T0 + 60)] == ["j9"]
        assert len(got) == 9, got  # seven switched off, two dropped
        assert "job j1 is damaged, switched off: every_s must be between" in got[0]
        assert [j["id"] for j in cronjobs.due(T0 + 120)] == ["j9"]
        assert len(got) == 9  # logged once: the file says so now
    finally:
        cronjobs.log.warn = saved
    jobs = cronjobs.list()
    assert [j["id"] for j in jobs] == ["j1", "j2", "j3", "j4", "j5", "j6", "j7", "j9"]
    assert all(j.get("off") for j in jobs[:7]) and "off" not in jobs[7]
    assert cronjobs.mark_run("j9", T0 + 60)["next_s"] == T0 + 120
    cronjobs.remove("j1")
    assert cronjobs.add(_spec(), T0) == "j10"


def test_numbers_out_of_range_switch_a_job_off_not_the_whole_file():
    # 1e999 in JSON is infinity: int() of it raised OverflowError, which stopped every job
    root = _fresh()
    good = cronjobs.validate(_spec(every_s=60), T0)
    good["id"] = "j9"
    bad = [dict(good, id="j1", every_s=7777777771), dict(good, id="j2", last_s=7777777772),
           dict(good, id="j3", kind="at", at_s=7777777773)]
    text = json.dumps({"seq": 9, "jobs": bad + [good]})  # then numbers no runtime's dumps writes alike
    for a, b in (("7777777771", "1e999"), ("7777777772", "1e300"), ("7777777773", "-1e999")):
        text = text.replace(a, b)
    support.write(root + "/data/cron.json", text)
    assert [j["id"] for j in cronjobs.due(T0 + 60)] == ["j9"]
    assert all(j.get("off") for j in cronjobs.list()[:3])
    cronjobs.remove("j1")  # and it can be removed
    assert [j["id"] for j in cronjobs.list()] == ["j2", "j3", "j9"]
    assert "whole number" in _err(_spec(every_s=float("inf")))
    assert "whole number" in _err(_spec(every_s=float("nan")))
    support.write(root + "/data/cron.json", '{"seq": 1e999, "jobs": []}')
    assert "damaged" in str(support.raises(ValueError, cronjobs.add, _spec(), T0))


def test_job_store_writes_survive_a_power_cut_at_every_step():
    root = _fresh()
    before = {"seq": 1, "jobs": [cronjobs.validate(_spec(), T0)]}
    before["jobs"][0]["id"] = "j1"
    text = json.dumps(before)

    def setup():
        support.write(root + "/data/cron.json", text)

    def verify():
        jobs = cronjobs.list()
        assert [j["id"] for j in jobs] in (["j1"], ["j1", "j2"]), jobs

    power_cut.each_cut(setup, lambda: cronjobs.add(_spec(text="y" * 500), T0), verify)

    def verify_run():
        j = cronjobs.list()[0]
        assert j["next_s"] in (T0 + 3600, T0 + 7200)
        assert fs.size("/data/cron.json") is not None

    power_cut.each_cut(setup, lambda: cronjobs.mark_run("j1", T0 + 3600), verify_run)


def test_an_add_that_would_make_the_file_too_big_is_refused_and_the_rest_keep_running():
    _fresh()
    ids = []
    for i in range(config.CRON_JOBS_MAX):
        try:
            ids.append(cronjobs.add(_spec(text="%02d " % i + "x" * 440), T0))
        except ValueError as e:
            assert "too big" in str(e) and i > 5
            break
    else:
        assert False, "every add was taken"
    for jid in ids:  # every job runs and is marked: the file stays readable throughout
        cronjobs.mark_run(jid, T0 + 3600)
    assert [j["id"] for j in cronjobs.due(T0 + 7200)] == ids
    cronjobs.remove(ids[0])
    assert len(cronjobs.list()) == len(ids) - 1


def test_jobs_follow_a_clock_that_ran_ahead_and_came_back():
    _fresh()
    every = cronjobs.add(_spec(every_s=3600), T0)
    daily = cronjobs.add(_spec(kind="daily", hhmm="08:00", every_s=None), T0)
    ahead = T0 + 2 * 86400 + 9 * 3600  # a bad clock for a while: both ran then
    assert {j["id"] for j in cronjobs.due(ahead)} == {every, daily}
    cronjobs.mark_run(every, ahead)
    cronjobs.mark_run(daily, ahead)
    now = T0 + 3 * 3600  # corrected: 03:00 UTC, 11:00 at +08:00
    assert cronjobs.due(now) == []
    assert [j["id"] for j in cronjobs.due(now + 3600)] == [every]  # within an hour, not days
    assert [j["id"] for j in cronjobs.due(T0 + 24 * 3600)] == [every, daily]  # 08:00 next day


def test_removing_a_job_removes_its_session_and_archive():
    from mimi.storage import sessions

    _fresh()
    jid = cronjobs.add(_spec(), T0)
    key = sessions.key_for("cron", jid)
    sessions.append(key, {"role": "user", "content": "run it"})
    sessions.clear(key)  # an archive
    sessions.append(key, {"role": "user", "content": "again"})
    other = sessions.key_for("telegram", "42")
    sessions.append(other, {"role": "user", "content": "mine"})
    cronjobs.remove(jid)
    assert fs.size(sessions.path_for(key)) is None
    assert [e[0] for e in fs.listdir(config.SESSION_ARCHIVE_DIR)] == []
    assert sessions.load(other)[0]["content"] == "mine"
