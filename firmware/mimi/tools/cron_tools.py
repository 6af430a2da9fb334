"""cron_add, cron_list, cron_remove over the job store (``mimi.storage.cronjobs``).

The cron service (runtime part) runs the jobs; a job's ``text`` comes back to the agent
as a message at the time set, in its own session. Times of ``at`` and ``daily`` are the
owner's local time. A job keeps the chat that made it (``by``): its turns have that chat's
role (``mimi.policy``), and a job's or the heartbeat's turn makes jobs only within
``guard.may_rearm``'s bounds.
"""
from mimi import clock, policy, seam
from mimi.storage import cronjobs
from mimi.tools import messaging, registry


def _line(j):
    """One job in words: ``j1: daily at 07:30 (local), next 2026-01-02T07:30:00+08:00``."""
    nxt = j.get("next_s")
    if j.get("off"):  # damaged (see cronjobs): it never runs
        return "%s: switched off, damaged (%s): cron_remove it" % (j["id"], j["off"])
    return "%s: %s, %s" % (j["id"], cronjobs.kind_text(j),
                           "next " + clock.iso_local(nxt) if nxt else "waits for the clock to be set")


def cron_add(args, ctx):
    """``kind`` every|at|daily with ``every_s`` | ``at`` | ``hhmm``; ``text``; optional chat
    (as ``send_message``: this chat, the owner's or an allowed one). A job made in a group
    chat keeps the group's tool limits (``is_group``)."""
    spec = {}
    for k in ("kind", "every_s", "at", "hhmm", "text", "chat_id", "channel"):
        if args.get(k) is not None:
            spec[k] = args[k]
    if "chat_id" not in spec:
        spec["chat_id"] = ctx.get("chat_id")
        if "channel" not in spec and ctx.get("channel") in ("telegram", "feishu", "cli"):
            spec["channel"] = ctx.get("channel")
    messaging.check_chat(str(spec["chat_id"]).strip(), ctx)
    if ctx.get("is_group"):
        spec["is_group"] = True
    spec["by"] = policy.chat_of(ctx)
    now = seam.time_s()
    from mimi import guard

    guard.may_rearm(ctx, cronjobs.validate(spec, now)["next_s"], now)
    jid = cronjobs.add(spec)
    for j in cronjobs.list():
        if j["id"] == jid:
            return "added job " + _line(j)
    return "added job " + jid


def cron_list(args, ctx):
    # the owner sees every job; another chat those it made (or, from before jobs kept their
    # maker, those for it)
    me = policy.role(ctx) and policy.chat_of(ctx)
    out = ["%s, to %s %s: %s" % (_line(j), j.get("channel"), j.get("chat_id"), j.get("text")) for j in cronjobs.list()
           if not me or str(j.get("by") or j.get("chat_id")) == me]
    return "\n".join(out) if out else "no scheduled jobs"


def cron_remove(args, ctx):
    me = policy.role(ctx) and policy.chat_of(ctx)  # as cron_list: another chat removes its own jobs
    for j in cronjobs.list() if me else ():
        if j.get("id") == args["id"] and str(j.get("by") or j.get("chat_id")) != me:
            raise ValueError("job %s was made in another chat: only the owner or that chat may remove it" % args["id"])
    cronjobs.remove(args["id"])
    return "removed job " + args["id"]


def register_all():
    """Register cron_add, cron_list, cron_remove (group ``cron``; text in ``tools.jsonl``)."""
    registry.load(("mimi.tools.cron_tools",))
