"""The I/O thread: one loop that keeps WiFi and the clock (``boot.NetKeeper``), polls
and sends on Telegram, routes the agent's replies to their channel, ticks cron and the
heartbeat, and supervises the agent thread (``app.watch``, which feeds the watchdog).

Nothing in the loop blocks long: the Telegram long poll is an ``http.Pending`` checked
each pass, and the loop waits ``APP_IO_WAIT_MS`` on the outbound queue when idle.

Routing (``route``): ``telegram`` -> the Telegram channel; ``cli`` -> the serial
console; ``cron`` -> Telegram for a numeric chat id, else the console; ``heartbeat`` ->
the owner on Telegram, except typing/notes and a ``HEARTBEAT_OK`` reply, which are
dropped. The console (the ``cli`` channel's outbound side) is the few lines here: while
``mimi.cli.ask`` waits (``asking``) its messages are kept in ``inbox`` for it, otherwise a
text is printed at once (a cron job reporting to the console).
"""
from mimi import config, log, seam

inbox = []  # cli messages kept for ``ask`` (at most 32; list operations are atomic)
asking = [False]
out = print  # where console replies are printed (tests collect them)


def run():
    """The I/O thread's loop, until the app stops (``app.state["stop"]``)."""
    from mimi import app, boot
    from mimi.services import Cron

    state = app.state
    net = state["net"] = state["net"] or boot.NetKeeper()
    cron = state["cron"] = state["cron"] or Cron(state["bus"])
    hb = app.heartbeat()
    tg = state["telegram"]
    out = state["bus"].outbound
    held = None  # an outbound message its channel had no room for yet
    try:
        while not state["stop"]:
            now = seam.ticks_ms()
            net.tick(now)
            busy = tg.tick(now)
            for _ in range(8):
                held = held or out.get(0)
                if held is None or not route(held):
                    break
                held = None
            cron.tick(now)
            hb.tick(now)
            app.watch(now)
            if held is not None:
                seam.sleep_ms(config.APP_IO_WAIT_MS)
            elif not busy:
                held = out.get(config.APP_IO_WAIT_MS)
                if held is not None and route(held):
                    held = None
    finally:
        tg.stop()


def route(msg):
    """Hand an outbound message to its channel; False when the channel has no room yet."""
    from mimi import app, services

    ch = msg.get("channel")
    cid = str(msg.get("chat_id", ""))
    if ch == "heartbeat":  # the owner gets a report, not the OK, the typing or notes
        if msg.get("kind", "text") != "text" or services.is_ok(msg.get("text")):
            return True
        ch = "telegram"
    elif ch == "cron":
        ch = "telegram" if cid.lstrip("-").isdigit() else "cli"
    if ch == "telegram":
        return app.state["telegram"].deliver(msg)
    if ch == "cli":
        if asking[0]:
            if len(inbox) < 32:
                inbox.append(msg)
        elif msg.get("kind") == "text":
            out("\n[mimi] %s" % msg.get("text", ""))
        return True
    log.warn("io", "dropped %s", ch)
    return True
