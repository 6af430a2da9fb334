"""The app's two threads: start, stop, Ctrl-C, restarts, watchdog, routing (both runtimes).

The agent here is a simple echo handler (the real one is another part).
"""
import machine
import support

from mimi import app, boot, config, seam

RUNTIMES = ("cpython", "micropython")

_out = []
_saved = {}


Echo = support.Echo


def _setup(factory=Echo, **cfg):
    support.fresh_flash()
    if app.running():
        app.stop()
    app.forget()
    boot.state["safe"] = False
    for k in ("APP_WDT_TIMEOUT_MS", "APP_RESTART_PAUSE_MS", "APP_AGENT_STALL_MS", "BOOT_HEALTHY_MS",
              "APP_RESTARTS_MAX"):
        if k not in _saved:
            _saved[k] = getattr(config, k)
        setattr(config, k, _saved[k])
    config.APP_WDT_TIMEOUT_MS = 0
    config.APP_RESTART_PAUSE_MS = 10
    for k in cfg:
        setattr(config, k, cfg[k])
    del _out[:]
    app.out = lambda *a: _out.append(" ".join(str(x) for x in a))
    app._reset = _fake_reset
    del _resets[:]
    assert app.init(agent_factory=factory)


_resets = []


def _fake_reset(why):
    _resets.append(why)
    app.state["stop"] = True


def _wait(pred, ms=3000):
    t0 = seam.ticks_ms()
    while seam.ticks_diff(seam.ticks_ms(), t0) < ms:
        if pred():
            return True
        seam.sleep_ms(10)
    return pred()


def _ask(text):
    app.state["bus"].inbound.put({"channel": "cli", "chat_id": config.CLI_CHAT_ID, "text": text,
                                  "session": "cli_console"})


def _alive(name):
    return app.state["threads"].get(name, {}).get("alive")


def test_start_runs_both_threads_and_stop_ends_them():
    _setup()
    assert app.start() and app.running()
    assert not app.start()  # already running
    assert _alive("agent") and _alive("io")
    _ask("hello")
    assert _wait(lambda: "\n[mimi] echo: hello" in _out)
    assert app.stop() is True
    assert not app.running() and not _alive("agent") and not _alive("io")
    assert app.start()  # and again
    _ask("again")
    assert _wait(lambda: "\n[mimi] echo: again" in _out)
    assert app.stop()


def test_ctrl_c_in_a_thread_stops_the_whole_app():
    class Interrupted(Echo):
        def run(self, stop):
            raise KeyboardInterrupt

    _setup(Interrupted)
    app.start()
    assert _wait(lambda: not app.running())
    assert not _alive("agent") and not _alive("io")
    assert app.stop() is True


def test_a_failing_loop_is_logged_and_restarted():
    runs = []

    class FailsOnce(Echo):
        def run(self, stop):
            runs.append(1)
            if len(runs) == 1:
                raise RuntimeError("boom")
            Echo.run(self, stop)

    _setup(FailsOnce)
    app.start()
    _ask("still there?")
    assert _wait(lambda: "\n[mimi] echo: still there?" in _out)
    assert app.state["threads"]["agent"]["restarts"] == 1 and _resets == []
    app.stop()


def test_too_many_failures_reset_the_board():
    class AlwaysFails(Echo):
        def run(self, stop):
            raise MemoryError("out of memory")

    _setup(AlwaysFails)
    # The window counted by the tick clock alone: in a long run another module's leftover
    # thread may move the stand-in's wall clock by years, which elapsed_ms would follow.
    real = seam.elapsed_ms
    seam.elapsed_ms = lambda m, now=None: seam.ticks_diff(seam.ticks_ms() if now is None else now, m[0])
    try:
        app.start()
        assert _wait(lambda: _resets != [], 10000)
        assert "agent thread failed %d times" % config.APP_RESTARTS_MAX in _resets[0]
        app.stop()
    finally:
        seam.elapsed_ms = real


def test_a_thread_that_dies_is_started_again_by_the_io_thread():
    runs = []

    class Dies(Echo):
        def run(self, stop):
            runs.append(1)
            if len(runs) == 1:
                raise SystemExit  # not an Exception: the thread itself ends
            Echo.run(self, stop)

    _setup(Dies)
    app.start()
    _ask("back?")
    assert _wait(lambda: "\n[mimi] echo: back?" in _out)
    assert len(runs) == 2
    app.stop()


def test_watchdog_is_fed_only_while_the_agent_makes_progress():
    fed = []
    real = seam.wdt_feed
    seam.wdt_feed = lambda: fed.append(1)
    try:
        _setup(APP_AGENT_STALL_MS=1000)
        app.state["threads"]["agent"] = {"alive": True, "restarts": 0}
        app.state["started_ms"] = seam.ticks_ms()
        now = seam.ticks_ms()
        app._beat["agent"] = now
        app.watch(now)
        assert len(fed) == 1
        app.watch(seam.ticks_add(now, 999))
        assert len(fed) == 2
        app.watch(seam.ticks_add(now, 1500))  # stuck in a turn: no food
        app.watch(seam.ticks_add(now, 5000))
        assert len(fed) == 2
        app._beat["agent"] = seam.ticks_add(now, 5000)  # it moved again
        app.watch(seam.ticks_add(now, 5001))
        assert len(fed) == 3
    finally:
        seam.wdt_feed = real
        app.state["threads"] = {}


def test_a_hung_agent_lets_the_hardware_watchdog_reset_the_board():
    class Hangs(Echo):
        def handle(self, msg):
            while not app.state["stop"]:
                seam.sleep_ms(20)

    _setup(Hangs, APP_AGENT_STALL_MS=300, APP_WDT_TIMEOUT_MS=700)
    machine.RESET_REQUESTED = False
    try:
        app.start()
        seam.sleep_ms(1000)
        assert not machine.RESET_REQUESTED  # fed while idle
        _ask("hang")
        assert _wait(lambda: machine.RESET_REQUESTED, 4000)
    finally:
        app.stop()
        machine._wdt = None
        machine.RESET_REQUESTED = False
        app.state["wdt"] = False


def test_a_stopped_app_keeps_the_watchdog_fed():
    _setup(APP_WDT_TIMEOUT_MS=600)
    machine.RESET_REQUESTED = False
    try:
        app.start()
        assert boot._load()[2]  # armed: the boot after a soft reset keeps feeding it
        seam.sleep_ms(900)
        app.stop()
        seam.sleep_ms(1500)  # the watchdog cannot be stopped: the idle feeder feeds it
        assert not machine.RESET_REQUESTED
    finally:
        machine._wdt = None
        machine.RESET_REQUESTED = False
        app.state["wdt"] = False


def test_running_healthy_clears_the_crash_count():
    _setup(BOOT_HEALTHY_MS=200)
    for _ in range(2):
        boot.app_running(True)
        boot.check_safe_mode("hard")
    assert boot.crashes() == 2
    app.start()
    assert _wait(lambda: boot.crashes() == 0)
    app.stop()


def test_a_reset_counts_as_a_crash_only_while_the_app_runs():
    _setup()
    app.start()
    boot.check_safe_mode("watchdog")  # as if the board reset now
    assert boot.crashes() == 1
    app.start()
    app.stop()  # a clean stop
    boot.check_safe_mode("hard")
    assert boot.crashes() == 1
    boot.clear_crashes()


def test_route_heartbeat_cron_cli_and_unknown():
    _setup()
    tg = app.state["telegram"]
    assert app.route({"channel": "heartbeat", "chat_id": "42", "text": "HEARTBEAT_OK", "kind": "text"})
    assert app.route({"channel": "heartbeat", "chat_id": "42", "text": "", "kind": "typing"})
    assert tg.outq == [] and tg.typing == {}
    assert app.route({"channel": "heartbeat", "chat_id": "42", "text": "The plants need water.", "kind": "text"})
    assert tg.outq[-1][:2] == ["42", "The plants need water."]
    assert app.route({"channel": "cron", "chat_id": "-1005", "text": "briefing", "kind": "text"})
    assert tg.outq[-1][:2] == ["-1005", "briefing"]
    assert app.route({"channel": "cron", "chat_id": config.CLI_CHAT_ID, "text": "to the console", "kind": "text"})
    assert "\n[mimi] to the console" in _out
    assert app.route({"channel": "nowhere", "chat_id": "1", "text": "x", "kind": "text"})


def test_the_agent_stand_in_answers_while_no_agent_is_installed():
    _setup()
    app._agent_factory[0] = None
    a = app.make_agent()
    a.handle({"channel": "cli", "chat_id": "console", "text": "hi"})
    m = app.state["bus"].outbound.get(0)
    if type(a).__name__ == "_NoAgent":
        assert "not installed" in m["text"]


def test_cli_ask_while_running_goes_through_both_threads():
    from mimi import cli

    _setup()
    lines = []
    cli.out = lambda *a: lines.append(" ".join(str(x) for x in a))
    app.start()
    try:
        cli.ask("ping")
    finally:
        app.stop()
    assert lines == ["echo: ping"]


def test_ctrl_c_during_boot_skips_the_app_until_started_by_hand():
    _setup()
    boot.state["safe"] = True
    boot.state["reason"] = "Ctrl-C during boot"
    app.forget()
    assert app.init() is False
    assert app.start() is True  # by hand: it runs after all
    app.stop()
    assert not boot.state["safe"]


def test_stop_during_a_long_turn_and_no_second_agent_thread():
    class Slow(Echo):
        def handle(self, msg):
            seam.sleep_ms(800)
            Echo.handle(self, msg)

    _setup(Slow)
    app.start()
    _ask("slow one")
    seam.sleep_ms(100)
    assert app.stop(100) is False  # the turn is still running
    assert not app.running()
    assert app.start() is False  # not while the old agent thread lives
    assert _wait(lambda: not _alive("agent"), 3000)
    assert app.start() is True
    app.stop()


def test_init_makes_what_turns_keep_before_the_first_turn():
    # made in the first turn they would sit in the middle of the free heap (loop.warm)
    _setup()
    import mimi.llm as llm
    from mimi.hw import datasheets, retrieval

    app.forget()
    llm.reset()
    del datasheets._idx[:]
    del retrieval._buf[:]
    assert app.init(agent_factory=Echo)
    assert llm._current is not None and llm._buf is not None
    assert datasheets._idx and retrieval._buf
    assert app.state["context"].last.get("rules", 0) > 0  # one system prompt was built


def test_the_portal_beside_the_app_pauses_the_web_app_and_wifi_back_resumes_it():
    # MicroPython runs one asyncio loop at a time: the web app's stops before the setup
    # portal's starts (WiFi down for minutes), and starts again once WiFi is back.
    from mimi.web import portal, server

    calls = []
    saved = (server.stop, server.start, portal.start, dict(portal.state), app.state["web"])

    class Net:
        def __init__(self, down):
            self.down = down

        def down_ms(self, now):
            return self.down

    def fake_portal_start(**kw):
        calls.append("portal")
        portal.state["running"] = True
        return True
    try:
        server.stop = lambda *a: calls.append("web stop") or True
        server.start = lambda: calls.append("web start") or True
        portal.start = fake_portal_start
        portal.state["running"] = False
        app.state["web"] = object()
        app._portal_beside(Net(200000), 0)
        app._portal_beside(Net(210000), 0)  # running already: nothing more
        assert calls == ["web stop", "portal"]
        app._web_resume()  # the portal still open: the web app waits
        assert calls == ["web stop", "portal"]
        portal.state["running"] = False  # WiFi back, the portal closed by itself
        app._web_resume()
        assert calls == ["web stop", "portal", "web start"] and not app._web_paused[0]
    finally:
        server.stop, server.start, portal.start = saved[:3]
        portal.state.clear()
        portal.state.update(saved[3])
        app.state["web"] = saved[4]
        app._web_paused[0] = False
