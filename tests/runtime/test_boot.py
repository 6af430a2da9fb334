"""Boot: crash counting, safe mode, WiFi that never gives up, NTP retry and resync (both runtimes)."""
import network
import ntptime
import support

from mimi import boot, config, seam

RUNTIMES = ("cpython", "micropython")


def _fresh():
    support.fresh_flash()
    boot.state["safe"] = False
    boot.state["reason"] = ""
    boot.state["feeding"] = False
    network._state["status"] = network.STAT_IDLE
    network.FAIL_CONNECTS = 0
    ntptime.FAIL = 0


def test_three_crashes_of_the_running_app_mean_safe_mode():
    _fresh()
    assert boot.crashes() == 0
    for n in (1, 2, 3):
        boot.app_running(True)  # /main.py started it
        safe = boot.check_safe_mode("watchdog" if n == 2 else "hard")
        assert boot.crashes() == n and safe == (n == 3)
    assert "3 times" in boot.state["reason"]
    assert boot.check_safe_mode("hard") and boot.crashes() == 3  # a safe boot runs no app: no count
    boot.clear_crashes()
    assert boot.crashes() == 0 and not boot.check_safe_mode("hard")
    boot.state["safe"] = False


def test_boots_where_the_app_never_ran_are_not_crashes():
    _fresh()
    for i in range(6):  # mpremote: a soft reset runs /boot.py, not /main.py; or a reset by its DTR line
        assert not boot.check_safe_mode("soft" if i % 2 else "hard")
    assert boot.crashes() == 0
    boot.app_running(True)
    boot.check_safe_mode("soft")  # Ctrl-D (or mpremote) while it ran: asked for
    boot.check_safe_mode("hard")  # the app did not run in the boot before
    assert boot.crashes() == 0
    boot.app_running(True)
    boot.app_running(False)  # app.stop(): stopped cleanly
    assert not boot.check_safe_mode("watchdog") and boot.crashes() == 0


def test_power_on_and_healthy_runs_reset_the_count():
    _fresh()
    for _ in range(2):
        boot.app_running(True)
        boot.check_safe_mode("hard")
    assert boot.crashes() == 2
    boot.app_running(True)
    boot.check_safe_mode("power")  # RTC memory is blank after a power cut
    assert boot.crashes() == 0 and not boot.state["safe"]
    assert seam.reset_cause() == "power"  # the host stand-in
    for _ in range(2):
        boot.app_running(True)
        boot.check_safe_mode("hard")
    boot.app_running(True)
    boot.clear_crashes()  # the app ran healthy: still running
    boot.check_safe_mode("hard")
    assert boot.crashes() == 1 and not boot.state["safe"]


def test_an_old_or_damaged_record_reads_as_no_app_running():
    _fresh()
    seam.rtc_memory(b"mimi:2")  # the format before the running mark
    assert boot.crashes() == 2 and not boot.check_safe_mode("hard") and boot.crashes() == 2
    seam.rtc_memory(b"\xff\x00junk")
    assert boot.crashes() == 0 and not boot.check_safe_mode("hard")


def test_flag_file_means_safe_mode_and_off_clears_it():
    _fresh()
    boot.set_safe_flag(True)
    assert boot.safe_flag() and boot.check_safe_mode("soft")
    assert config.BOOT_SAFE_FLAG in boot.state["reason"]
    boot.set_safe_flag(False)
    assert not boot.safe_flag() and not boot.check_safe_mode("soft")
    boot.state["safe"] = False


def test_run_in_safe_mode_stops_before_the_app():
    _fresh()
    boot.set_safe_flag(True)
    assert boot.run() is False and boot.state["safe"]
    from mimi import app

    assert app.init() is False
    boot.set_safe_flag(False)
    boot.state["safe"] = False


def test_run_connects_and_sets_the_clock():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    config.set("wifi_pass", "FAKE-pass")
    assert boot.run() is True
    assert seam.wifi_status()[0] and boot.crashes() == 0  # a power-on


def test_only_a_soft_reset_finds_the_app_s_watchdog_still_armed():
    _fresh()
    for cause in ("power", "hard", "watchdog"):  # each restarts the chip, its watchdog too
        boot.wdt_armed()
        boot.check_safe_mode(cause)
        assert not boot.state["armed"] and not boot._load()[2], cause
    boot.app_running(True)
    boot.wdt_armed()
    for _ in range(2):  # Ctrl-D, then mpremote's soft reset: armed all along
        assert not boot.check_safe_mode("soft")
        assert boot.state["armed"] and boot.crashes() == 0
    seam.rtc_memory(b"mimi:1:1")  # a record from before the mark: not armed, the rest kept
    boot.check_safe_mode("soft")
    assert not boot.state["armed"] and boot.crashes() == 1


def test_after_a_soft_reset_boot_feeds_the_app_s_watchdog_until_the_app_does():
    import machine

    _fresh()
    keep = config.APP_WDT_TIMEOUT_MS
    config.APP_WDT_TIMEOUT_MS = 600
    machine.RESET_REQUESTED = False
    try:
        boot.app_running(True)
        seam.wdt_start(600)  # app.start() started it (the stand-in's watchdog is real)...
        boot.wdt_armed()
        assert boot.run("soft") is False  # ...then Ctrl-D; no WiFi set here: back at once
        assert boot.state["armed"] and boot.state["feeding"]
        seam.sleep_ms(1500)  # 2.5 timeouts at the REPL
        assert not machine.RESET_REQUESTED
        boot.state["feeding"] = False  # what app.start() does: its threads feed it from then on
        seam.sleep_ms(1500)  # nobody does in this test: it fires, as on a board
        assert machine.RESET_REQUESTED
    finally:
        boot.state["feeding"] = False
        machine._wdt = None
        machine.RESET_REQUESTED = False
        config.APP_WDT_TIMEOUT_MS = keep


def test_garbage_in_rtc_memory_counts_as_zero():
    _fresh()
    seam.rtc_memory(b"\x00\xffnot ours")
    assert boot.crashes() == 0
    seam.rtc_memory(b"mimi:x")
    assert boot.crashes() == 0


def _run(keeper, t0, until_ms, step_ms=100):
    t = t0
    while seam.ticks_diff(t, t0) < until_ms:
        keeper.tick(t)
        t = seam.ticks_add(t, step_ms)
    return t


def test_wifi_keeps_trying_with_backoff_and_never_gives_up():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    network.FAIL_CONNECTS = 12  # more than MimiClaw's 10 tries
    t0 = seam.ticks_ms()
    k = boot.NetKeeper(t0)
    t = _run(k, t0, 60000)
    first_minute = k.wifi_attempts
    assert 3 <= first_minute <= 5  # backing off, not a busy loop
    assert k.wifi_backoff_ms > config.BOOT_WIFI_BACKOFF_MIN_MS
    t = _run(k, t, 3600000, 1000)
    assert seam.wifi_status()[0] and k.wifi_attempts == 13
    assert k.wifi_backoff_ms == config.BOOT_WIFI_BACKOFF_MIN_MS  # reset once connected
    network._state["status"] = network.STAT_IDLE  # the link drops
    _run(k, t, 30000)
    assert seam.wifi_status()[0] and k.wifi_attempts == 14


def test_ntp_retries_with_backoff_and_resyncs_daily():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    seam.wifi_connect("mimi-sim-wifi", "", 0)
    ntptime.FAIL = 3
    t0 = seam.ticks_ms()
    k = boot.NetKeeper(t0)
    k.ntp_next_ms = t0  # as if the clock were unset at boot
    t = _run(k, t0, 10 * 60000, 1000)
    assert k.ntp_syncs == 1 and ntptime.FAIL == 0
    t = _run(k, t, 23 * 3600000, 60000)
    assert k.ntp_syncs == 1
    _run(k, t, 2 * 3600000, 60000)
    assert k.ntp_syncs == 2  # a day later


def test_the_bring_up_is_marked_so_a_panic_there_counts():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    seen = []
    real = boot.NetKeeper.tick

    def tick(self, now, ntp=True):
        seen.append(boot._load()[1])  # the mark while WiFi starts
        return real(self, now, ntp)

    boot.NetKeeper.tick = tick
    try:
        assert boot.run() is True
    finally:
        boot.NetKeeper.tick = real
    assert seen and all(seen) and not boot._load()[1]  # marked during, cleared after
    boot.app_running(True)  # a panic in the middle of it would leave the mark: the next boot counts it
    boot.check_safe_mode("hard")
    assert boot.crashes() == 1
    boot.clear_crashes()


def _no_waiting(*a):
    raise AssertionError("boot waited")


def test_boot_returns_at_once_when_the_network_never_comes():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    support.setenv("MIMI_SIM_WIFI", "never")
    network._state["first"] = None
    keep = seam.sleep_ms, seam.wait_ms
    seam.sleep_ms = seam.wait_ms = _no_waiting
    try:
        assert boot.run() is False  # started the attempt, waited for nothing
        k = boot.state["net"]
        assert k.wifi_attempts == 1 and k.connecting is not None and not seam.wifi_status()[0]
        assert k.ntp_syncs == 0  # NTP is the I/O thread's, once WiFi is up
    finally:
        seam.sleep_ms, seam.wait_ms = keep
        support.setenv("MIMI_SIM_WIFI")
    # The I/O thread goes on with the same keeper: the network appears, the link comes up.
    _run(k, seam.ticks_ms(), 2000)
    assert seam.wifi_status()[0] and k.up and k.wifi_attempts == 1
    network._state["first"] = None


def test_boot_never_runs_ntp_even_with_the_link_up():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    seam.wifi_connect("mimi-sim-wifi", "", 0)
    support.setenv("MIMI_SIM_NTP", "never")  # each try would take ntptime.timeout
    try:
        assert boot.run() is True  # the link was up (a soft reset), and the host's clock is set
        k = boot.state["net"]
        assert k.ntp_syncs == 0
    finally:
        support.setenv("MIMI_SIM_NTP")


def test_no_psram_stops_in_safe_mode_naming_the_image():
    _fresh()
    lines = []
    keep = boot.print if hasattr(boot, "print") else None
    boot.print = lambda *a: lines.append(" ".join(str(x) for x in a))
    support.setenv("MIMI_SIM_PSRAM", "0")
    try:
        assert boot.run() is False and boot.state["safe"] and boot.state["reason"] == "no PSRAM"
        from mimi import app

        assert app.init() is False  # nothing allocated, the assistant not started
    finally:
        support.setenv("MIMI_SIM_PSRAM")
        if keep is None:
            del boot.print
        boot.state["safe"] = False
    text = "\n".join(lines)
    assert "SPIRAM_OCT" in text and "N16R8" in text and "cannot run mimi" in text, text
    assert boot.crashes() == 0  # not a crash: the board is what it is


def test_old_micropython_gets_a_warning():
    from mimi import commands, log

    _fresh()
    seen = []
    keep_v, keep_w = seam.version, log.warn
    seam.version = lambda: (1, 25, 0)
    log.warn = lambda tag, fmt, *a: seen.append(fmt % a if a else fmt)
    try:
        assert not boot.check_board()
        assert "status" and "older than 1.26" in commands.status()
    finally:
        seam.version, log.warn = keep_v, keep_w
    assert len(seen) == 1 and "1.25.0 is older than 1.26" in seen[0] and "getaddrinfo" in seen[0], seen
    seen = []
    log.warn = lambda tag, fmt, *a: seen.append(fmt)
    try:
        assert not boot.check_board()
    finally:
        log.warn = keep_w
    assert not seen  # this runtime: no warning (CPython has no version; the unix port is newer)


def test_a_radio_error_of_no_known_name_is_retried_like_any_other():
    # The ESP32 port's RuntimeError("Wifi Unknown Error 0x....") reaches NetKeeper as OSError.
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")
    support.setenv("MIMI_SIM_WIFI", "error")
    try:
        t0 = seam.ticks_ms()
        k = boot.NetKeeper(t0)
        t = _run(k, t0, 60000)
        assert 3 <= k.wifi_attempts <= 5 and not k.up  # backing off, never raising
    finally:
        support.setenv("MIMI_SIM_WIFI")
    _run(k, t, 400000, 1000)
    assert k.up and seam.wifi_status()[0]
