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

so each job talks in its own session and the reply reaches the chat the job names
(``mimi.app`` routes outbound ``cron`` messages: a numeric chat id to Telegram, the
console's id to the console). A job is marked run only once it is on the bus; when the
bus is full it stays due and goes at the next tick.
"""
from mimi import config, log, seam

TAG = "cron"


class Cron:
    """``Cron(bus, store=None)``; the I/O thread calls ``tick(now_ms)`` every loop.

    ``store``: an object with ``due(now_s)`` and ``mark_run(id, now_s)`` (default: the
    ``mimi.storage.cronjobs`` module).
    """

    def __init__(self, bus, store=None):
        self.bus = bus
        self.store = store
        self._next_ms = seam.ticks_ms()

    def _job_store(self):
        if self.store is None:
            from mimi.storage import cronjobs

            self.store = cronjobs
        return self.store

    def tick(self, now_ms):
        """Look for due jobs every ``CRON_TICK_MS``; cheap otherwise."""
        if seam.ticks_diff(now_ms, self._next_ms) < 0:
            return 0
        self._next_ms = seam.ticks_add(now_ms, config.CRON_TICK_MS)
        return self.run_due(seam.time_s())

    def run_due(self, now_s):
        """Queue every job due at ``now_s``; return how many went on the bus."""
        if not seam.clock_synced():
            return 0
        store = self._job_store()
        try:
            jobs = store.due(now_s)
        except Exception as e:  # noqa: BLE001 - a damaged store must not stop the I/O thread
            log.exc(TAG, "reading the jobs failed", e)
            return 0
        n = 0
        for job in jobs:
            if not self.bus.inbound.put(message(job)):
                log.warn(TAG, "the assistant is busy: job %s waits for the next tick", job.get("id"))
                break
            n += 1
            try:
                store.mark_run(job["id"], now_s)
            except Exception as e:  # noqa: BLE001
                log.exc(TAG, "recording the run of %s failed" % job.get("id"), e)
            log.info(TAG, "job %s queued for %s", job.get("id"), job.get("chat_id"))
        return n


def _session(job_id):
    from mimi.storage import sessions

    return sessions.key_for("cron", job_id)


def _when(job):
    k = job.get("kind")
    if k == "every":
        return "every %d s" % job.get("every_s", 0)
    if k == "daily":
        return "daily at %s (local)" % job.get("hhmm")
    return "once"


def message(job):
    """The inbound message for ``job`` (a job dict from the store)."""
    jid = str(job.get("id"))
    return {"channel": "cron", "chat_id": str(job.get("chat_id")), "session": _session(jid),
            "text": "[scheduled job %s, %s; your reply goes to this chat] %s" % (jid, _when(job), job.get("text", "")),
            "job": jid,
            "reply_channel": job.get("channel") or "telegram"}
