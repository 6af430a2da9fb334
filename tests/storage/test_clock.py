"""Time zone parsing, local time, time-of-day modes (both runtimes)."""
from mimi import clock, config
import support

RUNTIMES = ("cpython", "micropython")

T0 = 1767225600  # 2026-01-01 00:00:00 UTC, a Thursday


def _tz(text):
    support.fresh_flash()
    config.set("tz", text)


def test_parse_tz_forms():
    assert clock.parse_tz("+08:00") == 8 * 3600
    assert clock.parse_tz("-05:30") == -(5 * 3600 + 1800)
    assert clock.parse_tz("UTC+8") == 8 * 3600
    assert clock.parse_tz("utc-3") == -3 * 3600
    assert clock.parse_tz("GMT+0545") == 5 * 3600 + 45 * 60
    assert clock.parse_tz("UTC") == 0
    assert clock.parse_tz("Z") == 0
    assert clock.parse_tz(" +14:00 ") == 14 * 3600


def test_parse_tz_refusals_say_what_works():
    for bad in ("8", "+8:75", "+15:00", "-13", "Asia/Shanghai", "+", "+1:2:3", None):
        e = support.raises(ValueError, clock.parse_tz, bad)
        assert "+08:00" in str(e) or "outside" in str(e), (bad, str(e))


def test_format_tz():
    assert clock.format_tz(8 * 3600) == "+08:00"
    assert clock.format_tz(-(5 * 3600 + 1800)) == "-05:30"
    assert clock.format_tz(0) == "+00:00"


def test_set_tz_stores_canonical_and_refuses_bad():
    support.fresh_flash()
    assert clock.set_tz("UTC+8") == "+08:00"
    assert config.get("tz") == "+08:00"
    support.raises(ValueError, clock.set_tz, "Mars")
    assert config.get("tz") == "+08:00"


def test_local_time_in_the_owners_zone():
    _tz("+08:00")
    assert clock.local(T0)[:6] == (2026, 1, 1, 8, 0, 0)
    assert clock.iso_local(T0) == "2026-01-01T08:00:00+08:00"
    assert clock.date_str(T0) == "2026-01-01"
    _tz("-05:30")
    assert clock.local(T0)[:6] == (2025, 12, 31, 18, 30, 0)
    assert clock.date_str(T0) == "2025-12-31"
    assert clock.DAYS[clock.local(T0)[6]] == "Wednesday"


def test_bad_setting_falls_back_to_utc():
    _tz("nonsense")
    assert clock.offset_s() == 0
    assert clock.iso_local(T0) == "2026-01-01T00:00:00+00:00"


def test_modes_cover_every_hour():
    want = {6: "morning", 8: "morning", 9: "work", 11: "work", 12: "break", 13: "break",
            14: "work", 17: "work", 18: "evening", 21: "evening", 22: "night", 23: "night",
            0: "night", 5: "night"}
    for h in want:
        assert clock.mode(h) == want[h], h


def test_describe_and_unsynced_clock():
    _tz("+08:00")
    d = clock.describe(T0 + 14 * 3600)  # 22:00 local
    assert d == "Thursday 2026-01-01 22:00 (UTC+08:00, mode: night)", d
    assert "not synced" in clock.describe(1000)
    assert not clock.synced(1000) and clock.synced(T0)


def test_parse_local_and_hhmm():
    _tz("+08:00")
    assert clock.parse_local("2026-01-01 08:00") == T0
    assert clock.parse_local("2026-01-01T08:00:30") == T0 + 30
    for bad in ("2026-01-01", "tomorrow 8am", "2026-13-01 00:00", "2026-02-30 10:00"):
        support.raises(ValueError, clock.parse_local, bad)
    assert clock.parse_hhmm("07:30") == 450
    for bad in ("7:3", "24:00", "12:60", "noon", "12"):
        support.raises(ValueError, clock.parse_hhmm, bad)


def test_next_daily_is_strictly_later_and_local():
    _tz("+08:00")
    # 07:30 local on 2026-01-01 is 23:30 UTC the day before
    assert clock.next_daily(450, T0) == T0 - 1800 + 86400
    assert clock.next_daily(480, T0) == T0 + 86400  # exactly now: the next one
    assert clock.next_daily(481, T0) == T0 + 60
