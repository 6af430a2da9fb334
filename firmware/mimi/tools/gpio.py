"""GPIO tools (group ``gpio``) and the datasheet search tool (group ``file``).

``gpio_write``, ``gpio_read``, ``gpio_read_all``, ``gpio_pwm``, ``gpio_rgb`` act through
``mimi.hw.gpio``, so every pin passes the board's policy (``mimi.hw.pins``): a refused pin
comes back as an error result naming the rule, a risky one as a result with a warning.
Channels withhold the ``gpio`` group where the owner has not allowed it (group chats by
default): ``registry.offered(denied_groups)``; the fast path takes the same groups.

``hardware_docs`` reads only ``/data/datasheets``; it is in group ``file`` because it
exposes file contents, so it is withheld wherever file tools are.
"""
from mimi import config
from mimi.tools import registry

_PIN = {"type": ["integer", "string"], "description": "GPIO number, or a pin alias (porch_light)"}


def _pin(v):
    """A GPIO number from an int, ``"GPIO13"``/``"13"``, or an alias of the configured board."""
    if isinstance(v, int):
        return v
    from mimi.hw import datasheets

    p = datasheets.parse_pin(v)
    if p is not None:
        return p
    al = datasheets.aliases()
    a = al.get(datasheets.norm_alias(v))
    if a is None:
        raise ValueError("'%s' is neither a GPIO number nor a pin alias (aliases: %s)"
                         % (v, ", ".join(sorted(al)) or "none"))
    return a[0]


def _names():
    """``{pin: "alias, other"}`` for the configured board, for friendlier results."""
    from mimi.hw import datasheets

    out = {}
    for a, (pin, _) in sorted(datasheets.aliases().items()):
        out[pin] = out[pin] + ", " + a if pin in out else a
    return out


def _line(pin, mode, value, warn=None):
    from mimi.hw import gpio

    name = _names().get(pin)
    s = "GPIO%d%s: %s" % (pin, " (%s)" % name if name else "", gpio.describe(mode, value))
    return s + ("\nwarning: " + warn if warn else "")


def _write(args, ctx):
    from mimi.hw import gpio

    pin = _pin(args["pin"])
    level, warn = gpio.write(pin, args["level"])
    return _line(pin, "out", level, warn)


def _read(args, ctx):
    from mimi.hw import gpio

    pin = _pin(args["pin"])
    mode, value, warn = gpio.read(pin, args.get("pull"))
    return _line(pin, mode, value, warn)


def _read_all(args, ctx):
    from mimi.hw import gpio, pins

    rows = gpio.read_all()
    lines = [_line(p, m, v) for p, m, v in rows] or ["no pin set up by mimi yet"]
    lines.append("policy:\n" + pins.summary())
    return "\n".join(lines)


def _pwm(args, ctx):
    from mimi.hw import gpio

    pin = _pin(args["pin"])
    freq = args.get("freq_hz", config.HW_PWM_FREQ_DEFAULT_HZ)
    warn = gpio.pwm(pin, args["duty"], freq)
    return _line(pin, "pwm", (args["duty"], freq), warn)


def _rgb(args, ctx):
    from mimi.hw import gpio

    pin = _pin(args["pin"])
    c = (args["r"], args["g"], args["b"])
    warn = gpio.rgb(pin, c[0], c[1], c[2])
    return _line(pin, "rgb", c, warn)


def _docs(args, ctx):
    from mimi.hw import datasheets, retrieval

    q = args["query"].strip()
    if not q:
        raise ValueError("query is empty: give a few keywords (e.g. 'rgb led pin')")
    notes, _ = retrieval.build(q, config.HW_DOCS_TOOL_BYTES, config.HW_DOCS_TOOL_CHUNKS)
    if notes:
        return notes
    al = datasheets.aliases()
    names = ", ".join("%s=GPIO%d" % (a, al[a][0]) for a in sorted(al)) or "none"
    return "nothing matched '%s'.\ndatasheets:\n%s\npin aliases: %s" % (q, datasheets.files_text(), names)


def register_all():
    """Register the GPIO tools and ``hardware_docs`` with the registry."""
    T = registry.Tool
    reg = registry.register
    reg(T("gpio_write", "Drive a GPIO pin as an output at level 0 or 1 (stops PWM on it).",
          {"type": "object", "properties": {"pin": _PIN, "level": {"type": "integer", "enum": [0, 1]}},
           "required": ["pin", "level"]}, _write, "gpio"))
    reg(T("gpio_read", "Read a GPIO pin's level. A pin mimi drives keeps driving and reads back "
          "its level; any other pin becomes an input first (optional pull).",
          {"type": "object", "properties": {"pin": _PIN, "pull": {"type": "string", "enum": ["up", "down", "none"]}},
           "required": ["pin"]}, _read, "gpio"))
    reg(T("gpio_read_all", "List the pins mimi has set up with their state now, and which pins the "
          "board's policy allows, refuses or warns about.",
          {"type": "object", "properties": {}}, _read_all, "gpio"))
    reg(T("gpio_pwm", "PWM on a pin (LED brightness, motor speed): duty 0-100 %%, freq_hz 1-%d "
          "(default %d). gpio_write on the pin stops it." % (config.HW_PWM_FREQ_MAX_HZ, config.HW_PWM_FREQ_DEFAULT_HZ),
          {"type": "object", "properties": {"pin": _PIN, "duty": {"type": "number"}, "freq_hz": {"type": "integer"}},
           "required": ["pin", "duty"]}, _pwm, "gpio"))
    reg(T("gpio_rgb", "Set an addressable RGB LED (WS2812, such as the board's onboard LED) to a "
          "colour: r, g, b 0-255 each; 0,0,0 is off.",
          {"type": "object", "properties": {"pin": _PIN, "r": {"type": "integer"}, "g": {"type": "integer"},
                                            "b": {"type": "integer"}},
           "required": ["pin", "r", "g", "b"]}, _rgb, "gpio"))
    reg(T("hardware_docs", "Search the board's datasheets (/data/datasheets) by keywords; returns "
          "the best sections and the pin aliases named.",
          {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
          _docs, "file"))
