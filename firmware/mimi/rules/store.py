"""The rule store ``/data/rules.json``: automations taught in chat, kept as data (never code).

The file is ``{"seq": n, "rules": [rule, ...]}``; a rule (docs/automations.md has the
schema with examples)::

    {"id": "r3", "name": "fan when hot", "when": {"daily": "08:00"},
     "if": [{"sensor": "room", "above": 28}], "do": [{"pin": "fan", "value": 1},
     {"message": "It is {room} °C: fan on"}], "chat_id": "123", "channel": "telegram",
     "by": "123", "paused": false}

``when`` (one trigger): ``{"every_s": 600}``; ``{"daily": "HH:MM"}`` or ``{"at":
"YYYY-MM-DD HH:MM"}`` (stored as ``at_s``) in the owner's zone (``mimi.clock``);
``{"pin": P, "edge": "rising"|"falling"|"both", "debounce_ms": 50, "pull": "up"}``;
``{"sensor": S, "above"|"below": x, "hysteresis": h, "every_s": 60}``; ``{"mqtt":
"topic/filter", "payload": "on"}``. ``if`` (all must hold): ``{"between": ["22:00",
"06:00"]}``, ``{"sensor": S, "above"|"below": x}``, ``{"pin": P, "is": 0}``. ``do`` (in
order): ``{"pin": P, "value": 0|1}``, ``{"pwm": P, "duty": 0-100, "freq_hz": f}``,
``{"message": "text {value}", "chat_id": c}``, ``{"prompt": "text"}``, ``{"mqtt":
"topic", "payload": "text", "retain": false}``. P is a GPIO number or a Pin Aliases name;
S a sensor name (``mimi.hw.sensors``).

``validate(spec, hw=True)`` checks the shape, the limits (``config.RULES_*`` and the
``_RULES_*`` here) and, with ``hw``, the pins and sensors against the datasheets and the
pin policy (a refused pin raises ``PinRefused`` naming its rule). Loading checks the
shape only: a pin the owner's policy refuses later makes the rule fail when it fires
(the engine tells the owner once), it is not dropped. A rule whose shape is damaged (a
hand edit, a torn write) is switched off (``off``: why) and kept for the owner to see;
a file that is not JSON raises ``ValueError`` and is left as it is. Every change is an
atomic rewrite (``mimi.storage.fs``) under one lock; ``changes[0]`` counts them, so
the engine knows when to reload.
"""
import json

from micropython import const

from mimi import clock, config, log, seam
from mimi.storage import fs

# Tunables (config.py holds those shared by several modules and the settings).
_RULES_FILE_MAX_BYTES = const(12288)
_RULES_TEXT_MAX_BYTES = const(512)  # a message or a prompt
_RULES_NAME_MAX_BYTES = const(64)
_RULES_TOPIC_MAX_BYTES = const(128)
_RULES_PARTS_MAX = const(4)  # conditions, and actions, in one rule
_RULES_SENSOR_EVERY_MIN_S = const(5)  # a sensor trigger reads its sensor this often at most
_RULES_SENSOR_EVERY_S = const(60)  # ... by default
_RULES_DEBOUNCE_MS = const(50)
_RULES_DEBOUNCE_MAX_MS = const(2000)
_RULES_EVERY_MAX_S = const(31622400)  # 366 days

_TAG = const("rules")
_lock = seam.allocate_lock()
changes = [0]  # bumped at every save: the engine reloads when it moved


def _load():
    """``(seq, rules)``; ``ValueError`` when the file is not a rule file (left as it is)."""
    try:
        text, cut, size = fs.read_text(config.RULES_PATH, _RULES_FILE_MAX_BYTES)
    except fs.NotFound:
        return 0, []
    if cut:
        raise ValueError("%s is %d bytes, over %d" % (config.RULES_PATH, size, _RULES_FILE_MAX_BYTES))
    try:
        d = json.loads(text)
        rules = d["rules"]
        seq = int(d.get("seq", 0))
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        rules = None
    if not isinstance(rules, type([])):  # this module's list() is not the built-in
        raise ValueError("%s is damaged (not a rule file); fix or delete it" % config.RULES_PATH)
    keep = []
    changed = False
    for r in rules:
        if not isinstance(r, dict) or not isinstance(r.get("id"), str) or not r["id"]:
            log.warn(_TAG, "dropped a damaged rule: %s", json.dumps(r)[:200])
            changed = True
            continue
        if not r.get("off"):
            try:
                validate(r, False)
            except (ValueError, TypeError, AttributeError, OverflowError) as e:
                r["off"] = str(e)[:120] or "damaged"
                log.warn(_TAG, "rule %s is damaged, switched off: %s", r["id"], r["off"])
                changed = True
        keep.append(r)
    if changed:
        _save(seq, keep)
    return seq, keep


def _save(seq, rules):
    fs.write(config.RULES_PATH, json.dumps({"seq": seq, "rules": rules}, separators=(",", ":")))
    changes[0] += 1


def _text(v, what, cap=_RULES_TEXT_MAX_BYTES):
    if not isinstance(v, str) or not v.strip():
        raise ValueError("%s must be a non-empty text" % what)
    if len(v.encode()) > cap:
        raise ValueError("%s is over %d bytes" % (what, cap))
    return v.strip()


def _num(v, what, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or \
            (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError("%s must be a number%s" % (what, "" if lo is None else " from %s to %s" % (lo, hi)))
    return v


def _keys(d, what, allowed):
    if not isinstance(d, dict):
        raise ValueError("%s must be an object" % what)
    for k in d:
        if k not in allowed:
            raise ValueError("%s: unknown field '%s' (expected: %s)" % (what, k, ", ".join(allowed)))


def pin_of(ref, out=False):
    """``(gpio, kind)`` for a pin reference: a GPIO number, ``"GPIO4"``/``"4"``, or an alias
    of the configured board. ``out``: it will be driven, so an input or sensor alias is
    refused. Raises ``ValueError``; ``PinRefused`` when the policy refuses the pin."""
    from mimi.hw import datasheets as ds, pins

    if isinstance(ref, int) and not isinstance(ref, bool):
        p, kind = ref, "out" if out else "in"
    else:
        p = ds.parse_pin(ref) if isinstance(ref, str) else None
        kind = "out" if out else "in"
        if p is None:
            al = ds.aliases()
            p, kind = al.get(ds.norm_alias(ref) if isinstance(ref, str) else "", (None, None))
            if p is None:
                raise ValueError("'%s' is neither a GPIO number nor a pin alias (aliases: %s)"
                                 % (ref, ", ".join(sorted(al)) or "none"))
    if out and kind != "out":
        raise ValueError("%s is %s: a rule reads it, never drives it" % (ref, "an input" if kind == "in" else
                                                                        "a %s sensor" % kind))
    pins.check(p)
    return p, kind


def _pinref(v, what, hw, out=False):
    if not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 48 or isinstance(v, str) and v.strip()):
        raise ValueError("%s must be a GPIO number or a pin alias" % what)
    if hw:
        pin_of(v, out)


def _sensor(v, hw):
    if not isinstance(v, str) or not v.strip():
        raise ValueError("sensor must be a sensor name: mcu, an alias, or kind:GPIO such as adc:4")
    if hw:
        from mimi.hw import sensors

        sensors.resolve(v)


def _topic(v, what, filt):
    t = _text(v, what, _RULES_TOPIC_MAX_BYTES)
    if "\x00" in t or (not filt and ("+" in t or "#" in t)) or filt and "#" in t[:-1]:
        raise ValueError("%s '%s' is not a valid MQTT topic%s" % (what, t, " filter" if filt else " (no wildcards)"))
    return t


def _threshold(d, what):
    """The ``above`` or ``below`` of a sensor trigger or condition."""
    if ("above" in d) == ("below" in d):
        raise ValueError("%s needs one of above or below (a number)" % what)
    _num(d.get("above", d.get("below")), what + " threshold")


def validate(spec, hw=True):
    """Check a rule (see the module doc) and return it as it is stored (a new dict,
    without ``id``). ``hw``: also check pins and sensors now (datasheets, pin policy).

    Raises ``ValueError`` naming the first problem (``PinRefused`` for a refused pin).
    """
    _keys(spec, "a rule", ("id", "name", "when", "if", "do", "chat_id", "channel", "by", "paused", "off",
                           "created_s"))
    r = {"name": _text(spec.get("name"), "name", _RULES_NAME_MAX_BYTES)}
    w = spec.get("when")
    if not isinstance(w, dict) or not w:
        raise ValueError("when is needed: one trigger, e.g. {\"daily\": \"08:00\"} or {\"pin\": \"door\", "
                         "\"edge\": \"falling\"}")
    w = dict(w)
    if "every_s" in w and len(w) == 1:
        n = _num(w["every_s"], "every_s", config.RULES_EVERY_MIN_S, _RULES_EVERY_MAX_S)
        if n != int(n):
            raise ValueError("every_s must be whole seconds")
        w["every_s"] = int(n)
    elif "daily" in w:
        _keys(w, "a daily trigger", ("daily",))
        m = clock.parse_hhmm(w["daily"])
        w["daily"] = "%02d:%02d" % (m // 60, m % 60)
    elif "at" in w or "at_s" in w:
        _keys(w, "an at trigger", ("at", "at_s"))
        if "at_s" not in w:
            w["at_s"] = clock.parse_local(w.pop("at"))
        _num(w["at_s"], "at_s", 0, 4294967295)
        w["at_s"] = int(w["at_s"])
        w.pop("at", None)
    elif "pin" in w:
        _keys(w, "a pin trigger", ("pin", "edge", "debounce_ms", "pull"))
        _pinref(w["pin"], "pin", hw)
        w.setdefault("edge", "rising")
        if w["edge"] not in ("rising", "falling", "both"):
            raise ValueError("edge must be rising, falling or both")
        w["debounce_ms"] = int(_num(w.get("debounce_ms", _RULES_DEBOUNCE_MS), "debounce_ms", 0, _RULES_DEBOUNCE_MAX_MS))
        if w.get("pull", "none") not in ("up", "down", "none"):
            raise ValueError("pull must be up, down or none")
    elif "sensor" in w:
        _keys(w, "a sensor trigger", ("sensor", "above", "below", "hysteresis", "every_s"))
        _sensor(w["sensor"], hw)
        _threshold(w, "a sensor trigger")
        w["hysteresis"] = _num(w.get("hysteresis", 0), "hysteresis", 0, 1000000)
        w["every_s"] = int(_num(w.get("every_s", _RULES_SENSOR_EVERY_S), "every_s", _RULES_SENSOR_EVERY_MIN_S,
                                86400))
    elif "mqtt" in w:
        _keys(w, "an mqtt trigger", ("mqtt", "payload"))
        w["mqtt"] = _topic(w["mqtt"], "mqtt", True)
        if "payload" in w and not isinstance(w["payload"], str):
            raise ValueError("payload must be a text")
    elif "every_s" in w:
        raise ValueError("an every_s trigger has no other field")
    else:
        raise ValueError("when: unknown trigger %s (expected every_s, daily, at, pin, sensor or mqtt)"
                         % json.dumps(w)[:80])
    r["when"] = w
    conds = spec.get("if") or []
    if not isinstance(conds, type([])) or len(conds) > _RULES_PARTS_MAX:
        raise ValueError("if must be a list of at most %d conditions" % _RULES_PARTS_MAX)
    for c in conds:
        if isinstance(c, dict) and "between" in c:
            _keys(c, "a between condition", ("between",))
            b = c["between"]
            if not isinstance(b, type([])) or len(b) != 2:
                raise ValueError("between needs two times of day: [\"22:00\", \"06:00\"]")
            clock.parse_hhmm(b[0])
            clock.parse_hhmm(b[1])
        elif isinstance(c, dict) and "sensor" in c:
            _keys(c, "a sensor condition", ("sensor", "above", "below"))
            _sensor(c["sensor"], hw)
            _threshold(c, "a sensor condition")
        elif isinstance(c, dict) and "pin" in c:
            _keys(c, "a pin condition", ("pin", "is"))
            _pinref(c["pin"], "pin", hw)
            if c.get("is") not in (0, 1) or isinstance(c.get("is"), bool):
                raise ValueError("a pin condition needs is: 0 or 1")
        else:
            raise ValueError("unknown condition %s (expected between, sensor or pin)" % json.dumps(c)[:80])
    if conds:
        r["if"] = conds
    acts = spec.get("do")
    if not isinstance(acts, type([])) or not 1 <= len(acts) <= _RULES_PARTS_MAX:
        raise ValueError("do must be a list of 1 to %d actions" % _RULES_PARTS_MAX)
    for a in acts:
        if isinstance(a, dict) and "pin" in a:
            _keys(a, "a pin action", ("pin", "value"))
            _pinref(a["pin"], "pin", hw, True)
            if a.get("value") not in (0, 1) or isinstance(a.get("value"), bool):
                raise ValueError("a pin action needs value: 0 or 1")
        elif isinstance(a, dict) and "pwm" in a:
            _keys(a, "a pwm action", ("pwm", "duty", "freq_hz"))
            _pinref(a["pwm"], "pwm", hw, True)
            _num(a.get("duty"), "duty", 0, 100)
            if "freq_hz" in a:
                _num(a["freq_hz"], "freq_hz", 1, config.HW_PWM_FREQ_MAX_HZ)
        elif isinstance(a, dict) and "message" in a:
            _keys(a, "a message action", ("message", "chat_id"))
            _text(a["message"], "message")
        elif isinstance(a, dict) and "prompt" in a:
            _keys(a, "a prompt action", ("prompt",))
            _text(a["prompt"], "prompt")
        elif isinstance(a, dict) and "mqtt" in a:
            _keys(a, "an mqtt action", ("mqtt", "payload", "retain"))
            _topic(a["mqtt"], "mqtt", False)
            if not isinstance(a.get("payload", ""), str) or len(a.get("payload", "").encode()) > _RULES_TEXT_MAX_BYTES:
                raise ValueError("payload must be a text of at most %d bytes" % _RULES_TEXT_MAX_BYTES)
            if not isinstance(a.get("retain", False), bool):
                raise ValueError("retain must be true or false")
        else:
            raise ValueError("unknown action %s (expected pin, pwm, message, prompt or mqtt)" % json.dumps(a)[:80])
    r["do"] = acts
    chat = spec.get("chat_id")
    r["chat_id"] = "" if chat is None or isinstance(chat, bool) else str(chat).strip()
    r["channel"] = spec.get("channel") or ("feishu" if r["chat_id"][:3] == "fs_" else "telegram")
    if r["channel"] not in ("telegram", "feishu", "cli"):
        raise ValueError("channel must be telegram, feishu or cli")
    if not r["chat_id"]:
        raise ValueError("chat_id is needed: the chat the rule reports to")
    if isinstance(spec.get("by"), str) and spec["by"]:
        r["by"] = spec["by"][:24]
    if spec.get("paused") is True:
        r["paused"] = True
    return r


def uses(rule, key):
    """True when the rule's trigger, a condition or an action has ``key`` (``"pin"``,
    ``"pwm"``, ``"sensor"``, ``"mqtt"``, ``"message"``...)."""
    for part in [rule.get("when") or {}] + (rule.get("if") or []) + (rule.get("do") or []):
        if isinstance(part, dict) and key in part:
            return True
    return False


def add(spec):
    """Validate ``spec`` (pins and sensors too) and store it as a new rule; return it (with
    its ``id``, ``"r7"``). Raises ``ValueError`` (bad rule, ``config.RULES_MAX`` rules
    already, damaged file): nothing stored."""
    r = validate(spec)
    with _lock:
        seq, rules = _load()
        if len(rules) >= config.RULES_MAX:
            raise ValueError("there are already %d rules, the most there may be; remove one first" % len(rules))
        for o in rules:
            if o.get("name") == r["name"]:
                raise ValueError("a rule named '%s' exists already (%s): remove it or pick another name"
                                 % (r["name"], o["id"]))
        seq += 1
        r["id"] = "r%d" % seq
        r["created_s"] = seam.time_s() if clock.synced() else None
        rules.append(r)
        n = len(json.dumps({"seq": seq, "rules": rules}, separators=(",", ":")).encode())
        if n > _RULES_FILE_MAX_BYTES:
            raise ValueError("the rule file would be %d bytes, over %d: shorten the texts" % (n, _RULES_FILE_MAX_BYTES))
        _save(seq, rules)
    log.info(_TAG, "added %s (%s)", r["id"], r["name"])
    return r


def _change(rule_id, fn):
    with _lock:
        seq, rules = _load()
        for i in range(len(rules)):
            if rules[i].get("id") == rule_id:
                r = fn(rules, i)
                _save(seq, rules)
                return r
    raise ValueError("no rule with id '%s' (rule_list shows them)" % rule_id)


def remove(rule_id):
    """Delete rule ``rule_id``; return it. ``ValueError`` when there is none."""
    return _change(rule_id, lambda rules, i: rules.pop(i))


def pause(rule_id, paused=True):
    """Pause (or resume, ``paused`` False) rule ``rule_id``; return it. A paused rule keeps
    its place but never fires. ``ValueError`` when there is none."""
    def fn(rules, i):
        r = rules[i]
        if paused:
            r["paused"] = True
        else:
            r.pop("paused", None)
        return r

    return _change(rule_id, fn)


def get(rule_id):
    """The rule ``rule_id`` (dict), or None."""
    for r in list():
        if r.get("id") == rule_id:
            return r
    return None


def list():
    """All rules (dicts), in the order they were added. ``ValueError`` if the file is damaged."""
    with _lock:
        return _load()[1]


def _show(v):
    """``v`` as compact JSON for people: text as it is (CPython's json escapes all but ASCII)."""
    if isinstance(v, dict):
        return "{" + ",".join('"%s":%s' % (k, _show(v[k])) for k in v) + "}"
    if isinstance(v, type([])):
        return "[" + ",".join(_show(x) for x in v) + "]"
    if isinstance(v, str):
        return '"%s"' % v.replace('"', '\\"')
    return json.dumps(v)


def line(r):
    """One rule in a line: ``r1 "fan when hot" (paused): when {"daily":"08:00"} if [...] do [...]``."""
    state = " (switched off, damaged: %s)" % r["off"] if r.get("off") else " (paused)" if r.get("paused") else ""
    w = r.get("when") or {}
    if "at_s" in w:
        w = {"at": clock.iso_local(w["at_s"])}
    cond = " if " + _show(r["if"]) if r.get("if") else ""
    return "%s \"%s\"%s: when %s%s do %s -> %s %s" % (
        r.get("id"), r.get("name"), state, _show(w), cond, _show(r.get("do")), r.get("channel"), r.get("chat_id"))
