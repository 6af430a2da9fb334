"""What a rule does when it fires, and whether it may: its conditions (``check``), its
actions (``act``), and the texts' placeholders (``fill``). The engine (``mimi.rules.engine``)
calls them at a firing, ``rule_test`` to show or try a rule.

Conditions: ``between`` a local time window (false while the clock is unset), a sensor's
value (``mimi.hw.sensors``, read without waiting), a pin's level (``mimi.hw.gpio``).
Actions, in order, each on its own (one that fails does not stop the next): a pin level
or PWM through ``mimi.hw.gpio`` (the pin policy), a message to a chat on the bus, a
prompt for the agent (an inbound message like a cron job's: channel ``cron``, session
``cron_rule_<id>``, the role of the chat that made the rule), an MQTT publish through
``mimi.net.mqtt`` (``publish(topic, payload, retain) -> bool``) when the build has it.
Messages and prompts count against ``config.RULES_MSG_PER_HOUR`` per rule (the times
are in the rule's running state, ``st["sent"]``) and ``RULES_MSG_PER_HOUR_ALL`` for all
(``_sent``).
"""
import json

from micropython import const

from mimi import clock, config, seam
from mimi.rules import store

_HOUR_MS = const(3600000)

_sent = []  # ticks_ms of every message and prompt of the last hour, all rules


def reset():
    """Forget the hourly count of all rules (tests; a reboot does the same)."""
    del _sent[:]


def mqtt():
    """The MQTT client module (``mimi.net.mqtt``), or None when this build has none."""
    try:
        from mimi.net import mqtt
    except ImportError:
        return None
    return mqtt


def fmt(v):
    """A reading as text: ``29``, ``28.5``; anything else as ``str``."""
    if isinstance(v, float):
        return "%d" % v if v == int(v) else "%.1f" % v
    return str(v)


def fill(text, rule, value, now_s=None):
    """``text`` with ``{value}``, ``{name}``, ``{time}`` (local HH:MM of ``now_s``, default
    now) and ``{<sensor>}`` filled in (a sensor that cannot be read gives ``?``)."""
    out = []
    i = 0
    while True:
        a = text.find("{", i)
        b = text.find("}", a + 1) if a >= 0 else -1
        if b < 0 or b - a > 48:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:a])
        k = text[a + 1:b].strip()
        if k == "value":
            out.append(fmt(value))
        elif k == "name":
            out.append(rule.get("name", ""))
        elif k == "time":
            t = now_s or seam.time_s()
            out.append(clock.iso_local(t)[11:16] if clock.synced(t) else "?")
        else:
            try:
                from mimi.hw import sensors

                v = sensors.read(k, False)
                out.append("?" if v is None else fmt(v))
            except (ValueError, OSError):
                out.append(text[a:b + 1] if " " in k else "?")
        i = b + 1


def check(rule, now_s=None):
    """Whether ``rule``'s conditions hold now: ``(True/False, [one line per condition])``.
    A sensor that cannot be read raises (``ValueError``/``OSError``)."""
    ok = True
    lines = []
    for c in rule.get("if") or ():
        if "between" in c:
            if now_s is None:
                now_s = seam.time_s()
            a = clock.parse_hhmm(c["between"][0])
            b = clock.parse_hhmm(c["between"][1])
            if clock.synced(now_s):
                t = clock.local(now_s)
                m = t[3] * 60 + t[4]
                hold = a <= m < b if a <= b else m >= a or m < b  # a window over midnight
                lines.append("between %s and %s: %s (now %02d:%02d)" % (c["between"][0], c["between"][1],
                                                                       "yes" if hold else "no", t[3], t[4]))
            else:
                hold = False
                lines.append("between: no (the clock is not set yet)")
        elif "sensor" in c:
            from mimi.hw import sensors

            v = sensors.read(c["sensor"], False)
            up = "above" in c
            t = c["above"] if up else c["below"]
            hold = v is not None and (v > t if up else v < t)
            lines.append("%s %s %s: %s (%s)" % (c["sensor"], "above" if up else "below", fmt(t),
                                               "yes" if hold else "no", "no reading yet" if v is None else fmt(v)))
        else:
            pin = store.pin_of(c["pin"])[0]
            from mimi.hw import gpio

            v = gpio.read(pin)[1]
            hold = v == c["is"]
            lines.append("%s is %d: %s (reads %d)" % (c["pin"], c["is"], "yes" if hold else "no", v))
        ok = ok and hold
    return ok, lines


def _count(st, now_ms):
    """Count one message or prompt of rule ``st``; ``ValueError`` past the hourly limits."""
    for times, cap, who in ((st["sent"], config.RULES_MSG_PER_HOUR, "this rule"),
                            (_sent, config.RULES_MSG_PER_HOUR_ALL, "all rules together")):
        while times and seam.ticks_diff(now_ms, times[0]) >= _HOUR_MS:
            times.pop(0)
        if len(times) >= cap:
            raise ValueError("%s sent %d messages and prompts in the last hour, the most allowed" % (who, cap))
    st["sent"].append(now_ms)
    _sent.append(now_ms)


def act(st, value, bus, now_ms=None, now_s=None):
    """Run the actions of ``st["rule"]`` (``st``: the rule's running state, with ``sent``)
    now, what fired it being ``value``; messages and prompts go on ``bus``. Returns the
    errors (a list of str, [] when every action worked)."""
    r = st["rule"]
    now = seam.ticks_ms() if now_ms is None else now_ms
    errs = []
    for a in r["do"]:
        try:
            if "pin" in a:
                from mimi.hw import gpio

                gpio.write(store.pin_of(a["pin"], True)[0], a["value"])
            elif "pwm" in a:
                from mimi.hw import gpio

                gpio.pwm(store.pin_of(a["pwm"], True)[0], a["duty"], a.get("freq_hz"))
            elif "mqtt" in a:
                m = mqtt()
                if m is None:
                    raise OSError("this build has no MQTT client (mimi.net.mqtt)")
                if m.publish(a["mqtt"], fill(a.get("payload", ""), r, value, now_s), a.get("retain", False)) is False:
                    raise OSError("MQTT publish to %s failed (not connected?)" % a["mqtt"])
            elif bus is None:
                raise OSError("no message bus (the assistant is not running)")
            elif "message" in a:
                _count(st, now)
                chat = str(a.get("chat_id") or r["chat_id"])
                ch = "feishu" if chat[:3] == "fs_" else r["channel"] if chat == r["chat_id"] else "telegram"
                if not bus.send(ch, chat, fill(a["message"], r, value, now_s), "text", 0):
                    raise OSError("the outbound queue is full")
            else:  # prompt: a turn for the agent, as a cron job's
                _count(st, now)
                from mimi import commands
                from mimi.storage import sessions

                rid = r["id"]
                if not bus.inbound.put({"channel": "cron", "chat_id": r["chat_id"],
                                        "session": sessions.key_for("cron", "rule_" + rid),
                                        "text": commands.text("rule_prompt", rid, r["name"], fmt(value),
                                                              fill(a["prompt"], r, value, now_s)),
                                        "job": rid, "reply_channel": r["channel"],
                                        "is_group": commands.is_group(r.get("by") or r["chat_id"]),
                                        "by": r.get("by"), "once": False}):
                    raise OSError("the assistant is busy (its queue is full)")
        except Exception as e:  # noqa: BLE001 - one failing action does not stop the others
            errs.append("%s: %s" % (json.dumps(a)[:60], str(e) or type(e).__name__))
    return errs
