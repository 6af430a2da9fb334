"""The job store ``/data/cron.json``: what the cron service runs and when.

A job is a dict (docs/internals.md, "Storage"): ``id``, ``kind`` and its time field --
``every`` with ``every_s`` (seconds), ``at`` with ``at_s`` (unix seconds, once),
``daily`` with ``hhmm`` (``"07:30"``, the owner's local time) -- plus ``text`` (the
message the agent gets), ``chat_id``, ``channel``, ``next_s`` (next run, None until the
clock is set), ``last_s`` and ``created_s``; ``is_group`` (true when it was made in a group
chat: the scheduler copies it into the job's inbound message, so the job's turns get that
chat's tool limits); ``by`` (the chat that made it: its turns have that chat's role,
``mimi.policy``); ``off`` (why a damaged job was switched off: it never runs).

The scheduler (the cron service, another part) calls ``due(now_s)`` and, after queueing
each job, ``mark_run(id, now_s)``. Missed runs after a downtime run once, not once per
missed period; nothing is due while the clock is not set; a ``daily`` job follows a
change of time zone. The file is ``{"seq": n, "jobs": [...]}`` and every change is an
atomic rewrite under one lock.
"""
import json

from micropython import const

from mimi import clock, config, log, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_CRON_FILE_MAX_BYTES = const(8192)
_CRON_EVERY_MIN_S = const(60)
_CRON_EVERY_MAX_S = const(31622400)  # 366 days
_CRON_TEXT_MAX_BYTES = const(512)

_TAG = const("cron")
KINDS = ("every", "at", "daily")
_FIELDS = const(("kind", "every_s", "at_s", "at", "hhmm", "text", "chat_id", "channel", "is_group", "by"))

_lock = seam.allocate_lock()
_TIME_MAX = 4294967296  # not const(): over 31 bits, a long int on the ESP32; unix seconds stay under 2**32 (the year 2106): gmtime of more can overflow


def _load():
    """``(seq, jobs)`` from the file; ``ValueError`` when it is damaged (it is left as is)."""
    try:
        text, cut, size = fs.read_text(config.CRON_PATH, _CRON_FILE_MAX_BYTES)
    except fs.NotFound:
        return 0, []
    if cut:
        raise ValueError("cron.json is %d bytes, over %d" % (size, _CRON_FILE_MAX_BYTES))
    try:
        d = json.loads(text)
        jobs = d["jobs"]
        seq = int(d.get("seq", 0))
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):  # "seq": 1e999 is inf
        jobs = None
    if not isinstance(jobs, type([])):  # this module's list() is not the built-in
        raise ValueError("cron.json is damaged; fix or delete it")
    # A damaged job would be queued and then fail for ever: it is switched off (kept for the
    # owner to see and remove), logged once; an entry without an id cannot be, it is dropped.
    keep = []
    changed = False
    for j in jobs:
        if not isinstance(j, dict) or not isinstance(j.get("id"), str) or not j["id"]:
            log.warn(_TAG, "dropped a damaged job: %s", json.dumps(j)[:200])
            changed = True
            continue
        if not j.get("off"):
            try:
                validate({k: j[k] for k in _FIELDS if k in j}, 0)
                for k in ("next_s", "last_s", "created_s"):
                    v = j.get(k)
                    if v is not None and not (isinstance(v, (int, float)) and 0 <= v < _TIME_MAX):
                        raise ValueError("%s is not a time" % k)
            except (ValueError, TypeError, AttributeError, OverflowError) as e:
                j["off"] = str(e)[:100] or "damaged"
                for k in j:  # MicroPython's json writes inf and nan, which no json reads back
                    v = j[k]
                    if isinstance(v, float) and not -_TIME_MAX < v < _TIME_MAX:
                        j[k] = None
                log.warn(_TAG, "job %s is damaged, switched off: %s", j["id"], j["off"])
                changed = True
        keep.append(j)
    if changed:
        _save(seq, keep)
    return seq, keep


def _save(seq, jobs):
    fs.write(config.CRON_PATH, json.dumps({"seq": seq, "jobs": jobs}, separators=(",", ":")))


def validate(spec, now_s=None):
    """Check a job spec and return the job dict to store (without ``id``).

    ``spec`` keys: ``kind``; ``every_s`` | ``at_s`` or ``at`` (``YYYY-MM-DD HH:MM`` local)
    | ``hhmm``; ``text``; ``chat_id``; ``channel`` (default ``telegram``); ``is_group``
    (true: made in a group chat, its turns get that chat's tool limits). Raises
    ``ValueError`` naming the first problem.
    """
    if not isinstance(spec, dict):
        raise ValueError("a job must be an object")
    for k in spec:
        if k not in _FIELDS:
            raise ValueError("unknown field '%s' (expected: %s)" % (k, ", ".join(_FIELDS)))
    if now_s is None:
        now_s = seam.time_s()
    synced = clock.synced(now_s)
    kind = spec.get("kind")
    text = spec.get("text")
    channel = spec.get("channel") or "telegram"
    chat = spec.get("chat_id")
    chat = "" if chat is None or isinstance(chat, bool) else str(chat).strip()
    if chat[:3] == "fs_":  # a Feishu chat id names its channel
        channel = "feishu"
    field = "every_s" if kind == "every" else "at_s"
    n = spec.get(field)
    if kind not in KINDS:
        raise ValueError("kind must be every, at or daily")
    if channel not in ("telegram", "feishu", "cli"):
        raise ValueError("channel must be telegram, feishu or cli")
    need = ("text is needed: what to do when it runs" if not isinstance(text, str) or not text.strip() else
            "chat_id is needed: the chat that gets the result" if not chat else
            "every_s is needed for kind every" if kind == "every" and n is None else
            "at (YYYY-MM-DD HH:MM, local time) or at_s is needed for kind at"
            if kind == "at" and n is None and "at" not in spec else
            "hhmm (HH:MM, local time) is needed for kind daily" if kind == "daily" and "hhmm" not in spec else None)
    if need:
        raise ValueError(need)
    if len(text.encode()) > _CRON_TEXT_MAX_BYTES:
        raise ValueError("text is over %d bytes" % _CRON_TEXT_MAX_BYTES)
    c, colon, topic = chat.partition(":")  # "<chat>:<thread>": a forum topic (mimi.channels.tgupdate)
    if channel == "telegram" and not (c.lstrip("-").isdigit() and c.count("-") <= 1 and (
            not colon or topic.isdigit())):
        raise ValueError("chat_id for telegram must be a number, got '%s'" % chat)
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, float)) or not 0 <= n < _TIME_MAX
                          or n != int(n)):  # the range first: int() of inf raises, of nan too
        raise ValueError("%s must be a whole number of seconds" % field)
    job = {"kind": kind, "text": text.strip(), "chat_id": chat, "channel": channel,
           "next_s": None, "last_s": None, "created_s": now_s if synced else None}
    if spec.get("is_group"):
        job["is_group"] = True
    by = spec.get("by")  # set by cron_add, not by the model: a chat id, or the console's
    if isinstance(by, str) and by and len(by) <= 24:
        job["by"] = by
    if kind == "every":
        if not _CRON_EVERY_MIN_S <= n <= _CRON_EVERY_MAX_S:
            raise ValueError("every_s must be between %d and %d" % (_CRON_EVERY_MIN_S, _CRON_EVERY_MAX_S))
        job["every_s"] = n = int(n)
        if synced:
            job["next_s"] = now_s + n
    elif kind == "at":
        if n is None:
            n = clock.parse_local(spec["at"])
        elif not clock.synced(n):
            raise ValueError("at_s must be unix seconds (UTC)")
        n = int(n)
        if synced and n <= now_s:
            raise ValueError("that time has passed (now it is %s)" % clock.iso_local(now_s))
        job["at_s"] = job["next_s"] = n
    else:
        m = clock.parse_hhmm(spec["hhmm"])
        job["hhmm"] = "%02d:%02d" % (m // 60, m % 60)
        if synced:
            job["next_s"] = clock.next_daily(m, now_s)
    return job


def add(spec, now_s=None):
    """Validate ``spec`` and store it as a new job; return its id (``"j7"``).

    Raises ``ValueError`` (bad spec, too many jobs, damaged file): nothing stored.
    """
    job = validate(spec, now_s)
    with _lock:
        seq, jobs = _load()
        if len(jobs) >= config.CRON_JOBS_MAX:
            raise ValueError("there are already %d jobs; remove one first" % len(jobs))
        seq += 1
        job["id"] = "j%d" % seq
        jobs.append(job)
        # The file must stay readable as its jobs run: room for their times (null -> 10
        # digits, three per job) is kept, else every job would stop at the next load.
        n = len(json.dumps({"seq": seq, "jobs": jobs}, separators=(",", ":")).encode())
        if n + 36 * config.CRON_JOBS_MAX > _CRON_FILE_MAX_BYTES:
            raise ValueError("the job file would be too big (%d bytes): remove a job or use a shorter text" % n)
        _save(seq, jobs)
    log.info(_TAG, "added %s (%s)", job["id"], kind_text(job))
    return job["id"]


def remove(job_id):
    """Delete job ``job_id`` and its session (``cron_<id>``, with its archive). Raises
    ``ValueError`` when there is no such job."""
    if mark_run(job_id, None) is None:
        raise ValueError("no job with id '%s'" % job_id)
    from mimi.storage import sessions

    sessions.delete(sessions.key_for("cron", job_id))


def rechat(chat_id, new):
    """Point every job of chat ``chat_id`` at chat ``new`` (a group upgraded to a supergroup
    gets a new id: Bot API ``migrate_to_chat_id``). Returns how many moved; ``ValueError``
    if the file is damaged."""
    with _lock:
        seq, jobs = _load()
        n = 0
        for j in jobs:
            if str(j.get("chat_id")) == chat_id:
                j["chat_id"] = new
                n += 1
        if n:
            _save(seq, jobs)
    return n


def list():
    """All jobs (dicts), in the order they were added. Raises ``ValueError`` if the file is damaged."""
    with _lock:
        return _load()[1]


def due(now_s):
    """Jobs to run now: ``next_s <= now_s``. [] while the clock is not set.

    Side effect: jobs added before the clock was set get their ``next_s`` now (saved); a
    ``daily`` job's ``next_s`` follows a change of time zone. A damaged file is logged
    and treated as empty (it is not overwritten).
    """
    if not clock.synced(now_s):
        return []
    out = []
    with _lock:
        try:
            seq, jobs = _load()
        except ValueError as e:
            log.warn(_TAG, "%s", e)
            return []
        changed = False
        for j in jobs:
            if j.get("off"):
                continue
            k = j.get("kind")
            nxt = j.get("next_s")
            want = nxt
            if k == "daily":
                for t in ("created_s", "last_s"):
                    # unset: added before the clock was set; ahead of now: the clock ran
                    # ahead and was corrected (else the job waits until that time comes)
                    if (t == "created_s" and not j.get(t)) or (j.get(t) or 0) > now_s:
                        j[t] = now_s
                        changed = True
                want = clock.next_daily(clock.parse_hhmm(j["hhmm"]), j.get("last_s") or j["created_s"])
            elif k == "every" and (nxt is None or nxt > now_s + j.get("every_s", 0)):
                want = now_s + j.get("every_s", 0)  # the clock was unset, or ran ahead and came back
            elif nxt is None:  # added before the clock was set
                want = j.get("at_s")
            if want != nxt:
                j["next_s"] = nxt = want
                changed = True
            if nxt is not None and nxt <= now_s:
                out.append(dict(j))
        if changed:
            _save(seq, jobs)
    return out


def mark_run(job_id, now_s):
    """Record that job ``job_id`` ran at ``now_s``; set its next run; return the job.

    ``every``: the next multiple of ``every_s`` after ``now_s`` on the job's own grid (so a
    downtime of many periods gives one run); ``at``: the job is removed; ``daily``: the
    next local ``hhmm`` after ``now_s``. ``now_s`` None removes the job (``remove``).
    Returns None when the job does not exist.
    """
    with _lock:
        seq, jobs = _load()
        for i in range(len(jobs)):
            j = jobs[i]
            if j.get("id") != job_id:
                continue
            k = j.get("kind")
            j["last_s"] = now_s
            if now_s is None or k == "at":
                jobs.pop(i)
            elif k == "every":
                step = j["every_s"]
                nxt = j.get("next_s") or now_s
                if nxt <= now_s:
                    nxt += step * ((now_s - nxt) // step + 1)
                j["next_s"] = nxt
            else:
                j["next_s"] = clock.next_daily(clock.parse_hhmm(j["hhmm"]), now_s)
            _save(seq, jobs)
            return j
    return None


def kind_text(job):
    """When a job runs, in words: ``every 3600 s``, ``once at 2026-01-05T08:00:00+08:00``, ``daily at 07:30 (local)``."""
    k = job.get("kind")
    if k == "every":
        return "every %d s" % job.get("every_s", 0)
    if k == "at":
        return "once at %s" % clock.iso_local(job.get("at_s", 0))
    return "daily at %s (local)" % job.get("hhmm")
