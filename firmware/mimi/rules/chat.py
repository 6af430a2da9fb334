"""What the rule and sensor tools do (the registry imports this module when one is first
called: their lines in ``mimi/tools/tools.jsonl`` name it): rule_add, rule_list, rule_remove, rule_pause, rule_test
(group ``cron``) over the rule store (``mimi.rules.store``), and sensor_read, i2c_scan
(group ``gpio``) over ``mimi.hw.sensors``. ``/rules`` and the console use it too.

Rules are what the owner teaches in chat ("every day at 8, if it is above 28 °C, turn on
the fan and tell me"); the engine (``mimi.rules.engine``) runs them in the I/O thread
without the LLM. Who may do what (``mimi.policy``):
- a rule that touches pins, sensors or MQTT is the owner's to make; another chat makes
  rules with time or MQTT-free triggers that message it or prompt the agent;
- a message action's chat passes ``guard.check_target`` as ``send_message``'s does;
- a job's, a rule's or the heartbeat's turn makes no rule (no rule breeds rules);
- the owner lists, removes, pauses every rule; another chat those it made.
The group ``cron`` keeps them from group chats unless the owner's ``group_tools`` allows.
"""
from mimi import policy


def _mine(r, ctx):
    """True when this turn may see or change rule ``r``: the owner's, or the chat that made it."""
    return policy.role(ctx) == 0 or str(r.get("by") or r.get("chat_id")) == policy.chat_of(ctx)


def _spec(args, ctx):
    from mimi import guard
    from mimi.rules import store

    spec = {}
    for k in ("name", "when", "if", "do", "chat_id", "paused"):
        if args.get(k) is not None:
            spec[k] = args[k]
    if "chat_id" not in spec:
        spec["chat_id"] = ctx.get("chat_id")
        here = ctx.get("reply_channel") or ctx.get("channel")
        if here in ("telegram", "feishu", "cli"):
            spec["channel"] = here
    chat = str(spec["chat_id"]).strip()
    guard.check_target(chat, ctx)
    for a in spec.get("do") if isinstance(spec.get("do"), list) else ():
        if isinstance(a, dict) and a.get("chat_id") is not None:
            guard.check_target(str(a["chat_id"]).strip(), ctx)
    spec["by"] = policy.chat_of(ctx)
    if policy.role(ctx) != 0:
        for k in ("pin", "pwm", "sensor", "mqtt"):
            if store.uses(spec, k):
                raise ValueError("a rule that uses %s is the owner's to make" % ("pins" if k == "pwm" else k + "s"))
    return spec


def rule_add(args, ctx):
    """Store a rule (``mimi.rules.store`` validates it: schema, pins, sensors, limits)."""
    if ctx.get("channel") in ("cron", "heartbeat"):
        raise ValueError("rules are made in a chat with a person, not by a scheduled job's or a rule's turn")
    from mimi.rules import store

    r = store.add(_spec(args, ctx))
    return "added rule " + store.line(r)


def rule_list(args, ctx):
    from mimi.rules import engine, store

    bad = engine.failing()
    out = []
    for r in store.list():
        if _mine(r, ctx):
            out.append(store.line(r) + ("\n  last firing failed: " + bad[r["id"]] if r["id"] in bad else ""))
    return "\n".join(out) if out else "no rules"


def _get(rule_id, ctx):
    from mimi.rules import store

    r = store.get(rule_id)
    if r is None:
        raise ValueError("no rule with id '%s' (rule_list shows them)" % rule_id)
    if not _mine(r, ctx):
        raise ValueError("rule %s was made in another chat: only the owner or that chat may change it" % rule_id)
    return r


def rule_remove(args, ctx):
    from mimi.rules import store

    _get(args["id"], ctx)
    store.remove(args["id"])
    return "removed rule " + args["id"]


def rule_pause(args, ctx):
    from mimi.rules import store

    _get(args["id"], ctx)
    p = args.get("paused", True)
    store.pause(args["id"], p)
    return "rule %s %s" % (args["id"], "paused: it does not fire until resumed" if p else "resumed")


def rule_test(args, ctx):
    """A stored rule (``id``) or one not stored yet (``rule``): is it valid, what its trigger
    and conditions read now, what its actions would do; ``run`` runs the actions now."""
    from mimi import clock
    from mimi.rules import actions, store

    if ("id" in args) == ("rule" in args):
        raise ValueError("give id (a stored rule) or rule (one to try), not both")
    if "id" in args:
        r = _get(args["id"], ctx)
        if not r.get("off"):
            store.validate(r)  # pins and sensors as they are now
    else:
        r = store.validate(_spec(args["rule"] if isinstance(args["rule"], dict) else {}, ctx))
        r["id"] = "test"
    out = ["rule is valid"]
    w = r["when"]
    value = ""
    if "pin" in w:
        from mimi.hw import gpio

        pin = store.pin_of(w["pin"])[0]
        value = gpio.read(pin)[1]
        out.append("trigger: %s (GPIO%d) reads %d now; fires on a %s edge held %d ms" % (
            w["pin"], pin, value, w["edge"], w["debounce_ms"]))
    elif "sensor" in w:
        from mimi.hw import sensors

        value = sensors.read(w["sensor"])
        up = "above" in w
        t = w["above"] if up else w["below"]
        out.append("trigger: %s reads %s now; fires when it goes %s %s (again after %s %s), read every %d s" % (
            w["sensor"], actions.fill("{value}", r, value), "above" if up else "below", t,
            "below" if up else "above", t - w["hysteresis"] if up else t + w["hysteresis"], w["every_s"]))
    elif "mqtt" in w:
        out.append("trigger: a message on %s%s" % (w["mqtt"], " with payload %s" % w["payload"] if "payload" in w
                                                    else ""))
        value = w.get("payload", "")
    else:
        now = clock.local() if clock.synced() else None
        out.append("trigger: %s (now %s)" % (
            "every %d s" % w["every_s"] if "every_s" in w else "daily at %s (local)" % w["daily"] if "daily" in w
            else "once at " + clock.iso_local(w["at_s"]), "%02d:%02d" % now[3:5] if now else "clock not set"))
        value = "%02d:%02d" % now[3:5] if now else "?"
    ok, lines = actions.check(r)
    for ln in lines:
        out.append("if " + ln)
    out.append("conditions hold now: %s" % ("yes" if ok else "no"))
    for a in r["do"]:
        text = a.get("message") or a.get("prompt")
        if text:
            out.append("do %s: %s" % ("message" if "message" in a else "prompt", actions.fill(text, r, value)))
        else:
            out.append("do " + ", ".join("%s=%s" % (k, a[k]) for k in sorted(a)))
    if args.get("run"):
        errs = actions.act({"rule": r, "sent": [], "bad": None}, value, ctx.get("bus"))
        out.append("ran the actions now: " + ("; ".join(errs) if errs else "all worked"))
    return "\n".join(out)


def sensor_read(args, ctx):
    """A sensor's value now: ``sensor`` (mcu, an alias, kind:GPIO), ``atten_db`` (ADC)."""
    from mimi.hw import sensors

    kind, pin, q = sensors.resolve(args["sensor"])
    v = sensors.read(args["sensor"], True, args.get("atten_db", 11))
    return "%s (%s%s): %s %s %s" % (args["sensor"], kind, "" if pin is None else " on GPIO%d" % pin, q,
                                    "%.1f" % v if q != "mV" else "%d" % v, sensors.unit(q))


def i2c_scan(args, ctx):
    """The I2C addresses that answer on ``sda``/``scl`` (GPIO numbers or aliases)."""
    from mimi.hw import sensors
    from mimi.rules import store

    sda = store.pin_of(args["sda"])[0]
    scl = store.pin_of(args["scl"])[0]
    found = sensors.i2c_scan(sda, scl)
    return "I2C on SDA GPIO%d, SCL GPIO%d: %s" % (sda, scl, ", ".join("0x%02x" % a for a in found) if found else
                                                  "no device answers (wiring, pull-ups, power?)")
