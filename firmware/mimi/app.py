"""The application: ``init()`` allocates once, ``start()`` starts the two threads,
``stop()`` stops them. ``/main.py`` calls ``init()`` then ``start()`` and returns, so the
REPL on the serial console stays live.

Threads (../shared/DESIGN.md, "Threads"; stack sizes in README "On the board"):
- agent thread (``THREAD_AGENT_STACK_BYTES``): ``mimi.agent.loop.Agent(bus,
  context).run(stop)``, one inbound message at a time.
- I/O thread (``THREAD_IO_STACK_BYTES``): WiFi/NTP upkeep, Telegram polling and sending,
  routing outbound messages, cron and heartbeat ticks, and the watchdog.
MicroPython's threads share one interpreter lock (blocking socket calls release it), so
this buys responsiveness, not parallel CPU.

Supervision: a thread whose loop raises is logged and its loop restarted; more than
``APP_RESTARTS_MAX`` restarts within ``APP_RESTART_WINDOW_MS`` resets the board. The
I/O thread feeds the hardware watchdog only while the agent thread is alive and shows
activity (a bus ``get`` or ``send``) at least every ``APP_AGENT_STALL_MS``; if the I/O
thread itself hangs or dies, nobody feeds it and the board resets. Ctrl-C that reaches a
thread stops the app (``stop()``); at the REPL, ``cli.run()`` and the host launcher turn
Ctrl-C into ``stop()``.

The I/O thread's loop and the outbound routing are in ``mimi.ioloop``:
``telegram`` -> the Telegram channel; ``cli`` -> the console;
``cron`` -> Telegram for a numeric chat id, else the console; ``heartbeat`` -> the
owner on Telegram, except a ``HEARTBEAT_OK`` reply and typing/notes, which are dropped.
"""
from mimi import bus, config, log, seam

TAG = "app"

state = {
    "bus": None, "context": None, "started_ms": None, "running": False, "stop": False,
    "healthy": False, "wdt": False, "telegram": None, "cron": None, "heartbeat": None,
    "pairing": None, "net": None, "agent": None, "tools": False, "threads": {}, "feeder": False,
}
_lock = seam.allocate_lock()
_beat = {"agent": 0}  # ticks_ms of the agent thread's last bus activity
_restarts = {"agent": [], "io": []}
_agent_factory = [None]  # tests: fn(bus) -> object with run(stop) and handle(msg)


class _WatchedQueue(bus.Queue):
    """The inbound queue; each ``get`` by the agent shows it is alive."""

    def get(self, timeout_ms=0):
        _beat["agent"] = seam.ticks_ms()
        item = bus.Queue.get(self, timeout_ms)
        _beat["agent"] = seam.ticks_ms()
        return item


class _WatchedBus(bus.Bus):
    """The bus the app runs on: ``send`` (the agent's replies) also counts as activity."""

    def __init__(self, inbound_max, outbound_max):
        bus.Bus.__init__(self, 1, outbound_max)
        self.inbound = _WatchedQueue(inbound_max)

    def send(self, channel, chat_id, text, kind="text", timeout_ms=5000):
        _beat["agent"] = seam.ticks_ms()
        return bus.Bus.send(self, channel, chat_id, text, kind, timeout_ms)


def _alloc():
    """Allocate the long-lived objects once, large buffers first (before the heap fragments),
    then load every module the threads run, here in the main thread: compiling a module
    needs more stack than the threads are given, and a contiguous heap."""
    if state["bus"] is not None:
        return
    seam.collect()
    try:
        from mimi.agent.context import Context
        state["context"] = Context(config.AGENT_CONTEXT_BYTES)
    except ImportError:
        state["context"] = None
    poll_buf = bytearray(config.TG_POLL_BUF_BYTES)
    send_buf = bytearray(config.TG_SEND_BUF_BYTES)
    from mimi import boot  # noqa: F401
    from mimi.channels import access, console  # noqa: F401
    from mimi.channels.telegram import Telegram
    from mimi.channels.tgapi import BotApi
    from mimi.net import http  # noqa: F401
    from mimi import ioloop  # noqa: F401
    from mimi.services import cron, heartbeat as _hb  # noqa: F401
    from mimi.storage import sessions  # noqa: F401
    try:
        from mimi.agent import loop  # noqa: F401
    except ImportError:
        pass

    state["bus"] = _WatchedBus(config.BUS_INBOUND_MAX, config.BUS_OUTBOUND_MAX)
    state["pairing"] = access.Pairing()
    state["telegram"] = Telegram(state["bus"], api=BotApi(poll_buf, send_buf), pairing=state["pairing"])
    seam.collect()


def init(agent_factory=None):
    """Allocate what the app needs and register the tools. Returns True when it can start
    (False in safe mode). ``agent_factory(bus)``: tests put their own agent here."""
    from mimi import boot

    if boot.state["safe"]:
        log.warn(TAG, "safe mode (%s): the assistant is not started", boot.state["reason"])
        return False
    if agent_factory is not None:
        _agent_factory[0] = agent_factory
    _alloc()
    register_tools()
    log.info(TAG, "mimi on %s, free heap %s", seam.describe(), seam.mem_free())
    return True


def register_tools():
    """Register every tool module named in ``APP_TOOL_MODULES`` that is installed (once)."""
    if state["tools"]:
        return
    state["tools"] = True
    for name in config.APP_TOOL_MODULES:
        try:
            mod = __import__("mimi.tools." + name, None, None, ("register_all",))
        except ImportError as e:
            log.debug(TAG, "tools %s not installed (%s)", name, e)
            continue
        except MemoryError:
            seam.collect()
            log.error(TAG, "tools %s: out of memory while loading; the agent works without them", name)
            continue
        try:
            mod.register_all()
        except Exception as e:  # noqa: BLE001 - one broken tool module must not stop the rest
            log.exc(TAG, "tools %s failed to register" % name, e)


class _NoAgent:
    """Stands in while ``mimi.agent`` is not installed: every message gets a notice."""

    def __init__(self, b):
        self.bus = b

    def handle(self, msg):
        self.bus.send(msg.get("channel"), msg.get("chat_id"),
                      "mimi's agent is not installed on this board (mimi/agent/loop.py is missing).")

    def run(self, stop):
        while not stop():
            m = self.bus.inbound.get(500)
            if m is not None:
                self.handle(m)


def make_agent():
    """The agent object for the bus: the test factory, ``mimi.agent.loop.Agent``, or a stand-in."""
    if _agent_factory[0] is not None:
        return _agent_factory[0](state["bus"])
    try:
        from mimi.agent.loop import Agent
    except ImportError as e:
        log.warn(TAG, "no agent (%s): messages get a notice", e)
        return _NoAgent(state["bus"])
    return Agent(state["bus"], state["context"])


def pairing():
    _alloc()
    return state["pairing"]


def heartbeat():
    """The heartbeat service (made on first use)."""
    if state["heartbeat"] is None:
        _alloc()
        from mimi.services.heartbeat import Heartbeat
        state["heartbeat"] = Heartbeat(state["bus"])
    return state["heartbeat"]


def running():
    return state["running"]


def forget():
    """Drop the allocated objects so the next ``init()`` builds them afresh from the
    settings (tests; also after changing buffer sizes). Only while stopped."""
    if state["running"]:
        raise RuntimeError("stop the app first")
    for k in ("bus", "context", "telegram", "cron", "heartbeat", "pairing", "net", "agent"):
        state[k] = None
    state["tools"] = False
    state["threads"] = {}
    state["stop"] = False
    _agent_factory[0] = None
    for k in _restarts:
        del _restarts[k][:]


def _stopping():
    return state["stop"]


# -- threads ------------------------------------------------------------------------------


def _may_restart(name, now):
    lst = _restarts[name]
    lst[:] = [t for t in lst if seam.ticks_diff(now, t) < config.APP_RESTART_WINDOW_MS]
    if len(lst) >= config.APP_RESTARTS_MAX:
        return False
    lst.append(now)
    return True


def _reset(why):
    """Reset the board after a failure (tests replace this). The boot counts as a crash."""
    log.error(TAG, "resetting the board: %s", why)
    try:
        state["telegram"].save_offset(force=True)
    except Exception:  # noqa: BLE001
        pass
    seam.reset()


def restart():
    """A deliberate reset (the console's ``restart``): stop cleanly (the Telegram offset is
    kept), do not count it as a crash, reset."""
    from mimi import boot

    stop()
    boot.clear_crashes()
    seam.reset()


def _thread(name, body):
    """Run ``body()`` until the app stops, restarting it when it raises."""
    t = state["threads"][name]
    try:
        while not state["stop"]:
            try:
                body()
                if state["stop"]:
                    break
                log.warn(TAG, "the %s loop ended by itself; restarting it", name)
            except KeyboardInterrupt:
                log.info(TAG, "Ctrl-C in the %s thread: stopping the app", name)
                state["stop"] = True
                break
            except Exception as e:  # noqa: BLE001 - a failing loop is restarted, never left dead
                log.exc(TAG, "the %s thread failed" % name, e)
            seam.collect()
            if not _may_restart(name, seam.ticks_ms()):
                _reset("the %s thread failed %d times within %d min" % (
                    name, config.APP_RESTARTS_MAX, config.APP_RESTART_WINDOW_MS // 60000))
                break
            t["restarts"] += 1
            _sleep_unless_stopped(config.APP_RESTART_PAUSE_MS)
    finally:
        t["alive"] = False
        if state["stop"] and not any(x.get("alive") for x in state["threads"].values()):
            _stopped()


def _stopped():
    """Both threads ended: the app is stopped. Keeps feeding a started watchdog (it
    cannot be stopped) until the app starts again."""
    with _lock:
        state["running"] = False
        if state["wdt"] and not state["feeder"]:
            state["feeder"] = True
            seam.start_thread(_idle_feeder, (), 4096)


def _sleep_unless_stopped(ms):
    t0 = seam.ticks_ms()
    while not state["stop"] and seam.ticks_diff(seam.ticks_ms(), t0) < ms:
        seam.sleep_ms(50)


def _agent_body():
    a = make_agent()
    state["agent"] = a
    _beat["agent"] = seam.ticks_ms()
    a.run(_stopping)


def _io_body():
    from mimi import ioloop

    ioloop.run()


def _spawn(name):
    body = _agent_body if name == "agent" else _io_body
    stack = config.THREAD_AGENT_STACK_BYTES if name == "agent" else config.THREAD_IO_STACK_BYTES
    t = state["threads"].get(name) or {"restarts": 0}
    t["alive"] = True
    state["threads"][name] = t
    seam.start_thread(_thread, (name, body), seam.thread_stack_bytes(stack))


def start():
    """Start the agent and I/O threads (and the watchdog). False when already running."""
    if state["running"]:
        return False
    if any(t.get("alive") for t in state["threads"].values()):
        log.warn(TAG, "a thread of the last run is still finishing its step; start again in a moment")
        return False
    from mimi import boot

    if boot.state["safe"] and boot.state["reason"] == "Ctrl-C during boot":
        boot.state["safe"] = False  # started by hand after all
    if state["bus"] is None and not init():
        return False
    state["stop"] = False
    state["running"] = True
    state["healthy"] = False
    state["started_ms"] = seam.ticks_ms()
    _beat["agent"] = seam.ticks_ms()
    _spawn("agent")
    _spawn("io")
    if config.APP_WDT_TIMEOUT_MS and not state["wdt"]:
        try:
            seam.wdt_start(config.APP_WDT_TIMEOUT_MS)
            state["wdt"] = True
        except (OSError, ValueError, ImportError, AttributeError) as e:
            log.warn(TAG, "no watchdog: %s", e)
    log.info(TAG, "started: agent and I/O threads (stacks %d and %d bytes)",
             config.THREAD_AGENT_STACK_BYTES, config.THREAD_IO_STACK_BYTES)
    return True


def stop(timeout_ms=None):
    """Stop both threads; wait up to ``timeout_ms`` (default ``APP_STOP_WAIT_MS``).

    Returns True when both ended. The hardware watchdog cannot be stopped once started,
    so while the app is stopped a small thread keeps feeding it.
    """
    if not state["running"]:
        return True
    state["stop"] = True
    t0 = seam.ticks_ms()
    timeout_ms = timeout_ms or config.APP_STOP_WAIT_MS
    while seam.ticks_diff(seam.ticks_ms(), t0) < timeout_ms:
        if not any(t.get("alive") for t in state["threads"].values()):
            break
        seam.sleep_ms(20)
    done = not any(t.get("alive") for t in state["threads"].values())
    _stopped()
    log.info(TAG, "stopped" if done else "stopping: a thread is still finishing its step")
    return done


def _idle_feeder():
    try:
        every_ms = max(50, min(1000, config.APP_WDT_TIMEOUT_MS // 4))
        while not state["running"]:
            seam.wdt_feed()
            seam.sleep_ms(every_ms)
    finally:
        state["feeder"] = False


# -- supervision ------------------------------------------------------------------------


def agent_ok(now):
    """True while the agent thread is alive and was active within ``APP_AGENT_STALL_MS``."""
    t = state["threads"].get("agent")
    if t is None or not t.get("alive"):
        return False
    return seam.ticks_diff(now, _beat["agent"]) < config.APP_AGENT_STALL_MS


def watch(now):
    """The I/O thread's supervision step: restart a dead agent thread, feed the watchdog
    while both threads make progress, and clear the crash count once healthy."""
    ok = agent_ok(now)
    if not ok and not state["stop"]:
        t = state["threads"].get("agent") or {}
        if not t.get("alive"):
            if _may_restart("agent", now):
                log.error(TAG, "the agent thread died: starting it again")
                t["restarts"] = t.get("restarts", 0) + 1
                _beat["agent"] = now
                _spawn("agent")
            else:
                _reset("the agent thread keeps dying")
            return
        if not t.get("stall_logged"):
            log.error(TAG, "the agent thread shows no progress for %d s: the watchdog will reset the board",
                      seam.ticks_diff(now, _beat["agent"]) // 1000)
            t["stall_logged"] = True
        return
    t = state["threads"].get("agent")
    if t is not None:
        t["stall_logged"] = False
    seam.wdt_feed()
    if not state["healthy"] and seam.ticks_diff(now, state["started_ms"]) >= config.BOOT_HEALTHY_MS:
        from mimi import boot

        state["healthy"] = True
        boot.clear_crashes()
        log.info(TAG, "healthy")


# -- console ------------------------------------------------------------------------------


def handle_inline(msg):
    """Run one message through the agent in the calling thread (``cli.ask`` while the app
    is stopped). Returns the console's reply text, or None."""
    _alloc()
    register_tools()
    a = make_agent()
    a.handle(msg)
    out = []
    b = state["bus"]
    while True:
        m = b.outbound.get(0)
        if m is None:
            break
        if m.get("channel") == "cli" and m.get("kind") in ("text", "note"):
            out.append(m.get("text", ""))
        elif m.get("channel") != "cli":
            log.warn(TAG, "app stopped: a %s message for %s was dropped", m.get("channel"), m.get("chat_id"))
    return "\n".join(out) if out else None
