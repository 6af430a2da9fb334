"""Stand-in for MicroPython's ``machine`` module on a host.

Follows https://docs.micropython.org/en/latest/library/machine.html for the parts mimi
uses: ``Pin``, ``PWM``, ``WDT``, ``RTC`` (with its ``memory()`` that survives a soft
reset), ``reset``, ``soft_reset``, ``unique_id``, ``freq``, ``reset_cause``, ``idle``,
``bitstream`` (what ``neopixel`` sends), ``ADC`` and ``I2C`` (the sensors, from ``_simsensors``: tests put a
voltage on an ADC pin with ``sim_adc(pin, mv)`` and devices on a bus with
``sim_i2c(sda, scl, addresses)``). Pin numbers are the ESP32-S3's: 0-21 and 26-48
(the chip has no GPIO22-25; the ESP32 port raises ``ValueError`` for them).

Pins have no electrical side: the stand-in records each pin's mode, level and PWM
setting in ``PINS`` (and the last ``bitstream`` bytes under ``"bits"``) so tests and the
serial CLI can look, and ``sim_drive(pin, level)``
plays an external signal on an input. A ``WDT`` that is not fed within its timeout
requests a reset from a checker thread, as the hardware would. ``reset()`` sets
``RESET_REQUESTED`` (the host launcher's main loop sees it, ends the process with status
``RESET_EXIT`` and boots again) and raises ``SystemExit`` in the calling thread.
"""
import time
import _simflash

try:
    import _thread
except ImportError:  # pragma: no cover - every runtime mimi targets has it
    _thread = None

PWRON_RESET = 1
HARD_RESET = 2
WDT_RESET = 3
DEEPSLEEP_RESET = 4
SOFT_RESET = 5

RESET_EXIT = 75  # exit status the launcher reads as "the board reset"
RESET_REQUESTED = False

PINS = {}  # pin number -> {"mode": int, "value": 0/1, "pull": int or None, "pwm": dict or None, "irq": (handler, trigger)}
_inputs = {}  # pin number -> level driven from outside


def sim_drive(pin, level):
    """Host only: drive ``pin`` from outside (what a button or sensor would do). A change
    calls the pin's ``irq`` handler when its trigger asks for that edge."""
    n = int(pin)
    level = 1 if level else 0
    st = PINS.get(n)
    old = Pin(n).value() if st else None
    _inputs[n] = level
    h = st and st.get("irq")
    if h and old != level and h[1] & (Pin.IRQ_RISING if level else Pin.IRQ_FALLING):
        h[0](Pin(n))


def sim_reset():
    """Host only: forget every pin's state and every outside signal (a fresh board)."""
    PINS.clear()
    _inputs.clear()
    import sys

    if "_simsensors" in sys.modules:
        sys.modules["_simsensors"].reset()


def _state(n):
    st = PINS.get(n)
    if st is None:
        st = {"mode": None, "value": 0, "pull": None, "pwm": None}
        PINS[n] = st
    return st


class Pin:
    """A GPIO pin. ``Pin(id, mode=-1, pull=-1, *, value=None)``."""

    IN = 1
    OUT = 3
    OPEN_DRAIN = 7
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_RISING = 1
    IRQ_FALLING = 2

    def __init__(self, id, mode=-1, pull=-1, value=None):
        if not isinstance(id, int) or id < 0 or id > 48 or 22 <= id <= 25:
            raise ValueError("invalid pin")
        self._id = id
        self.init(mode, pull, value=value)

    def init(self, mode=-1, pull=-1, value=None):
        st = _state(self._id)
        if mode != -1:
            st["mode"] = mode
            st["pwm"] = None
        if pull != -1:
            st["pull"] = pull
        if value is not None:
            st["value"] = 1 if value else 0

    def value(self, x=None):
        """Read the level (0/1), or set it when ``x`` is given."""
        st = _state(self._id)
        if x is None:
            if st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN):
                return st["value"]  # an output reads back what it drives
            if self._id in _inputs:
                return _inputs[self._id]
            return 1 if st["pull"] == Pin.PULL_UP else 0
        st["value"] = 1 if x else 0
        return None

    __call__ = value

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def mode(self, mode=None):
        st = _state(self._id)
        if mode is None:
            return st["mode"]
        st["mode"] = mode

    def pull(self, pull=None):
        st = _state(self._id)
        if pull is None:
            return st["pull"]
        st["pull"] = pull

    def irq(self, handler=None, trigger=3):
        """Call ``handler(pin)`` on the edges of ``trigger`` that ``sim_drive`` plays; None
        removes it."""
        _state(self._id)["irq"] = (handler, trigger) if handler else None
        return None

    def __repr__(self):
        return "Pin(%d)" % self._id


class PWM:
    """PWM output on a pin. ``PWM(pin, freq=..., duty_u16=...)``."""

    def __init__(self, dest, freq=None, duty_u16=None, duty_ns=None):
        self._pin = dest._id if isinstance(dest, Pin) else int(dest)
        st = _state(self._pin)
        st["mode"] = Pin.OUT
        st["pwm"] = {"freq": 5000, "duty_u16": 0}
        self.init(freq=freq, duty_u16=duty_u16, duty_ns=duty_ns)

    def init(self, freq=None, duty_u16=None, duty_ns=None):
        if freq is not None:
            self.freq(freq)
        if duty_u16 is not None:
            self.duty_u16(duty_u16)
        if duty_ns is not None:
            self.duty_ns(duty_ns)

    def _pwm(self):
        st = _state(self._pin)
        if st["pwm"] is None:
            raise OSError("PWM deinitialised")
        return st["pwm"]

    def freq(self, value=None):
        if value is None:
            return self._pwm()["freq"]
        if not 1 <= int(value) <= 40000000:
            raise ValueError("frequency out of range")
        self._pwm()["freq"] = int(value)

    def duty_u16(self, value=None):
        if value is None:
            return self._pwm()["duty_u16"]
        if not 0 <= int(value) <= 65535:
            raise ValueError("duty_u16 must be 0-65535")
        self._pwm()["duty_u16"] = int(value)

    def duty_ns(self, value=None):
        p = self._pwm()
        period_ns = 1000000000 // p["freq"]
        if value is None:
            return p["duty_u16"] * period_ns // 65535
        self.duty_u16(min(65535, int(value) * 65535 // period_ns))

    def deinit(self):
        st = _state(self._pin)
        st["pwm"] = None


def bitstream(pin, encoding, timing, buf):
    """Send ``buf`` on ``pin`` as timed pulses (encoding 0: high/low ns pairs in ``timing``).

    The stand-in records the bytes under ``PINS[n]["bits"]``.
    """
    if encoding != 0:
        raise ValueError("invalid encoding")
    if len(timing) != 4:
        raise ValueError("timing must have 4 entries")
    _state(pin._id)["bits"] = bytes(buf)


_wdt = None


class WDT:
    """Watchdog: ``WDT(id=0, timeout=5000)`` (ms). Once started it cannot be stopped."""

    def __init__(self, id=0, timeout=5000):
        global _wdt
        if timeout < 1:
            raise ValueError("timeout too small")
        self._timeout_ms = timeout
        self._last = time.ticks_ms()
        self.fired = False
        if _wdt is None and _thread is not None:
            _thread.start_new_thread(_wdt_watch, ())
        _wdt = self

    def feed(self):
        self._last = time.ticks_ms()


def _wdt_watch():
    while True:
        time.sleep_ms(200)
        w = _wdt
        if w is not None and time.ticks_diff(time.ticks_ms(), w._last) > w._timeout_ms:
            w.fired = True
            print("[machine] watchdog timeout: resetting")
            _request_reset()
            return


def _request_reset():
    global RESET_REQUESTED
    RESET_REQUESTED = True


class RTC:
    """Real-time clock plus the RTC memory that survives ``reset()`` (not power loss)."""

    _FILE = "rtc_memory.bin"

    def __init__(self, id=0):
        pass

    def datetime(self, dt=None):
        if dt is None:
            t = time.localtime()
            return (t[0], t[1], t[2], t[6], t[3], t[4], t[5], 0)
        return None  # the host clock is the host's

    def memory(self, data=None):
        """Read the RTC memory (bytes), or replace it (at most 2048 bytes on ESP32)."""
        if data is None:
            return _simflash.read(self._FILE) or b""
        if len(data) > 2048:
            raise ValueError("buffer too long")
        _simflash.write_atomic(self._FILE, bytes(data))
        return None


def reset():
    """Hard reset: on the host, ask the launcher to end the process and boot again."""
    _request_reset()
    raise SystemExit(RESET_EXIT)


def soft_reset():
    reset()


def reset_cause():
    return PWRON_RESET


def unique_id():
    return b"\x7c\xdf\xa1\x00\x51\x1a"


def freq(hz=None):
    if hz is None:
        return 240000000
    return None


def idle():
    time.sleep_ms(1)


def disable_irq():
    return 0


def enable_irq(state=0):
    return None


def __getattr__(name):
    """``ADC``, ``I2C``, ``SoftI2C``, ``sim_adc``, ``sim_i2c``: the sensor parts live in
    ``_simsensors``, loaded when first used, so this stand-in takes no more of a simulated
    board's heap than it must (on the chip ``machine`` is built in: it costs no heap)."""
    if name in ("ADC", "I2C", "SoftI2C", "sim_adc", "sim_i2c"):
        import _simsensors

        return getattr(_simsensors, name)
    raise AttributeError(name)
