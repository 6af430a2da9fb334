"""Pin actions for the tools, the fast path and the serial CLI: write, read, PWM, RGB LED.

Every action asks ``mimi.hw.pins.check`` first (a refused pin raises ``PinRefused``, a
``ValueError`` naming the rule) and goes through ``seam.pin`` / ``seam.pwm`` /
``seam.neopixel``. This module remembers what it set up on each pin, so:
- a read never reconfigures a pin mimi drives: an output reads back its own level (the
  ESP32 port's ``Pin.OUT`` is input+output, ``machine.Pin(n)`` alone leaves the pin as it
  is). MimiClaw's ``gpio_read`` switched the pin to input and dropped what it drove.
- a pin mimi never touched is set to input only when it is read, never by ``read_all``.
- writing a level to a PWM or RGB pin stops the PWM first.

States: ``(mode, value)`` with mode ``"out"`` (value 0/1), ``"in"`` (0/1), ``"pwm"``
(``(duty_pct, freq_hz)``) or ``"rgb"`` (``(r, g, b)``).
"""
from mimi import config, seam
from mimi.hw import pins

TAG = "gpio"

# pin -> [mode, object (PWM, NeoPixel or None), value (level, pull, (duty, freq), (r, g, b))]
_pins = {}
_lock = []


def init():
    """Allocate the lock (the app calls this once; the first action does it otherwise)."""
    if not _lock:
        _lock.append(seam.allocate_lock())


def _locked():
    init()
    return _lock[0]


def _release(pin):
    st = _pins.pop(pin, None)
    if st is not None and st[0] == "pwm":
        st[1].deinit()


def write(pin, level):
    """Drive ``pin`` as an output at ``level`` (0 or 1); stops PWM/RGB on it first.

    Returns ``(read_back, warning or None)``. Raises ``PinRefused`` or ``ValueError``.
    """
    if level not in (0, 1):  # True/False are 1/0
        raise ValueError("level must be 0 or 1")
    level = int(level)
    warn = pins.check(pin)
    with _locked():
        _release(pin)
        p = seam.pin(pin, "out", value=level)  # value= sets the level before the driver turns on
        _pins[pin] = ["out", None, level]
        return (p.value(), warn)


def read(pin, pull=None):
    """Read ``pin`` without disturbing what mimi drives on it.

    An output reads back its level; a PWM or RGB pin reports its setting; any other pin
    becomes an input (``pull``: "up", "down", "none", or None to leave it) and is read.
    Returns ``(mode, value, warning or None)``; see the module doc for the values.
    """
    if pull not in (None, "up", "down", "none"):
        raise ValueError("pull must be up, down or none")
    warn = pins.check(pin)
    with _locked():
        st = _pins.get(pin)
        if st is not None and st[0] in ("pwm", "rgb"):
            return (st[0], st[2], warn)
        if st is None or (st[0] == "in" and pull is not None and pull != st[2]):
            p = seam.pin(pin, "in", pull=pull)
            st = _pins[pin] = ["in", None, pull]
        else:
            p = seam.pin(pin)  # as it is: an output keeps driving
        return (st[0], p.value(), warn)


def pwm(pin, duty_pct, freq_hz=None):
    """PWM on ``pin``: ``duty_pct`` 0-100 (%), ``freq_hz`` 1-40000 (default 1000 Hz).

    The ESP32-S3 has 8 PWM channels and 4 timers (so at most 4 different frequencies at
    once); asking for more raises ``ValueError`` naming the pins in use. Returns the
    warning or None. ``write(pin, 0)`` stops the PWM.
    """
    if freq_hz is None:
        freq_hz = config.HW_PWM_FREQ_DEFAULT_HZ
    if isinstance(duty_pct, bool) or not isinstance(duty_pct, (int, float)) or not 0 <= duty_pct <= 100:
        raise ValueError("duty must be 0-100 (%)")
    if isinstance(freq_hz, bool) or not isinstance(freq_hz, int) or not 1 <= freq_hz <= config.HW_PWM_FREQ_MAX_HZ:
        raise ValueError("frequency must be 1-%d Hz" % config.HW_PWM_FREQ_MAX_HZ)
    warn = pins.check(pin)
    duty_u16 = int(duty_pct * 65535 / 100 + 0.5)
    with _locked():
        others = [(p, st[2][1]) for p, st in _pins.items() if st[0] == "pwm" and p != pin]
        if len(others) >= config.HW_PWM_MAX_CHANNELS:
            raise ValueError("all %d PWM channels are in use (GPIO %s); stop one with a 0/1 write"
                             % (config.HW_PWM_MAX_CHANNELS, ", ".join(str(p) for p, _ in others)))
        freqs = []
        for _, f in others:
            if f not in freqs:
                freqs.append(f)
        if freq_hz not in freqs and len(freqs) >= config.HW_PWM_MAX_FREQS:
            raise ValueError("the chip's %d PWM timers are busy with %s Hz; use one of those frequencies"
                             % (config.HW_PWM_MAX_FREQS, ", ".join(str(f) for f in freqs)))
        st = _pins.get(pin)
        if st is not None and st[0] == "pwm":
            if st[2][1] != freq_hz:
                st[1].freq(freq_hz)
            st[1].duty_u16(duty_u16)
        else:
            _release(pin)
            st = _pins[pin] = ["pwm", seam.pwm(pin, freq_hz, duty_u16), None]
        st[2] = (duty_pct, freq_hz)
    return warn


def rgb(pin, r, g, b):
    """Set the addressable RGB LED (WS2812) on ``pin`` to ``(r, g, b)``, 0-255 each.

    Returns the warning or None. Raises ``PinRefused`` or ``ValueError``.
    """
    for c in (r, g, b):
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 255:
            raise ValueError("colour values must be 0-255")
    warn = pins.check(pin)
    with _locked():
        st = _pins.get(pin)
        if st is None or st[0] != "rgb":
            _release(pin)
            st = _pins[pin] = ["rgb", seam.neopixel(pin, 1), None]
        st[1][0] = (r, g, b)
        st[1].write()
        st[2] = (r, g, b)
    return warn


def state(pin):
    """What mimi set up on ``pin`` as ``(mode, value)`` (an output's value is the level it
    was told to drive), or None; touches no hardware."""
    st = _pins.get(pin)
    return None if st is None else (st[0], st[2])


def read_all():
    """The pins mimi has set up, ascending: ``[(pin, mode, value)]``, levels read now.

    Pins mimi never touched are left alone (listing them is ``pins.summary()``'s job).
    """
    out = []
    with _locked():
        for p in sorted(_pins):
            st = _pins[p]
            v = seam.pin(p).value() if st[0] in ("out", "in") else st[2]
            out.append((p, st[0], v))
    return out


def describe(mode, value):
    """One state in words: ``output, level 1`` / ``PWM 25% at 1000 Hz`` / ``RGB 24,24,24``."""
    if mode == "out":
        return "output, level %d" % value
    if mode == "in":
        return "input, level %d" % value
    if mode == "pwm":
        return "PWM %s%% at %d Hz" % (value[0], value[1])
    return "RGB %d,%d,%d" % value


def states_text(names=None):
    """The pin states for the serial CLI: one line per pin mimi set up.

    ``names``: ``{pin: "porch_light"}`` to show beside the pins; None takes the aliases of
    the configured board from the datasheets. Says when the pins are simulated (host).
    """
    rows = read_all()
    if names is None and rows:
        from mimi.hw import datasheets

        names = {}
        for a, (p, _) in sorted(datasheets.aliases().items()):
            names[p] = names[p] + ", " + a if p in names else a
    head = "pins (simulated)" if seam.on_host() else "pins"
    if not rows:
        return head + ": none set up by mimi"
    lines = [head + ":"]
    for p, mode, v in rows:
        name = names.get(p) if names else None
        lines.append("  GPIO%-2d %s%s" % (p, describe(mode, v), "  (%s)" % name if name else ""))
    return "\n".join(lines)


def reset():
    """Stop every PWM and forget all states (tests; the app on stop). Pins keep their levels."""
    with _locked():
        for p in list(_pins):
            _release(p)
