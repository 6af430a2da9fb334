"""Home Assistant MQTT discovery for the board's pin aliases (issue 18), over ``mimi.net.mqtt``.

Each pin alias of the configured board (``mimi.hw.datasheets.aliases()``, the datasheet's
Pin Aliases table) becomes an entity of one Home Assistant device, ``mimi <id>``:
- an output (kind ``out``; ``ws2812``, the RGB LED, lit ``HW_RGB_ON``) is a ``switch``:
  Home Assistant's ``ON``/``OFF`` on its command topic switch the pin through the pin
  policy (``mimi.hw.gpio``, ``mimi.hw.pins``: a refused pin stays as it is, logged);
- an input (``in``) is a ``binary_sensor``, read every ``_HASS_INPUT_EVERY_MS``;
- a sensor (``dht22``, ``ds18b20``, ``adc``: read by ``mimi.hw.sensors.read(alias)``, a
  number or ``{quantity: number}``, when that module is on the board) is a ``sensor`` per
  quantity with its unit and device class, read every ``_HASS_SENSOR_EVERY_MS``.
Aliases of one pin make one entity, named by the first ASCII alias. Its object id is the
alias (``gpio<n>`` when no alias is ASCII).

Topics (``<node>`` is ``mimi_<id>``, ``<id>`` the chip's id in hex):
- ``homeassistant/<component>/<node>/<object>/config``: the discovery config (JSON,
  retained), published after every connect and when Home Assistant says ``online`` on
  ``homeassistant/status`` (it has restarted);
- ``mimi/<id>/<object>/state``: ``ON``/``OFF`` or the number (retained), published after
  every connect and whenever it changes (a tool or a rule switching the pin, a button);
- ``mimi/<id>/<object>/set``: commands (subscribed);
- ``mimi/<id>/status``: availability (``mimi.net.mqtt``'s Last Will).
The datasheets are looked at every ``_HASS_SENSOR_EVERY_MS``: when they changed,
everything is announced again. An alias removed from them keeps its retained config in
Home Assistant until it is deleted there. Whoever may publish on the broker can switch
the aliased outputs (within the pin policy): the broker's users and passwords guard them.
Source: https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery,
https://www.home-assistant.io/integrations/switch.mqtt/, binary_sensor.mqtt/, sensor.mqtt/.
"""
import json

from micropython import const

from mimi import config, log
from mimi.net import mqtt

# Tunables (config.py holds those shared by several modules and the settings).
_HASS_INPUT_EVERY_MS = const(250)  # inputs and outputs are looked at this often
_HASS_SENSOR_EVERY_MS = const(60000)  # sensors are read this often
_HASS_PREFIX = const("homeassistant")  # Home Assistant's discovery prefix (its default)
_TAG = const("hass")
# A sensor kind's quantities: (quantity = device class, unit), as Home Assistant names them.
# The kinds and names are mimi.hw.sensors' (an ADC reads in mV, a unit Home Assistant's
# voltage class takes).
_QUANTITIES = {"dht22": (("temperature", "°C"), ("humidity", "%")), "dht11": (("temperature", "°C"), ("humidity", "%")),
               "ds18b20": (("temperature", "°C"),), "adc": (("voltage", "mV"),)}

# object id -> [component, pin, kind, alias, last published state or None, quantity or None]
_ents = {}
_due = [0, 0]  # ticks_ms when the inputs, the sensors are looked at next (set by announce)
_stamp = [None]  # the datasheets' files (size, time) when the entities were made


def start():
    """Hook into ``mimi.net.mqtt``: announce after each connect, take the commands."""
    from mimi.hw import gpio  # noqa: F401 - loaded now (mimi.app.init's thread), used in the I/O thread

    if announce not in mqtt.on_connect:
        mqtt.on_connect.append(announce)
        mqtt.handlers.append(on_message)
    mqtt.subscribe("mimi/%s/+/set" % mqtt.node_id())
    mqtt.subscribe(_HASS_PREFIX + "/status")


def entities():
    """Build ``_ents`` from the configured board's aliases (see the module doc); returns it."""
    from mimi.hw import datasheets, pins

    _ents.clear()
    _stamp[0] = datasheets.index()[0]
    al = datasheets.aliases()
    seen = {}
    for a in sorted(al):
        p, kind = al[a]
        if kind in _QUANTITIES:
            comp = "sensor"
        elif kind == "in":
            comp = "binary_sensor"
        else:  # out, ws2812
            comp = "switch"
        ascii_name = all(ord(ch) < 128 for ch in a)
        if p in seen and (not ascii_name or seen[p][1]):
            continue  # the pin has its entity, named by an ASCII alias
        try:
            pins.check(p)
        except ValueError as e:  # PinRefused: the owner's policy keeps it out of Home Assistant too
            log.warn(_TAG, "%s left out: %s", a, e)
            continue
        if p in seen:  # the first alias was not ASCII: this one names the entity
            for o in seen[p][0]:
                _ents.pop(o, None)
        obj = a if ascii_name else "gpio%d" % p
        objs = []
        for q in _QUANTITIES.get(kind, (None,)):
            o = obj if q is None else "%s_%s" % (obj, q[0])
            _ents[o] = [comp, p, kind, a, None, q]
            objs.append(o)
        seen[p] = (objs, ascii_name)
    return _ents


def config_of(obj):
    """The discovery config of entity ``obj`` as a dict (see the module doc)."""
    from mimi import VERSION

    comp, p, kind, alias, _, q = _ents[obj]
    nid = mqtt.node_id()
    base = "mimi/%s/%s" % (nid, obj)
    c = {"name": alias.replace("_", " ") + ("" if q is None else " " + q[0]), "unique_id": "mimi_%s_%s" % (nid, obj),
         "state_topic": base + "/state", "availability_topic": "mimi/%s/status" % nid,
         "device": {"identifiers": ["mimi_" + nid], "name": "mimi " + nid, "manufacturer": "mimi",
                    "model": config.get("board"), "sw_version": VERSION},
         "origin": {"name": "mimi", "sw_version": VERSION}}  # who sent the discovery (Home Assistant logs it)
    if comp == "switch":
        c["command_topic"] = base + "/set"
    if q is not None:
        c["device_class"], c["unit_of_measurement"], c["state_class"] = q[0], q[1], "measurement"
    return c


def announce():
    """Publish every entity's discovery config and its state (after a connect)."""
    nid = mqtt.node_id()
    for obj in entities():
        mqtt.publish("%s/%s/mimi_%s/%s/config" % (_HASS_PREFIX, _ents[obj][0], nid, obj), json.dumps(config_of(obj)),
                     True)
    from mimi import seam

    now = seam.ticks_ms()  # the next looks count from now (ticks wrap: no fixed "long ago")
    _due[0], _due[1] = seam.ticks_add(now, _HASS_INPUT_EVERY_MS), seam.ticks_add(now, _HASS_SENSOR_EVERY_MS)
    look(True)


def _value(e):
    """Entity ``e``'s state as published: "ON"/"OFF", a number's text, or None (unknown)."""
    from mimi.hw import gpio

    comp, p, kind, alias, _, q = e
    if comp == "sensor":
        from mimi.hw import sensors

        # "room.humidity" names a DHT's second quantity; wait=False: a DS18B20's last
        # reading while its 750 ms conversion runs (this is the I/O thread)
        v = sensors.read(alias + ".humidity" if q[0] == "humidity" else alias, wait=False)
        return None if v is None else str(v)
    if comp == "switch":
        mode, v = gpio.state(p) or ("out", 0)  # what mimi drives: no pin is touched
        on = v == 1 if mode == "out" else any(v) if mode == "rgb" else mode == "pwm" and v[0] > 0
        return "ON" if on else "OFF"
    return "ON" if gpio.read(p)[1] else "OFF"  # an input (made one on its first read)


def look(sensors_too=False):
    """Publish the states that changed since they were last published (all after a
    connect); sensors only when ``sensors_too``."""
    for obj in _ents:
        e = _ents[obj]
        if e[0] == "sensor" and not sensors_too:
            continue
        try:
            v = _value(e)
        except ImportError:
            continue
        except Exception as e2:  # noqa: BLE001 - a sensor that fails now is tried at its next time
            log.exc(_TAG, obj, e2)
            continue
        if v is not None and v != e[4] and mqtt.publish("mimi/%s/%s/state" % (mqtt.node_id(), obj), v, True):
            e[4] = v


def tick(now):
    """The I/O loop's step: look at the pins every ``_HASS_INPUT_EVERY_MS``; every
    ``_HASS_SENSOR_EVERY_MS`` the sensors, and the datasheets (an alias added or changed,
    in a chat or by hand: everything is announced again)."""
    c = mqtt.client()
    if c is None or c.state != "connected":
        return
    from mimi import seam

    if seam.ticks_diff(now, _due[0]) >= 0:
        s = seam.ticks_diff(now, _due[1]) >= 0
        _due[0] = seam.ticks_add(now, _HASS_INPUT_EVERY_MS)
        if s:
            _due[1] = seam.ticks_add(now, _HASS_SENSOR_EVERY_MS)
            from mimi.hw import datasheets

            if datasheets.index()[0] != _stamp[0]:
                return announce()
        look(s)


def on_message(topic, payload):
    """``mqtt.handlers``: a command (``ON``/``OFF``) for a switch, or Home Assistant's
    ``online`` (it restarted: announce again). Other topics are not this module's."""
    if topic == _HASS_PREFIX + "/status":
        if payload == b"online":
            announce()
        return
    parts = topic.split("/")
    if len(parts) != 4 or parts[0] != "mimi" or parts[1] != mqtt.node_id() or parts[3] != "set":
        return
    e = _ents.get(parts[2])
    if e is None or e[0] != "switch":
        return
    cmd = payload.strip().upper()
    if cmd not in (b"ON", b"OFF"):
        log.warn(_TAG, "%s: not ON or OFF", parts[2])
        return
    from mimi.hw import gpio

    try:
        if e[2] == "ws2812":
            gpio.rgb(e[1], *(config.HW_RGB_ON if cmd == b"ON" else (0, 0, 0)))
        else:
            gpio.write(e[1], 1 if cmd == b"ON" else 0)
    except ValueError as err:  # PinRefused: the policy changed since the announce
        log.warn(_TAG, "%s: %s", parts[2], err)
    e[4] = None  # publish its state now, switched or not: Home Assistant shows what is
    look()
