"""The cron service: asks the job store for due jobs and hands each to the agent.

The job store (``mimi.storage.cronjobs``, ``/data/cron.json``) owns the schedule:
``due(now_s)`` lists the jobs to run (none while the clock is unset; after a downtime a
job is due once, not once per missed period) and ``mark_run(id, now_s)`` records a run
and sets the next one (``daily`` jobs follow the owner's time zone). This module only
turns due jobs into inbound messages:

    {"channel": "cron", "chat_id": <the job's chat>, "session": "cron_<id>",
     "text": "[scheduled job j3, daily at 08:00 (local); your reply goes to this chat] <the
     job's text>", "job": "j3",
     "reply_channel": <the job's channel: "telegram" or "cli">}

(the wording is the ``cron`` text of texts.md) so each job talks in its own session and
the reply reaches the chat the job names (``mimi.ioloop.route``: a numeric chat id to
Telegram, the console's id to the console). A job is marked run only once it is on the
bus; when the bus is full it stays due and goes at the next tick.
"""
from mimi import commands, config, log, seam


class Cron:
    """``Cron(bus, store=None)``; the I/O thread calls ``tick(now_ms)`` every loop.

    ``store``: an object with ``due(now_s)`` and ``mark_run(id, now_s)`` (default: the
    ``mimi.storage.cronjobs`` module).
    """

    def __init__(self, bus, store=None):
        self.bus = bus
        self.store = store
        self.next_ms = seam.ticks_ms()

    def tick(self, now_ms):
        """Look for due jobs every ``CRON_TICK_MS``; cheap otherwise."""
        if seam.ticks_diff(now_ms, self.next_ms) < 0:
            return 0
        self.next_ms = seam.ticks_add(now_ms, config.CRON_TICK_MS)
        return self.run_due(seam.time_s())

    def run_due(self, now_s):
        """Queue every job due at ``now_s``; return how many went on the bus."""
        if not seam.clock_synced():
            return 0
        from mimi.storage import cronjobs, sessions

        self.store = self.store or cronjobs
        n = 0
        try:
            for job in self.store.due(now_s):
                jid = str(job.get("id"))
                k = job.get("kind")
                when = "every %d s" % job.get("every_s", 0) if k == "every" else \
                    "daily at %s (local)" % job.get("hhmm") if k == "daily" else "once"
                if not self.bus.inbound.put({"channel": "cron", "chat_id": str(job.get("chat_id")),
                                             "session": sessions.key_for("cron", jid),
                                             "text": commands.text("cron", jid, when, job.get("text", "")),
                                             "job": jid, "reply_channel": job.get("channel") or "telegram"}):
                    log.warn("cron", "busy: %s", jid)  # stays due: the next tick
                    break
                n += 1
                self.store.mark_run(jid, now_s)
                log.info("cron", "queued %s", jid)
        except Exception as e:  # noqa: BLE001 - a damaged store must not stop the I/O thread
            log.exc("cron", "jobs", e)
        return n
