"""The application: ``init()`` allocates once, ``start()`` starts the two threads,
``stop()`` stops them. ``/main.py`` calls ``init()`` then ``start()`` and returns, so the
REPL on the serial console stays live.

Threads (../shared/DESIGN.md, "Threads"; stack sizes in README "On the board"):
- agent thread (``config.APP_THREAD_STACK_BYTES``): ``mimi.agent.loop.Agent(bus,
  context).run(stop)``, one inbound message at a time.
- I/O thread (``config.APP_THREAD_STACK_BYTES``): ``_io_loop()``: WiFi/NTP upkeep
  (``boot.NetKeeper``), Telegram polling and sending, routing outbound messages
  (``route``), cron, heartbeat and rules (``mimi.rules.tick``) ticks, MQTT and Home Assistant
  (``mimi.net.mqtt``, ``mimi.net.hass``: only while ``mqtt_url`` is set), and the watchdog
  (``watch``). Nothing in it
  blocks long: the Telegram long poll is an ``http.Pending`` checked each pass, and the
  loop waits ``_APP_IO_WAIT_MS`` on the outbound queue when idle.
MicroPython's threads share one interpreter lock (blocking socket calls release it), so
this buys responsiveness, not parallel CPU.

Supervision: a thread whose loop raises is logged and its loop restarted; more than
``APP_RESTARTS_MAX`` restarts within ``_APP_RESTART_WINDOW_MS`` resets the board. The
I/O thread feeds the hardware watchdog only while the agent thread is alive and shows
progress (each pass of its loop asks ``stop()``) at least every ``APP_AGENT_STALL_MS``;
if the I/O thread itself hangs or dies, nobody feeds it and the board resets. Ctrl-C
that reaches a thread stops the app (``stop()``); at the REPL, ``cli.run()`` and the host
launcher turn Ctrl-C into ``stop()``.

Routing (``route``): ``telegram`` -> the Telegram channel; ``feishu`` (and any message
to a ``fs_`` chat id: a job's, the owner's) -> the Feishu channel; ``gateway`` (and any
``ws_`` chat id) -> the web app's gateway (``mimi.web``: a third thread, only while
``web_password`` is set); ``cli`` -> the serial
console; ``cron`` -> Telegram for a numeric chat id, else the console; ``heartbeat`` ->
the owner on Telegram (or Feishu), except typing/notes and a ``HEARTBEAT_OK`` reply,
which are dropped. The Feishu channel exists only while ``feishu_app_id`` is set at
``init`` (its module and buffers cost RAM). The console (the ``cli`` channel's outbound side) is a few lines of ``route``:
while ``mimi.cli.ask`` waits (``asking``) its messages are kept in ``inbox`` for it,
otherwise a text is printed at once (a cron job reporting to the console).
"""
from micropython import const

from mimi import bus, config, log, seam

# Tunables (config.py holds those shared by several modules and the settings).
_APP_STOP_WAIT_MS = const(8000)
_APP_RESTART_WINDOW_MS = const(600000)
_APP_IO_WAIT_MS = const(20)  # the I/O loop waits this long for outbound messages (= latency)


state = {
    "bus": None, "context": None, "started_ms": None, "running": False, "stop": False,
    "healthy": False, "wdt": False, "telegram": None, "feishu": None, "cron": None, "heartbeat": None,
    "net": None, "threads": {}, "started": None, "web": None, "mqtt": None,
}
_lock = seam.allocate_lock()
_beat = {"agent": 0}  # ticks_ms when the agent thread last showed progress
_agent_factory = [None]  # tests: fn(bus) -> object with run(stop) and handle(msg)
inbox = []  # cli messages kept for ``cli.ask`` (at most 32; list operations are atomic)
asking = [False]
out = print  # where console replies are printed (tests collect them)


def register_tools():
    """Register the app's tools (``registry.load_app``: their modules are imported at a
    tool's first call, or now when the package runs from ``.py`` files). A failure is
    logged: the tools not imported yet are imported at their first call."""
    from mimi.tools import registry

    try:
        registry.load_app()
    except Exception as e:  # noqa: BLE001 - includes MemoryError: the agent works without them
        seam.collect()
        log.exc("app", "tools", e)


def init(agent_factory=None):
    """Allocate what the app needs (once) and register the tools (``register_tools``).
    Returns True when it can start (False in safe mode: nothing is allocated then). ``agent_factory(bus)``:
    tests put their own agent here.

    Large buffers come first (before the heap fragments), then every module the threads
    run is loaded, here in the main thread: compiling a module needs more stack than the
    threads are given, and a contiguous heap.
    """
    from mimi import boot

    if boot.state["safe"]:
        log.warn("app", "safe: %s", boot.state["reason"])
        return False
    if agent_factory is not None:
        _agent_factory[0] = agent_factory
    if state["bus"] is None:
        seam.collect()
        from mimi import llm
        from mimi.agent.context import Context

        llm.init()  # the largest block (the reply buffer) first
        state["context"] = Context(config.AGENT_CONTEXT_BYTES)
        bufs = bytearray(config.TG_POLL_BUF_BYTES), bytearray(config.TG_SEND_BUF_BYTES)
        from mimi import services  # noqa: F401
        from mimi.agent import loop  # noqa: F401
        from mimi.channels.telegram import Telegram
        from mimi.net import http  # noqa: F401
        from mimi.storage import cronjobs  # noqa: F401

        for name in config.APP_PRELOAD:  # what a turn would load on first use, into a fuller heap
            try:
                __import__(name)
            except Exception as e:  # noqa: BLE001 - left out of the image (mimi.hw), or no room: a turn loads it
                seam.collect()
                log.warn("app", "%s: %r", name, e)
            seam.collect()
        b = state["bus"] = bus.Bus(config.BUS_INBOUND_MAX, config.BUS_OUTBOUND_MAX)
        state["telegram"] = Telegram(b, bufs=bufs)
        if config.get("feishu_app_id"):  # its modules and 18 KB of buffers only when set up
            from mimi.channels import feishu

            state["feishu"] = feishu.init(b)
        if config.get("mqtt_url"):  # MQTT and Home Assistant (issue 18): loaded only when set up
            try:
                from mimi.net import hass, mqtt
                from mimi.tools import mqtt_tools

                mqtt.init()
                hass.start()
                mqtt_tools.register_all()
                state["mqtt"] = mqtt
            except ValueError as e:  # a malformed mqtt_url: the rest runs without MQTT
                log.warn("app", "mqtt_url: %s", e)
            except ImportError as e:  # no umqtt on this board (an old deploy): deploy again, or mip install umqtt.simple
                log.error("app", "mqtt: %s: tools/flash.sh deploy puts umqtt in /lib", e)
        state["heartbeat"] = services.Heartbeat(b)
        if config.get("web_password"):  # the web app and the gateway: a third thread (mimi.web)
            try:
                from mimi.web import server

                state["web"] = server.init(b)
            except Exception as e:  # noqa: BLE001 - includes MemoryError: the assistant works without it
                seam.collect()
                log.exc("app", "web", e)
        register_tools()
        try:
            loop.warm(state["context"])  # what turns keep, made now: it stays out of their way
        except Exception as e:  # noqa: BLE001 - includes MemoryError: the first turn makes them then
            log.exc("app", "warm", e)
        seam.collect()
        log.info("app", "heap %s", seam.mem_free() or "n/a")
    return True


def make_agent():
    """The agent object for the bus: the test factory, or ``mimi.agent.loop.Agent``."""
    if _agent_factory[0] is not None:
        return _agent_factory[0](state["bus"])
    from mimi.agent.loop import Agent

    return Agent(state["bus"], state["context"])


def heartbeat():
    """The heartbeat service (``init()`` makes it; None in safe mode)."""
    init()
    return state["heartbeat"]


def running():
    return state["running"]


def forget():
    """Drop the allocated objects so the next ``init()`` builds them afresh from the
    settings (tests; also after changing buffer sizes). Only while stopped."""
    if state["running"]:
        raise RuntimeError("running")
    for k in ("bus", "context", "telegram", "feishu", "cron", "heartbeat", "net", "web", "mqtt"):
        state[k] = None
    from mimi import rules

    rules.forget()
    state["stop"] = False
    state["threads"] = {}
    _agent_factory[0] = None


# -- threads ------------------------------------------------------------------------------


def _stopping():
    """The agent's ``stop()``: asked at each pass of its loop, so it also shows progress."""
    _beat["agent"] = seam.ticks_ms()
    return state["stop"]


def _may_restart(t, now):
    """Count a restart of thread record ``t``; False when there were too many in the window."""
    lst = t.setdefault("times", [])  # moments of its restarts, oldest first (weeks apart, maybe)
    while lst and seam.elapsed_ms(lst[0], now) >= _APP_RESTART_WINDOW_MS:
        lst.pop(0)
    m = seam.moment()
    m[0] = now
    lst.append(m)
    return len(lst) <= config.APP_RESTARTS_MAX


def _reset(why):
    """Reset the board after a failure (tests replace this). The boot counts as a crash."""
    log.error("app", "reset: %s", why)
    if state["telegram"]:
        state["telegram"].save_offset(True)
    seam.reset()


def restart():
    """A deliberate reset (the console's ``restart``): stop cleanly (the Telegram offset is
    kept), do not count it as a crash, reset."""
    from mimi import boot

    stop()
    boot.clear_crashes()
    seam.reset()


def _thread(name):
    """Run the ``name`` thread's loop until the app stops, restarting it when it raises."""
    t = state["threads"][name]
    try:
        while not state["stop"]:
            try:
                if name == "io":
                    _io_loop()
                else:
                    a = make_agent()
                    _beat["agent"] = seam.ticks_ms()
                    a.run(_stopping)
                if state["stop"]:
                    break
                log.warn("app", "%s ended", name)
            except KeyboardInterrupt:
                log.info("app", "Ctrl-C %s", name)
                state["stop"] = True
                break
            except Exception as e:  # noqa: BLE001 - a failing loop is restarted, never left dead
                log.exc("app", name, e)
            seam.collect()
            if not _may_restart(t, seam.ticks_ms()):
                _reset("%s thread failed %d times" % (name, config.APP_RESTARTS_MAX))
                break
            t["restarts"] += 1
            seam.wait_ms(config.APP_RESTART_PAUSE_MS)
    finally:
        t["alive"] = False
        if state["stop"] and not _alive():
            _stopped()  # the last thread out (also after Ctrl-C in a thread); no log here


def _alive():
    for t in state["threads"].values():
        if t.get("alive"):
            return True
    return False


def _stopped():
    """Both threads ended: the app is stopped (cleanly: a reset now is no crash). A started
    watchdog cannot be stopped: a small thread keeps feeding it until the app starts again."""
    from mimi import boot

    boot.app_running(False)
    with _lock:
        state["running"] = False
        if state["wdt"]:
            boot.keep_fed()


def _spawn(name):
    t = state["threads"].get(name) or {"restarts": 0}
    t["alive"] = True
    state["threads"][name] = t
    seam.start_thread(_thread, (name,), seam.thread_stack_bytes(config.APP_THREAD_STACK_BYTES))


def start():
    """Start the agent and I/O threads (and the watchdog). False when already running, or
    while a thread of the last run is still finishing its step."""
    from mimi import boot

    if state["running"] or _alive():
        return False
    if boot.state["reason"] == "Ctrl-C during boot":
        boot.state["safe"] = False  # started by hand after all
    if state["bus"] is None and not init():
        return False
    state["stop"] = state["healthy"] = False
    state["running"] = True
    boot.app_running(True)  # an unasked-for reset from now on is a crash (boot.check_safe_mode)
    state["started_ms"] = _beat["agent"] = seam.ticks_ms()
    state["started"] = seam.moment()  # uptime, past the 6 days ticks_diff holds
    _spawn("agent")
    _spawn("io")
    if state["web"] is not None:  # the web app and the gateway: a third thread (mimi.web.server)
        from mimi.web import server

        server.start()
    if config.APP_WDT_TIMEOUT_MS and not state["wdt"]:
        try:
            seam.wdt_start(config.APP_WDT_TIMEOUT_MS)
            state["wdt"] = True
            boot.wdt_armed()  # it outlives a soft reset: the next boot keeps feeding it
        except Exception as e:  # noqa: BLE001 - a port without a watchdog still runs
            log.warn("app", "no wdt: %s", e)
    boot.state["feeding"] = False  # boot's feeder, if any: the app's threads feed it now
    log.info("app", "started")
    return True


def stop(timeout_ms=None):
    """Stop both threads; wait up to ``timeout_ms`` (default ``_APP_STOP_WAIT_MS``).

    Returns True when both ended. The hardware watchdog cannot be stopped once started,
    so while the app is stopped a small thread keeps feeding it.
    """
    if not state["running"]:
        from mimi import boot

        boot.app_running(False)  # also Ctrl-C while /main.py was starting it
        return True
    state["stop"] = True
    if state["web"] is not None:
        from mimi.web import server

        server.stop()
    t0 = seam.ticks_ms()
    while _alive() and seam.ticks_diff(seam.ticks_ms(), t0) < (timeout_ms or _APP_STOP_WAIT_MS):
        seam.wait_ms(20)
    _stopped()
    done = not _alive()
    log.info("app", "stopped" if done else "stopping")
    return done


def _io_loop():
    """The I/O thread's loop, until the app stops (``state["stop"]``)."""
    from mimi import boot
    from mimi.net import http
    from mimi import rules
    from mimi.services import Cron

    net = state["net"] = state["net"] or boot.state["net"] or boot.NetKeeper()
    cron = state["cron"] = state["cron"] or Cron(state["bus"])
    hb = heartbeat()
    tg = state["telegram"]
    fs = state["feishu"]
    mq = state["mqtt"]  # mimi.net.mqtt, when mqtt_url is set
    if mq is not None:
        from mimi.net import hass
    q = state["bus"].outbound
    held = None  # an outbound message its channel had no room for yet
    try:
        while not state["stop"]:
            now = seam.ticks_ms()
            net.tick(now)
            if net.down_ms(now) >= config.PORTAL_WIFI_DOWN_MS and seam.wifi_needed():
                _portal_beside(net, now)
            elif _web_paused[0] and net.down_ms(now) == 0:
                _web_resume()
            busy = tg.tick(now)
            if fs is not None:
                busy = fs.tick(now) or busy
            if mq is not None:
                busy = mq.tick(now) or busy
                hass.tick(now)
            for _ in range(8):
                held = held or q.get(0)
                if held is None or not route(held):
                    break
                held = None
            cron.tick(now)
            hb.tick(now)
            rules.tick(now, state["bus"])  # automations (/data/rules.json): pins, sensors, times, MQTT; no LLM
            http.sweep()  # kept connections idle too long (each TLS one holds ~25 KB of internal RAM)
            watch(now)
            if held is not None:
                seam.wait_ms(_APP_IO_WAIT_MS)
            elif not busy:
                held = q.get(_APP_IO_WAIT_MS)
                if held is not None and route(held):
                    held = None
    finally:
        tg.stop()
        if fs is not None:
            fs.stop()
        if mq is not None:
            mq.stop()  # "offline"; the next start connects again
        http.sweep(0)


_web_paused = [False]  # the web app stopped for the setup portal (one asyncio loop at a time)


def _portal_beside(net, now):
    """WiFi down for minutes: open the setup portal beside the app (issue 16). MicroPython
    runs one asyncio loop at a time, so the web app's (mimi.web.server) stops first; it
    starts again once WiFi is back and the portal has closed (``_web_resume``)."""
    from mimi.web import portal

    if portal.state["running"]:
        return
    if state["web"] is not None and not _web_paused[0]:
        from mimi.web import server

        _web_paused[0] = True
        server.stop()
    portal.start(reason=portal.wanted(net, now))  # nothing when it just failed


def _web_resume():
    from mimi.web import portal, server

    if not portal.state["running"]:
        _web_paused[0] = False
        server.start()


def route(msg):
    """Hand an outbound message to its channel; False when the channel has no room yet."""
    from mimi import services

    ch = msg.get("channel")
    cid = str(msg.get("chat_id", ""))
    if ch == "heartbeat":  # the owner gets a report, not the OK, the typing or notes
        if msg.get("kind", "text") != "text" or services.is_ok(msg.get("text")):
            return True
        ch = "telegram"
    elif ch == "cron":
        ch = "telegram" if cid.partition(":")[0].lstrip("-").isdigit() else "cli"  # "chat:topic" too
    if cid[:3] == "fs_":  # a Feishu chat, whoever named it (a job, the owner, send_message)
        ch = "feishu"
    elif cid[:3] == "ws_":  # a chat of the LAN gateway or the web app (mimi.web.gateway)
        ch = "gateway"
    if ch == "gateway":
        if state["web"] is None:
            log.warn("app", "no web app: %s", cid)
            return True
        from mimi.web import server

        return server.deliver(msg)
    if ch == "feishu":
        if state["feishu"] is None:
            log.warn("app", "no feishu: %s", cid)
            return True
        return state["feishu"].deliver(msg)
    if ch == "telegram":
        return state["telegram"].deliver(msg)
    if ch == "cli":
        if asking[0]:
            if len(inbox) < 32:
                inbox.append(msg)
        elif msg.get("kind") == "text":  # shown, not obeyed: no escape sequence from a chat, no key
            from mimi import guard

            out("\n[mimi] %s" % log.visible(guard.redact(msg.get("text", ""))))
        return True
    log.warn("app", "dropped %s", ch)
    return True


def watch(now):
    """The I/O thread's supervision step: restart a dead agent thread, feed the watchdog
    while the agent makes progress, and clear the crash count once healthy (and confirm
    an update on trial: ``mimi.ota.confirm``)."""
    t = state["threads"].get("agent") or {}
    if state["stop"]:
        return
    if not t.get("alive"):
        if _may_restart(t, now):
            log.error("app", "agent died")
            t["restarts"] = t.get("restarts", 0) + 1
            _beat["agent"] = now
            _spawn("agent")
        else:
            _reset("%s thread failed %d times" % ("agent", config.APP_RESTARTS_MAX))
        return
    if seam.ticks_diff(now, _beat["agent"]) >= config.APP_AGENT_STALL_MS:
        if not t.get("stall"):
            log.error("app", "agent hung")  # no food: the watchdog resets the board
            t["stall"] = True
        return
    t["stall"] = False
    seam.wdt_feed()
    if not state["healthy"] and seam.ticks_diff(now, state["started_ms"]) >= config.BOOT_HEALTHY_MS:
        from mimi import boot

        state["healthy"] = True
        boot.clear_crashes()
        log.info("app", "healthy")
        try:
            from mimi import ota

            ota.confirm()  # an update on trial stays (mimi_slot; docs/updates.md)
        except Exception as e:  # noqa: BLE001 - no NVS, no mimi_slot.py (an older deploy)
            log.warn("app", "update confirm: %r", e)


def handle_inline(msg):
    """Run one message through the agent in the calling thread (``cli.ask`` while the app
    is stopped), then ``route`` what it sent: the console's part lands in ``inbox``
    (while ``asking``), the rest waits in its channel's queue for the next start."""
    init()
    make_agent().handle(msg)
    q = state["bus"].outbound
    m = q.get(0)
    while m is not None:
        route(m)
        m = q.get(0)
