"""GPIO tools (group ``gpio``) and the datasheet search tool (group ``file``).

``gpio_write``, ``gpio_read``, ``gpio_read_all``, ``gpio_pwm``, ``gpio_rgb`` act through
``mimi.hw.gpio``, so every pin passes the board's policy (``mimi.hw.pins``): a refused pin
comes back as an error result naming the rule, a risky one as a result with a warning.
Channels withhold the ``gpio`` group where the owner has not allowed it (group chats by
default): ``registry.offered(denied_groups)``; the fast path takes the same groups.

``hardware_docs`` reads only ``/data/datasheets``; it is in group ``file`` because it
exposes file contents, so it is withheld wherever file tools are.

One handler serves all six tools (a function each costs RAM): the registry has already
checked the arguments against the tool's schema, and no two tools take the same set, so
the arguments say which tool was called.
"""
from micropython import const

from mimi import config
from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_HW_DOCS_TOOL_BYTES = const(4096)  # a hardware_docs result
_HW_DOCS_TOOL_CHUNKS = const(4)


def _run(args, ctx):
    from mimi.hw import datasheets as ds, gpio

    if "query" in args:  # hardware_docs
        from mimi.hw import retrieval

        q = args["query"].strip()
        if not q:
            raise ValueError("query is empty: give a few keywords (e.g. 'rgb led pin')")
        notes = retrieval.for_message(q, _HW_DOCS_TOOL_BYTES, _HW_DOCS_TOOL_CHUNKS)
        if notes:
            return notes
        return "nothing matched '%s'.\ndatasheets:\n%s" % (q, ds.files_text())
    warn = None
    if "pin" not in args:  # gpio_read_all
        rows = gpio.read_all()
    else:  # a pin: a GPIO number, "GPIO13"/"13", or an alias of the configured board
        pin = args["pin"]
        if not isinstance(pin, int):
            p = ds.parse_pin(pin)
            if p is None:
                al = ds.aliases()
                p = al.get(ds.norm_alias(pin), (None,))[0]
                if p is None:
                    raise ValueError("'%s' is neither a GPIO number nor a pin alias (aliases: %s)"
                                     % (pin, ", ".join(sorted(al)) or "none"))
            pin = p
        if "level" in args:  # gpio_write
            v, warn = gpio.write(pin, args["level"])
            mode = "out"
        elif "duty" in args:  # gpio_pwm
            v = (args["duty"], args.get("freq_hz", config.HW_PWM_FREQ_DEFAULT_HZ))
            warn = gpio.pwm(pin, v[0], v[1])
            mode = "pwm"
        elif "r" in args:  # gpio_rgb
            v = (args["r"], args["g"], args["b"])
            warn = gpio.rgb(pin, v[0], v[1], v[2])
            mode = "rgb"
        else:  # gpio_read
            mode, v, warn = gpio.read(pin, args.get("pull"))
        rows = [(pin, mode, v)]
    out = [gpio.states_text(None, rows)] if rows else []  # (read_all: none yet)
    if warn:
        out.append("warning: " + warn)
    if "pin" not in args:
        from mimi.hw import pins

        out.append(("" if rows else "no pin set up by mimi yet\n") + "policy:\n" + pins.summary())
    return "\n".join(out)


# The registry calls a tool's function of the same name (tools.jsonl's "module"): all six are _run.
gpio_write = gpio_read = gpio_read_all = gpio_pwm = gpio_rgb = hardware_docs = _run


def register_all():
    """Register the GPIO tools and ``hardware_docs`` (their text in ``tools.jsonl``)."""
    registry.load(("mimi.tools.gpio",))
