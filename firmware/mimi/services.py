"""Background services the I/O thread ticks: ``Cron`` (scheduled jobs) and ``Heartbeat``
(the periodic look at HEARTBEAT.md). Each turns what is due into an inbound bus message,
like a chat message, in its own session; the agent answers it and ``mimi.app.route``
takes the reply to the chat the job names.

Cron: the job store (``mimi.storage.cronjobs``, ``/data/cron.json``) owns the schedule:
``due(now_s)`` lists the jobs to run (none while the clock is unset; after a downtime a
job is due once, not once per missed period) and ``mark_run(id, now_s)`` records a run
and sets the next one (``daily`` jobs follow the owner's time zone). ``Cron`` only turns
due jobs into inbound messages::

    {"channel": "cron", "chat_id": <the job's chat>, "session": "cron_<id>",
     "text": "[scheduled job j3, daily at 08:00 (local); your reply goes to this chat] <the
     job's text>", "job": "j3",
     "reply_channel": <the job's channel: "telegram" or "cli">,
     "is_group": <true when the job was made in a group chat (its "is_group")>,
     "by": <the chat that made the job, or None>, "once": <true for an "at" job>}

(the wording is the ``cron`` text of texts.md), so each job talks in its own session and
the reply reaches the chat the job names (a numeric chat id: Telegram; the console's id:
the console). A job made in a group chat runs with that group's tool limits
(``is_group``, read by ``mimi.agent.loop.denied_groups``), whatever chat it reports to,
and the role of the chat that made it (``by``, read by ``mimi.policy.role``); a one-off
job's session is removed once its turn is over (``once``, by the agent). A
job is marked run only once it is on the bus; when the bus is full it stays due and goes
at the next tick.

Heartbeat: every 30 minutes, a look at ``/data/HEARTBEAT.md``. When the file has open
tasks, the agent gets them as one inbound message (channel ``heartbeat``, to the owner's
chat, session ``hb_<owner>``, the prompt is the ``heartbeat`` text of texts.md) and does
what is due; a reply other than ``HEARTBEAT_OK`` reaches the owner on Telegram (the OK
and the typing indicator are dropped). With no open tasks nothing is queued: no LLM call.
Open tasks are list items that are not ticked: ``- [ ] water the plants`` or ``- check
the greenhouse sensor``. Headings, prose, ticked items (``- [x]``), empty boxes and HTML
comments are not tasks, so the file can explain itself.
"""
from micropython import const

from mimi import commands, config, log, seam

# Tunables (config.py holds those shared by several modules and the settings).
_CRON_TICK_MS = const(5000)  # how often the job store is asked for due jobs
_HEARTBEAT_READ_BYTES = const(4096)


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
        """Look for due jobs every ``_CRON_TICK_MS``; cheap otherwise."""
        if seam.ticks_diff(now_ms, self.next_ms) < 0:
            return 0
        self.next_ms = seam.ticks_add(now_ms, _CRON_TICK_MS)
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
                                             "job": jid, "reply_channel": job.get("channel") or "telegram",
                                             "is_group": job.get("is_group") is True, "by": job.get("by"),
                                             "once": k == "at"}):
                    log.warn("cron", "busy: %s", jid)  # stays due: the next tick
                    break
                n += 1
                self.store.mark_run(jid, now_s)
        except Exception as e:  # noqa: BLE001 - a damaged store must not stop the I/O thread
            log.exc("cron", "jobs", e)
        return n


def open_tasks(text, limit=None):
    """The open tasks in HEARTBEAT.md text, as a list of str (at most ``limit``,
    default ``HEARTBEAT_TASKS_MAX``)."""
    out = []
    comment = False
    for line in text.split("\n"):
        line = line.strip()
        if comment or line[:4] == "<!--":
            comment = "-->" not in line
            continue
        i = 0
        while i < len(line) and line[i].isdigit():  # "1. x", "2) x"
            i += 1
        if line[:2] in ("- ", "* ", "+ "):
            item = line[2:].strip()
        elif 0 < i < len(line) - 1 and line[i] in ".)" and line[i + 1] == " ":
            item = line[i + 2:].strip()
        else:
            continue
        if item[:3] in ("[x]", "[X]"):
            continue
        if item[:3] == "[ ]":
            item = item[3:].strip()
        if item:
            out.append(item)
            if len(out) >= (limit or config.HEARTBEAT_TASKS_MAX):
                break
    return out


def is_ok(text):
    """True when a heartbeat reply means "nothing to report" (``HEARTBEAT_OK``, perhaps
    with formatting or a few words after it)."""
    t = (text or "").strip().strip("*_`'\".").strip()
    return t.upper().startswith(config.HEARTBEAT_OK) and len(t) <= len(config.HEARTBEAT_OK) + 32


class Heartbeat:
    """``Heartbeat(bus, read=None)``; the I/O thread calls ``tick(now_ms)`` every loop
    (it runs every ``HEARTBEAT_EVERY_MS``). ``read``: a function returning HEARTBEAT.md's
    text (default: the file, capped at ``_HEARTBEAT_READ_BYTES``); ``runs``: messages
    queued so far.
    """

    def __init__(self, bus, read=None):
        self.bus = bus
        self.read = read
        self.next_ms = seam.ticks_add(seam.ticks_ms(), config.HEARTBEAT_EVERY_MS)
        self.runs = 0

    def tick(self, now_ms):
        """Run when due; returns what happened, or None."""
        if seam.ticks_diff(now_ms, self.next_ms) < 0:
            return None
        self.next_ms = seam.ticks_add(now_ms, config.HEARTBEAT_EVERY_MS)
        out = self.run_now()
        log.info("hb", "%s", out)
        return out

    def run_now(self):
        """Check HEARTBEAT.md now; queue its open tasks for the agent. Returns what happened."""
        from mimi.storage import fs, sessions

        try:
            text = self.read() if self.read else fs.read_text(config.HEARTBEAT_PATH, _HEARTBEAT_READ_BYTES)[0]
        except fs.NotFound:
            text = ""
        except Exception as e:  # noqa: BLE001
            return "error: %s" % e
        tasks = open_tasks(text)
        owner = commands.owner()
        if not tasks:
            return commands.text("hb_none")
        if not owner:
            return commands.text("hb_owner", len(tasks))
        if not self.bus.inbound.put({"channel": "heartbeat", "chat_id": owner,
                                     "session": sessions.key_for("heartbeat", owner),
                                     "text": commands.text("heartbeat", "- " + "\n- ".join(tasks)),
                                     "reply_channel": "feishu" if owner[:3] == "fs_" else "telegram"}):
            self.next_ms = seam.ticks_add(seam.ticks_ms(), 60000)  # busy: try again in a minute
            return commands.text("hb_busy")
        self.runs += 1
        return commands.text("hb_sent", len(tasks), "" if len(tasks) == 1 else "s")
