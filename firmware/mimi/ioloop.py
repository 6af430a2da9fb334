"""The I/O thread: one loop that keeps WiFi and the clock (``boot.NetKeeper``), polls
and sends on Telegram, routes the agent's replies to their channel, ticks cron and the
heartbeat, and supervises the agent thread (``app.watch``, which feeds the watchdog).

Nothing in the loop blocks long: the Telegram long poll is an ``http.Pending`` checked
each pass, and the loop waits ``APP_IO_WAIT_MS`` on the outbound queue when idle.

Routing (``route``): ``telegram`` -> the Telegram channel; ``cli`` -> the console;
``cron`` -> Telegram for a numeric chat id, else the console; ``heartbeat`` -> the owner
on Telegram, except typing/notes and a ``HEARTBEAT_OK`` reply, which are dropped.
"""
from mimi import config, log, seam

TAG = "io"


def run():
    """The I/O thread's loop, until the app stops (``app.state["stop"]``)."""
    from mimi import app, boot
    from mimi.services.cron import Cron

    state = app.state

    if state["net"] is None:
        state["net"] = boot.NetKeeper()
    if state["cron"] is None:
        state["cron"] = Cron(state["bus"])
    hb = app.heartbeat()
    tg = state["telegram"]
    net = state["net"]
    b = state["bus"]
    held = None  # an outbound message its channel had no room for yet
    try:
        while not state["stop"]:
            now = seam.ticks_ms()
            net.tick(now)
            busy = tg.tick(now)
            for _ in range(8):
                if held is None:
                    held = b.outbound.get(0)
                if held is None or not route(held):
                    break
                held = None
            state["cron"].tick(now)
            hb.tick(now)
            app.watch(now)
            if not busy and held is None:
                m = b.outbound.get(config.APP_IO_WAIT_MS)
                if m is not None and not route(m):
                    held = m
            elif held is not None:
                seam.sleep_ms(config.APP_IO_WAIT_MS)
    finally:
        tg.stop()


def route(msg):
    """Hand an outbound message to its channel; False when the channel has no room yet."""
    from mimi import app

    state = app.state
    ch = msg.get("channel")
    kind = msg.get("kind", "text")
    cid = str(msg.get("chat_id", ""))
    if ch == "heartbeat":
        from mimi.services import heartbeat as hbmod

        if kind != "text":
            return True
        if hbmod.is_ok(msg.get("text")):
            log.info(TAG, "heartbeat: nothing to report")
            return True
        msg = {"channel": "telegram", "chat_id": cid, "text": msg.get("text"), "kind": kind}
        ch = "telegram"
    elif ch == "cron":
        ch = "telegram" if cid.lstrip("-").isdigit() else "cli"
    if ch == "telegram":
        return state["telegram"].deliver(msg)
    if ch == "cli":
        from mimi.channels import console

        return console.deliver(msg)
    log.warn(TAG, "no channel '%s': a %s message for %s was dropped", ch, kind, cid)
    return True
