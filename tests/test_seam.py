"""The runtime seam: paths, clocks, settings store, threads (both runtimes)."""
import os

from mimi import seam
import support

RUNTIMES = ("cpython", "micropython")


def test_real_path_maps_device_paths_into_the_flash_folder():
    root = support.fresh_flash()
    assert seam.real_path("") == root  # the flash folder
    assert seam.real_path("/data/memory/MEMORY.md") == root + "/data/memory/MEMORY.md"


def test_wall_clock_is_unix_seconds_and_synced_on_host():
    t = seam.time_s()
    assert isinstance(t, int)
    assert t > 1704067200  # after 2024: the port's epoch is hidden
    assert seam.clock_synced()
    tm = seam.gmtime(0)
    assert tm[0] == 1970 and tm[1] == 1 and tm[2] == 1


def test_gmtime_and_mktime_round_trip():
    t = 1767225600 + 3600 * 13 + 61  # 2026-01-01 13:01:01 UTC
    tm = seam.gmtime(t)
    assert tm[:6] == (2026, 1, 1, 13, 1, 1)
    assert tm[6] == 3  # Thursday (Monday is 0)
    assert seam.mktime(tm) == t


def test_ticks_wrap_and_diff():
    a = seam.ticks_ms()
    seam.sleep_ms(15)
    b = seam.ticks_ms()
    assert seam.ticks_diff(b, a) >= 10
    assert seam.ticks_diff(seam.ticks_add(a, 5), a) == 5
    # Across the wrap the difference is still small and signed.
    near_end = seam.ticks_add(0, -3)
    assert seam.ticks_diff(seam.ticks_add(near_end, 10), near_end) == 10
    assert seam.ticks_diff(near_end, seam.ticks_add(near_end, 10)) == -10


def test_settings_store_survives_a_new_store_object():
    root = support.fresh_flash()
    assert seam.store_get("tg_token") is None
    seam.store_set("tg_token", "123:FAKE-token")
    assert seam.store_get("tg_token") == "123:FAKE-token"
    # The value is on "flash" (nvs.json beside data/), not in /data.
    raw = support.read(root + "/nvs.json")
    assert b"tg_token" in raw
    assert "nvs.json" not in os.listdir(root + "/data")
    seam.store_erase("tg_token")
    assert seam.store_get("tg_token") is None
    seam.store_erase("tg_token")  # absent: no error


def test_settings_store_refuses_long_values_and_keeps_unicode():
    support.fresh_flash()
    support.raises(ValueError, seam.store_set, "model", "x" * 600)
    seam.store_set("model", "模型-é")
    assert seam.store_get("model") == "模型-é"


def test_a_stored_value_that_is_not_utf8_reads_as_unset():
    support.fresh_flash()
    nvs = seam._store()
    nvs.set_blob("tz", b"\xff\xfe+01:00")  # a damaged store
    nvs.commit()
    assert seam.store_get("tz") is None  # the default then; every turn used to fail
    seam.store_set("tz", "+01:00")
    assert seam.store_get("tz") == "+01:00"


def test_threads_and_locks():
    lock = seam.allocate_lock()
    done = []

    def work(n):
        with lock:
            done.append(n)

    for i in range(3):
        seam.start_thread(work, (i,), 16384)
    for _ in range(200):
        if len(done) == 3:
            break
        seam.sleep_ms(5)
    assert sorted(done) == [0, 1, 2]


def test_heap_figures_are_numbers_or_none():
    f = seam.mem_free()
    assert f is None or f > 0
    seam.collect()
    assert "(" in seam.describe()


def test_wifi_and_ntp_through_the_stand_ins():
    support.fresh_flash()
    assert seam.wifi_connect("mimi-sim-wifi", "not-a-real-password", 1000)
    ok, ip, _ = seam.wifi_status()
    assert ok and ip
    nets = seam.wifi_scan()
    assert nets[0][0] == "mimi-sim-wifi"
    seam.ntp_sync()


def test_rtc_memory_survives_in_the_flash_folder():
    support.fresh_flash()
    assert seam.rtc_memory() == b""
    seam.rtc_memory(b"\x02crash")
    assert seam.rtc_memory() == b"\x02crash"


def test_a_name_that_does_not_resolve_is_an_oserror_naming_the_host():
    # .invalid never resolves (RFC 2606); the resolver's own message names no host
    try:
        seam.Conn("nohost.invalid", 443, 2000)
    except OSError as e:
        assert "nohost.invalid" in str(e)
    else:
        assert False, "connected to nohost.invalid"


def test_a_wlan_runtime_error_reaches_callers_as_oserror():
    # The ESP32 port raises RuntimeError("Wifi Unknown Error 0x....") for an ESP-IDF error
    # it has no name for; callers catch OSError.
    import network

    support.fresh_flash()
    network._state["status"] = network.STAT_IDLE
    support.setenv("MIMI_SIM_WIFI", "error")
    try:
        e = support.raises(OSError, seam.wifi_connect, "mimi-sim-wifi", "", 0)
        assert "Unknown Error" in str(e)
        assert seam.wifi_status() == (False, None, None)
    finally:
        support.setenv("MIMI_SIM_WIFI")


def test_the_sim_wifi_can_take_its_time_or_never_come():
    import network

    support.fresh_flash()
    for mode, up in (("never", False), ("delay:3600", False), ("delay:0", True)):
        network._state["status"] = network.STAT_IDLE
        network._state["first"] = None
        support.setenv("MIMI_SIM_WIFI", mode)
        try:
            assert seam.wifi_connect("mimi-sim-wifi", "", 0) is up, mode
            assert seam.wifi_status()[0] is up, mode
        finally:
            support.setenv("MIMI_SIM_WIFI")
    network._state["first"] = None


def test_elapsed_ms_holds_past_the_ticks_range():
    m = seam.moment()
    assert m[1] is not None and 0 <= seam.elapsed_ms(m) < 60000
    # Seven days later on the wall clock, where ticks_ms has wrapped (ticks say ~0 ms):
    old = [seam.ticks_ms(), seam.time_s() - 7 * 86400]
    assert 7 * 86400000 <= seam.elapsed_ms(old) < 7 * 86400000 + 60000
    # A moment taken before the clock was set gets its wall time on the first look after.
    early = [seam.ticks_add(seam.ticks_ms(), -5000), None]
    assert 5000 <= seam.elapsed_ms(early) < 65000 and early[1] is not None
    assert abs(early[1] - (seam.time_s() - 5)) <= 1


def test_wait_ms_waits_at_least_about_that_long():
    t0 = seam.ticks_ms()
    seam.wait_ms(30)
    assert seam.ticks_diff(seam.ticks_ms(), t0) >= 25
    seam.wait_ms(0)
    seam.wait_ms(-5)  # nothing to wait for: back at once


def test_timeouts_read_timed_out_whatever_their_errno():
    assert seam.timed_out(OSError(110))
    assert not seam.timed_out(OSError(111)) and not seam.timed_out(ValueError(110))
    e = seam._as_timeout(OSError(110))
    assert e.args == (110, "timed out") and "timed out" in str(e)
    assert seam._as_timeout(OSError(111)).args == (111,)


def test_ram_figures_from_the_stand_in_board():
    r = seam.ram()
    p, i = r["psram"], r["internal"]
    assert p[0] == 2048 * 1024 and 0 < p[1] < p[0] and p[2] <= p[1]
    assert 250 * 1024 < i[1] < 300 * 1024 and i[2] < i[1]
    assert (r["gc_free"] is None) == (r["gc_used"] is None)
    support.setenv("MIMI_SIM_PSRAM", "0")
    try:
        assert seam.ram()["psram"] is None and seam.ram()["internal"] == i
    finally:
        support.setenv("MIMI_SIM_PSRAM")


def test_version_and_board():
    v = seam.version()
    assert v is None or (len(v) == 3 and v >= (1, 22, 0))
    assert isinstance(seam.board(), str) and seam.board()


def test_address_of_a_resolved_name():
    ais = seam.resolve("127.0.0.1", 80)
    assert seam.address(ais[0][-1]) == "127.0.0.1"
