"""The rules engine: runs the rules of ``/data/rules.json`` in the I/O thread, no LLM call.

The I/O thread calls ``init(bus)`` once and ``tick(now_ms)`` at every pass of its loop.
A tick:
- reloads the rules when the store saved (``store.changes``) or the file changed on flash
  (one ``stat`` every ``_RULES_RELOAD_MS``); a file that cannot be read is logged and told
  to the owner once, and no rule runs until it is fixed (nothing crashes);
- handles the MQTT messages ``on_mqtt`` queued (``mimi.net.mqtt`` calls it);
- reads each pin a pin rule watches: a level must hold ``debounce_ms`` before it counts,
  and a change of the held level is an edge (``rising``, ``falling``, ``both``). The
  first level read is where it starts: no edge at boot. An interrupt counts the pin's
  edges too, so a press that began and ended while the loop was busy (two looks further
  apart than ``debounce_ms``, the level as before, two edges or more) fires once;
- reads each trigger sensor every ``every_s``: ``above`` fires when the value goes over
  the threshold and not again until it has fallen below threshold - hysteresis (``below``
  the other way round). It starts armed: a value already over fires once;
- once a second, with the clock set (NTP): ``every_s``, ``daily`` (the owner's zone;
  a change of zone moves it) and ``at`` (once, late if the board was off then; the rule
  is removed after it fired). An ``every_s`` or ``daily`` time missed while the board
  was off is not made up.
A trigger whose pin or sensor fails is tried again after ``_RULES_RETRY_MS``.
A rule fires when its conditions hold; then its actions run (both in
``mimi.rules.actions``: pins, messages, prompts, MQTT, and the hourly limits). Each firing
is logged (tag ``rules``). A rule that fails (a refused pin, a sensor that does not
answer, a limit, MQTT down) tells its chat once, and again only after it has worked in
between.

MQTT is optional: without ``mimi.net.mqtt`` (or while it is not set up) MQTT rules wait
and an MQTT action fails; the engine subscribes to its rules' topics when it can (tried
again every ``_RULES_MQTT_RETRY_MS``), and the client hands messages to ``on_mqtt``.
"""
from micropython import const

from mimi import clock, config, log, seam
from mimi.rules import actions, store

# Tunables (config.py holds those shared by several modules and the settings).
_RULES_RELOAD_MS = const(5000)  # how often the file is looked at for a change by hand
_RULES_MQTT_QUEUE = const(8)  # MQTT messages waiting for the next tick
_RULES_MQTT_RETRY_MS = const(30000)  # subscriptions are tried again this often
_RULES_RETRY_MS = const(60000)  # a trigger whose pin or sensor failed is tried again after this
_TAG = const("rules")

# The engine's state (the I/O thread's; on_mqtt only appends to "mqtt").
_st = {"bus": None, "version": -1, "stamp": None, "check_ms": None, "rules": [], "run": {}, "bad_file": None,
       "mqtt": [], "subs": [], "sub_ms": None, "sec": None, "tz": None}


def init(bus):
    """Give the engine the bus its messages and prompts go on (the app's)."""
    _st["bus"] = bus


def reset():
    """Forget the rules and every state (tests; the next tick loads the file afresh)."""
    bus = _st["bus"]
    _st.update({"bus": bus, "version": -1, "stamp": None, "check_ms": None, "rules": [], "run": {},
                "bad_file": None, "mqtt": [], "subs": [], "sub_ms": None, "sec": None, "tz": None})
    actions.reset()


def on_mqtt(topic, payload):
    """An MQTT message arrived (``topic`` str, ``payload`` bytes): queued for the next tick.
    Called by ``mimi.net.mqtt``; never raises. The oldest waiting message goes when
    ``_RULES_MQTT_QUEUE`` wait already."""
    q = _st["mqtt"]
    if len(q) >= _RULES_MQTT_QUEUE:
        q.pop(0)
    q.append((topic, payload))


def topic_matches(filt, topic):
    """True when MQTT topic ``topic`` matches the filter ``filt`` (``+`` one level, ``#``
    the rest; MQTT 3.1.1 section 4.7)."""
    f = filt.split("/")
    t = topic.split("/")
    for i in range(len(f)):
        if f[i] == "#":
            return True
        if i >= len(t) or f[i] != "+" and f[i] != t[i]:
            return False
    return len(f) == len(t)


def _reload(now_ms):
    """Load the rules when they changed; keep each unchanged rule's running state."""
    path = seam.real_path(config.RULES_PATH)
    if _st["version"] == store.changes[0] and _st["check_ms"] is not None and \
            seam.ticks_diff(now_ms, _st["check_ms"]) < _RULES_RELOAD_MS:
        return
    _st["check_ms"] = now_ms
    import os

    try:
        s = os.stat(path)
        stamp = (s[6], s[8])
    except OSError:
        stamp = None
    if _st["version"] == store.changes[0] and stamp == _st["stamp"]:
        return
    _st["version"] = store.changes[0]
    _st["stamp"] = stamp
    try:
        rules = store.list()
    except (ValueError, OSError) as e:
        _st["rules"] = []
        if _st["bad_file"] != str(e):
            _st["bad_file"] = str(e)
            log.error(_TAG, "%s", e)
            _tell_owner("%s: no rule runs until it is fixed (rule_list shows it)" % e)
        return
    _st["bad_file"] = None
    old = _st["run"]
    run = {}
    for r in rules:
        st = old.get(r["id"])
        if st is None or st["rule"] != r:  # a changed rule (paused, edited by hand) starts afresh
            st = {"rule": r, "sent": st["sent"] if st else [], "bad": st["bad"] if st else None}
        run[r["id"]] = st
    for k in old:  # a pin no rule watches any more counts no edges
        if "pin" in old[k] and run.get(k) is not old[k]:
            try:
                old[k]["pin"].irq(None)
            except (AttributeError, OSError, ValueError):
                pass
    _st["run"] = run
    _st["rules"] = rules
    _st["subs"] = [s for s in _st["subs"] if s[1]]
    want = []
    for r in rules:
        t = (r.get("when") or {}).get("mqtt")
        if t and not r.get("paused") and not r.get("off") and t not in want:
            want.append(t)
    have = [s[0] for s in _st["subs"]]
    for t in want:
        if t not in have:
            _st["subs"].append([t, False])
    _st["sub_ms"] = None
    log.info(_TAG, "%d rules", len(rules))


def _subscribe(now_ms):
    """Subscribe to the topics of MQTT rules not subscribed yet (tried every
    ``_RULES_MQTT_RETRY_MS`` while MQTT is missing or down)."""
    todo = [s for s in _st["subs"] if not s[1]]
    if not todo or _st["sub_ms"] is not None and seam.ticks_diff(now_ms, _st["sub_ms"]) < _RULES_MQTT_RETRY_MS:
        return
    first = _st["sub_ms"] is None
    _st["sub_ms"] = now_ms
    m = actions.mqtt()
    for s in todo:
        try:
            if m is None:
                raise OSError("this build has no MQTT client (mimi.net.mqtt)")
            s[1] = m.subscribe(s[0]) is not False
        except Exception as e:  # noqa: BLE001 - not configured, not connected: tried again later
            if first:
                log.warn(_TAG, "mqtt %s: %s", s[0], e)


def tick(now_ms, now_s=None):
    """One pass (see the module doc); ``now_s`` (unix s) for tests. Never raises."""
    try:
        _reload(now_ms)
        if _st["subs"]:
            _subscribe(now_ms)
        q = _st["mqtt"]
        while q:
            topic, payload = q.pop(0)
            for st in _st["run"].values():
                w = st["rule"]["when"]
                if "mqtt" in w and _live(st) and topic_matches(w["mqtt"], topic):
                    try:
                        text = bytes(payload).decode()
                    except (UnicodeError, TypeError):
                        text = ""
                    if w.get("payload") in (None, text):
                        _fire(st, text, now_ms)
        if now_s is None:
            now_s = seam.time_s()
        sec = now_s != _st["sec"]
        _st["sec"] = now_s
        tz = clock.offset_s()
        if tz != _st["tz"]:  # the owner moved: daily times follow
            _st["tz"] = tz
            for st in _st["run"].values():
                if "daily" in st["rule"]["when"]:
                    st.pop("next_s", None)
        for st in list(_st["run"].values()):
            if not _live(st) or "retry_ms" in st and seam.ticks_diff(now_ms, st["retry_ms"]) < 0:
                continue
            st.pop("retry_ms", None)
            w = st["rule"]["when"]
            try:
                if "pin" in w:
                    _pin_trigger(st, w, now_ms)
                elif "sensor" in w:
                    _sensor_trigger(st, w, now_ms)
                elif sec and "mqtt" not in w and clock.synced(now_s):
                    _time_trigger(st, w, now_s, now_ms)
            except Exception as e:  # noqa: BLE001 - a pin or sensor that fails: told once, tried again later
                st["retry_ms"] = seam.ticks_add(now_ms, _RULES_RETRY_MS)
                _failed(st, ["%s" % (str(e) or type(e).__name__)])
    except Exception as e:  # noqa: BLE001 - the I/O thread goes on whatever a rule does
        log.exc(_TAG, "tick", e)


def _live(st):
    r = st["rule"]
    return not r.get("paused") and not r.get("off")


def _pin_trigger(st, w, now_ms):
    p = st.get("pin")
    if p is None:  # set up once: an input (the policy asked), then read as it is
        from mimi.hw import gpio

        pin = store.pin_of(w["pin"])[0]
        pull = w.get("pull")
        gpio.read(pin, None if pull is None else pull)
        p = st["pin"] = seam.pin(pin)
        st["level"] = st["held"] = p.value()
        st["since"] = st["look"] = now_ms
        # Edges counted by an interrupt: a press that starts and ends while the I/O loop
        # is busy elsewhere (a send) leaves the level as it was, but not the count.
        edges = st["edges"] = [0]
        st["seen"] = 0

        def on_edge(_pin):
            edges[0] += 1

        try:
            p.irq(on_edge, p.IRQ_RISING | p.IRQ_FALLING)
        except (AttributeError, OSError, ValueError):  # no interrupt there: the looks alone
            pass
        return
    v = p.value()
    n = st["edges"][0]
    slow = seam.ticks_diff(now_ms, st["look"]) > w["debounce_ms"]
    st["look"] = now_ms
    missed = slow and v == st["held"] == st["level"] and n - st["seen"] >= 2
    st["seen"] = n
    e = w["edge"]
    if missed:  # away and back between two looks, longer apart than the debounce: both edges happened
        _fire(st, 1 if e == "rising" else 0 if e == "falling" else 1 - v, now_ms)
    elif v != st["level"]:
        st["level"] = v
        st["since"] = now_ms
    elif v != st["held"] and seam.ticks_diff(now_ms, st["since"]) >= w["debounce_ms"]:
        st["held"] = v
        if e == "both" or (e == "rising") == (v == 1):
            _fire(st, v, now_ms)


def _sensor_trigger(st, w, now_ms):
    last = st.get("poll_ms")
    if last is not None and seam.ticks_diff(now_ms, last) < w["every_s"] * 1000:
        return
    st["poll_ms"] = now_ms
    from mimi.hw import sensors

    v = sensors.read(w["sensor"], False, now_ms=now_ms)
    if v is None:  # a DS18B20's first conversion: the next poll has it
        st["poll_ms"] = seam.ticks_add(now_ms, 1000 - w["every_s"] * 1000)
        return
    st["value"] = v
    up = "above" in w
    t = w["above"] if up else w["below"]
    h = w["hysteresis"]
    if not st.get("fired"):
        if v > t if up else v < t:
            st["fired"] = True
            _fire(st, v, now_ms)
    elif v < t - h if up else v > t + h:
        st["fired"] = False  # armed again
        log.info(_TAG, "%s armed again (%s)", st["rule"]["id"], actions.fmt(v))


def _time_trigger(st, w, now_s, now_ms):
    nxt = st.get("next_s")
    if nxt is None:
        nxt = now_s + w["every_s"] if "every_s" in w else w["at_s"] if "at_s" in w else \
            clock.next_daily(clock.parse_hhmm(w["daily"]), now_s)
        st["next_s"] = nxt
    if now_s < nxt:
        return
    if "every_s" in w:
        st["next_s"] = nxt + w["every_s"] * ((now_s - nxt) // w["every_s"] + 1)
    elif "daily" in w:
        st["next_s"] = clock.next_daily(clock.parse_hhmm(w["daily"]), now_s)
    _fire(st, clock.iso_local(now_s)[11:16], now_ms)
    if "at_s" in w:  # once: done (and never again, should the file refuse the removal)
        st["next_s"] = 1 << 32
        try:
            store.remove(st["rule"]["id"])
        except ValueError:
            pass


def _fire(st, value, now_ms):
    """Fire rule ``st`` (what fired it: ``value``): conditions, then actions; log it."""
    r = st["rule"]
    try:
        ok, why = actions.check(r, _st["sec"])
    except Exception as e:  # noqa: BLE001 - a condition's sensor that fails
        _failed(st, ["condition: %s" % (str(e) or type(e).__name__)])
        return
    if not ok:
        log.info(_TAG, "%s triggered (%s), conditions not met: %s", r["id"], actions.fmt(value), "; ".join(why))
        return
    errs = actions.act(st, value, _st["bus"], now_ms, _st["sec"])
    log.info(_TAG, "%s fired (%s)%s", r["id"], actions.fmt(value), ": " + "; ".join(errs) if errs else "")
    if errs:
        _failed(st, errs)
    elif st["bad"]:
        st["bad"] = None
        log.info(_TAG, "%s works again", r["id"])


def _failed(st, errs):
    """Tell the rule's chat that it failed, once (until it works again)."""
    r = st["rule"]
    if st["bad"] is not None:
        return
    st["bad"] = "; ".join(errs)
    log.warn(_TAG, "%s failed: %s", r["id"], st["bad"])
    from mimi import commands

    _send(r["channel"], r["chat_id"], commands.text("rule_failed", r["id"], r["name"], st["bad"][:300]))


def _tell_owner(text):
    from mimi import commands

    o = commands.owner()
    if o:
        _send("feishu" if o[:3] == "fs_" else "telegram", o, text)


def _send(channel, chat, text):
    bus = _st["bus"]
    if bus is None or not bus.send(channel, chat, text, "text", 0):
        log.warn(_TAG, "not told (no room): %s", text[:80])


def failing():
    """``{rule id: why}`` for the rules whose last firing failed (``/rules`` shows it)."""
    out = {}
    for k in _st["run"]:
        if _st["run"][k]["bad"]:
            out[k] = _st["run"][k]["bad"]
    return out
