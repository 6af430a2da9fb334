"""Pin actions for the tools, the fast path and the serial CLI: write, read, PWM, RGB LED.

Every action asks ``mimi.hw.pins.check`` first (a refused pin raises ``PinRefused``, a
``ValueError`` naming the rule) and goes through ``seam.pin`` (its
"pwm" and "rgb" modes too). This module remembers what it set up on each pin, so:
- a read never reconfigures a pin mimi drives: an output reads back its own level (the
  ESP32 port's ``Pin.OUT`` is input+output, ``machine.Pin(n)`` alone leaves the pin as it
  is). MimiClaw's ``gpio_read`` switched the pin to input and dropped what it drove.
- a pin mimi never touched is set to input only when it is read, never by ``read_all``.
- writing a level to a PWM or RGB pin stops the PWM first.

States: ``(mode, value)`` with mode ``"out"`` (value 0/1), ``"in"`` (0/1), ``"pwm"``
(``(duty_pct, freq_hz)``) or ``"rgb"`` (``(r, g, b)``).
"""
from micropython import const

from mimi import config, seam
from mimi.hw import pins

# pin -> [mode, PWM or NeoPixel or None, value (level, pull, (duty, freq) or (r, g, b))]
_pins = {}
_lock = seam.allocate_lock()
# Errors, then the words for each mode (see states_text).
_TEXT = const("bad value: level 0/1, pull up/down/none, duty 0-100 (%), freq_hz 1-40000, r/g/b 0-255|"
              "the chip's 8 PWM channels and 4 timers (frequencies) are in use: %s Hz; stop one with a 0/1 write|"
              "output, level %d|input, level %d|PWM %s%% at %d Hz|RGB %d,%d,%d")


def write(pin, level):
    """Drive ``pin`` as an output at ``level`` (0 or 1); stops PWM/RGB on it first.

    Returns ``(read_back, warning or None)``. Raises ``PinRefused`` or ``ValueError``.
    """
    if level not in (0, 1):  # True/False are 1/0
        raise ValueError(_TEXT.split("|")[0])
    warn = pins.check(pin)
    with _lock:
        reset(pin)
        p = seam.pin(pin, "out", value=int(level))  # value= sets the level before the driver turns on
        _pins[pin] = ["out", None, int(level)]
        return (p.value(), warn)


def read(pin, pull=None):
    """Read ``pin`` without disturbing what mimi drives on it.

    An output reads back its level; a PWM or RGB pin reports its setting; any other pin
    becomes an input (``pull``: "up", "down", "none", or None to leave it) and is read.
    Returns ``(mode, value, warning or None)``; see the module doc for the values.
    """
    if pull not in (None, "up", "down", "none"):
        raise ValueError(_TEXT.split("|")[0])
    warn = pins.check(pin)
    with _lock:
        st = _pins.get(pin)
        if st and st[0] in ("pwm", "rgb"):
            return (st[0], st[2], warn)
        if not st or st[0] == "in" and pull is not None and pull != st[2]:
            p = seam.pin(pin, "in", pull=pull)
            st = _pins[pin] = ["in", None, pull]
        else:
            p = seam.pin(pin)  # as it is: an output keeps driving
        return (st[0], p.value(), warn)


def pwm(pin, duty_pct, freq_hz=None):
    """PWM on ``pin``: ``duty_pct`` 0-100 (%), ``freq_hz`` 1-40000 (default 1000 Hz).

    The ESP32-S3 has 8 PWM channels and 4 timers (so at most 4 different frequencies at
    once); asking for more raises ``ValueError``. Returns the warning or None.
    ``write(pin, 0)`` stops the PWM.
    """
    if freq_hz is None:
        freq_hz = config.HW_PWM_FREQ_DEFAULT_HZ
    if type(duty_pct) not in (int, float) or not 0 <= duty_pct <= 100 or type(freq_hz) is not int or \
            not 1 <= freq_hz <= config.HW_PWM_FREQ_MAX_HZ:
        raise ValueError(_TEXT.split("|")[0])
    warn = pins.check(pin)
    duty = int(duty_pct * 655.35 + 0.5)  # duty_u16
    with _lock:
        freqs = []  # of the other PWM pins
        for p in _pins:
            if _pins[p][0] == "pwm" and p != pin:
                freqs.append(_pins[p][2][1])
        if len(freqs) > 7 or freq_hz not in freqs and len(set(freqs)) > 3:
            raise ValueError(_TEXT.split("|")[1] % freqs)
        st = _pins.get(pin)
        if st and st[0] == "pwm":
            if st[2][1] != freq_hz:
                st[1].freq(freq_hz)
            st[1].duty_u16(duty)
        else:
            reset(pin)
            st = _pins[pin] = ["pwm", seam.pin(pin, "pwm", value=(freq_hz, duty)), None]
        st[2] = (duty_pct, freq_hz)
    return warn


def rgb(pin, r, g, b):
    """Set the addressable RGB LED (WS2812) on ``pin`` to ``(r, g, b)``, 0-255 each.

    Returns the warning or None. Raises ``PinRefused`` or ``ValueError``.
    """
    c = (r, g, b)
    for v in c:
        if type(v) is not int or not 0 <= v <= 255:
            raise ValueError(_TEXT.split("|")[0])
    warn = pins.check(pin)
    with _lock:
        st = _pins.get(pin)
        if not st or st[0] != "rgb":
            reset(pin)
            st = _pins[pin] = ["rgb", seam.pin(pin, "rgb"), None]
        st[1][0] = st[2] = c
        st[1].write()
    return warn


def state(pin):
    """What mimi set up on ``pin`` as ``(mode, value)`` (an output's value is the level it
    was told to drive), or None; touches no hardware."""
    st = _pins.get(pin)
    return st and (st[0], st[2])


def read_all():
    """The pins mimi has set up, ascending: ``[(pin, mode, value)]``, levels read now.

    Pins mimi never touched are left alone (listing them is ``pins.summary()``'s job).
    """
    out = []
    with _lock:
        for p in sorted(_pins):
            st = _pins[p]
            out.append((p, st[0], seam.pin(p).value() if st[0] in ("out", "in") else st[2]))
    return out


def states_text(names=None, rows=None):
    """The pin states in words, one line per pin.

    For the serial CLI (``rows`` None): the pins mimi set up (``read_all()``) under a
    heading that says when they are simulated (host), as ``  GPIO4  output, level 1
    (porch_light)``. For tools, ``rows`` (``[(pin, mode, value)]``) as ``GPIO4
    (porch_light): output, level 1`` / ``GPIO5: PWM 25% at 1000 Hz`` / ``GPIO38: RGB
    24,24,24``. ``names``: ``{pin: "porch_light"}`` to show beside the pins; None takes
    the configured board's pin aliases from the datasheets (``{pin: "alias, other"}``).
    """
    cli = rows is None
    lines = ["pins (simulated)" if seam.on_host() else "pins"] if cli else []
    rows = read_all() if cli else rows
    if not rows:
        return lines[0] + ": none set up by mimi" if cli else ""
    if names is None:
        from mimi.hw import datasheets

        names = {}
        al = datasheets.aliases()
        for a in sorted(al):
            p = al[a][0]
            names[p] = names[p] + ", " + a if p in names else a
    for p, mode, v in rows:
        d = _TEXT.split("|")[("out", "in", "pwm", "rgb").index(mode) + 2] % v
        n = names.get(p)
        n = " (%s)" % n if n else ""
        lines.append(("  GPIO%-2d %s %s" % (p, d, n)).rstrip() if cli else "GPIO%d%s: %s" % (p, n, d))
    if cli:
        lines[0] += ":"
    return "\n".join(lines)


def reset(pin=None):
    """Stop PWM on ``pin`` and forget its state; every pin when None (tests, the app on stop).
    Pins keep their levels. The actions call it with the lock held."""
    for p in list(_pins) if pin is None else (pin,):
        st = _pins.pop(p, None)
        if st and st[0] == "pwm":
            st[1].deinit()
