"""cron_add, cron_list, cron_remove over the job store (``mimi.storage.cronjobs``).

The cron service (runtime part) runs the jobs; a job's ``text`` comes back to the agent
as a message at the time set, in its own session. Times of ``at`` and ``daily`` are the
owner's local time.
"""
from mimi import clock
from mimi.storage import cronjobs
from mimi.tools import registry


def _when(j):
    nxt = j.get("next_s")
    return "next %s" % clock.iso_local(nxt) if nxt else "waits for the clock to be set"


def cron_add(args, ctx):
    """``kind`` every|at|daily with ``every_s`` | ``at`` | ``hhmm``; ``text``; optional chat."""
    spec = {}
    for k in ("kind", "every_s", "at", "hhmm", "text", "chat_id", "channel"):
        if args.get(k) is not None:
            spec[k] = args[k]
    if "chat_id" not in spec:
        spec["chat_id"] = ctx.get("chat_id")
        if "channel" not in spec and ctx.get("channel") in ("telegram", "cli"):
            spec["channel"] = ctx.get("channel")
    jid = cronjobs.add(spec)
    for j in cronjobs.list():
        if j["id"] == jid:
            return "added job %s: %s, %s" % (jid, cronjobs.kind_text(j), _when(j))
    return "added job %s" % jid


def cron_list(args, ctx):
    jobs = cronjobs.list()
    if not jobs:
        return "no scheduled jobs"
    return "\n".join("%s: %s, %s, to %s %s: %s" % (
        j["id"], cronjobs.kind_text(j), _when(j), j["channel"], j["chat_id"], j["text"]) for j in jobs)


def cron_remove(args, ctx):
    cronjobs.remove(args["id"])
    return "removed job %s" % args["id"]


def register_all():
    """Register the three cron tools (group ``cron``)."""
    T = registry.Tool
    registry.register(T(
        "cron_add",
        "Schedule a job: its text is given to you at the time set, and you act on it (e.g. "
        "send_message). kind 'every' needs every_s (seconds, >= 60); 'at' needs at "
        "(YYYY-MM-DD HH:MM local, once); 'daily' needs hhmm (HH:MM local).",
        {"type": "object", "properties": {
            "kind": {"type": "string", "enum": list(cronjobs.KINDS)},
            "every_s": {"type": "integer"},
            "at": {"type": "string", "description": "YYYY-MM-DD HH:MM, local time"},
            "hhmm": {"type": "string", "description": "HH:MM, local time"},
            "text": {"type": "string", "description": "what to do when it runs"},
            "chat_id": {"type": ["string", "integer"], "description": "numeric chat id; default this chat"},
            "channel": {"type": "string", "enum": ["telegram", "cli"]}},
         "required": ["kind", "text"]},
        cron_add, "cron"))
    registry.register(T("cron_list", "List the scheduled jobs with their next run.",
                        {"type": "object", "properties": {}}, cron_list, "cron"))
    registry.register(T("cron_remove", "Remove a scheduled job by its id (see cron_list).",
                        {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
                        cron_remove, "cron"))
