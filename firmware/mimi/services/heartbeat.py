"""The heartbeat: every 30 minutes, a look at ``/data/HEARTBEAT.md``.

When the file has open tasks, the agent gets them as one inbound message (channel
``heartbeat``, to the owner's chat, session ``hb_<owner>``) and does what is due; a reply
other than ``HEARTBEAT_OK`` reaches the owner on Telegram (``mimi.app`` drops the OK and
the typing indicator). When there are no open tasks, nothing is queued: no LLM call.

Open tasks are list items that are not ticked: ``- [ ] water the plants`` or
``- check the greenhouse sensor``. Headings, prose, ticked items (``- [x]``), empty boxes
and HTML comments are not tasks, so the file can explain itself.
"""
from mimi import config, log, seam

TAG = "heartbeat"

PROMPT = ("[heartbeat] Time for the periodic check. Open tasks in /data/HEARTBEAT.md:\n%s\n"
          "Do what is due now; tick a task that is finished by editing the file (- [x]). "
          "If nothing needs the owner's attention, reply with exactly HEARTBEAT_OK; "
          "otherwise reply with what the owner should know: your reply is sent to them "
          "(no need for send_message).")


def open_tasks(text, limit=None):
    """The open tasks in HEARTBEAT.md text, as a list of str (at most ``limit``)."""
    limit = limit or config.HEARTBEAT_TASKS_MAX
    out = []
    in_comment = False
    for raw in text.split("\n"):
        line = raw.strip()
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        if line.startswith("<!--"):
            in_comment = "-->" not in line
            continue
        item = _item(line)
        if item is None:
            continue
        if item.startswith("[ ]"):
            item = item[3:].strip()
        elif item[:3] in ("[x]", "[X]"):
            continue
        if item:
            out.append(item)
            if len(out) >= limit:
                break
    return out


def _item(line):
    # "- x", "* x", "+ x", "1. x" -> "x"; anything else -> None
    if len(line) >= 2 and line[0] in "-*+" and line[1] == " ":
        return line[2:].strip()
    i = 0
    while i < len(line) and line[i].isdigit():
        i += 1
    if 0 < i < len(line) - 1 and line[i] in ".)" and line[i + 1] == " ":
        return line[i + 2:].strip()
    return None


def is_ok(text):
    """True when a heartbeat reply means "nothing to report" (``HEARTBEAT_OK``, perhaps
    with formatting or a few words after it)."""
    t = (text or "").strip().strip("*_`'\".").strip()
    if not t.upper().startswith(config.HEARTBEAT_OK):
        return False
    return len(t) - len(config.HEARTBEAT_OK) <= 32


def _read_file():
    from mimi.storage import fs

    try:
        return fs.read_text(config.HEARTBEAT_PATH, config.HEARTBEAT_READ_BYTES)[0]
    except fs.NotFound:
        return ""


class Heartbeat:
    """``Heartbeat(bus, read=None)``; the I/O thread calls ``tick(now_ms)`` every loop.

    ``read``: a function returning HEARTBEAT.md's text (default: the file, capped at
    ``HEARTBEAT_READ_BYTES``).
    """

    def __init__(self, bus, read=None, every_ms=None):
        self.bus = bus
        self.read = read or _read_file
        self.every_ms = every_ms or config.HEARTBEAT_EVERY_MS
        self._next_ms = seam.ticks_add(seam.ticks_ms(), self.every_ms)
        self.runs = 0  # messages queued so far

    def tick(self, now_ms):
        if seam.ticks_diff(now_ms, self._next_ms) < 0:
            return None
        self._next_ms = seam.ticks_add(now_ms, self.every_ms)
        out = self.run_now()
        log.info(TAG, "%s", out)
        return out

    def run_now(self):
        """Check HEARTBEAT.md now; queue its open tasks for the agent. Returns what happened."""
        try:
            text = self.read()
        except Exception as e:  # noqa: BLE001
            return "could not read HEARTBEAT.md: %s" % e
        tasks = open_tasks(text)
        if not tasks:
            return "no open tasks in HEARTBEAT.md: nothing to do"
        from mimi.channels import access

        owner = access.owner()
        if not owner:
            return "%d open tasks, but no owner chat to report to (allow a chat first)" % len(tasks)
        msg = {"channel": "heartbeat", "chat_id": owner, "session": _session(owner),
               "text": PROMPT % "\n".join("- " + t for t in tasks), "reply_channel": "telegram"}
        if not self.bus.inbound.put(msg):
            self._next_ms = seam.ticks_add(seam.ticks_ms(), 60000)  # busy: try again in a minute
            return "the assistant is busy; the heartbeat tries again in a minute"
        self.runs += 1
        return "%d open task%s sent to the agent" % (len(tasks), "" if len(tasks) == 1 else "s")


def _session(owner):
    from mimi.storage import sessions

    return sessions.key_for("heartbeat", owner)
