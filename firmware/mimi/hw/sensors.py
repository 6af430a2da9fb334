"""Sensors: the chip's temperature, ADC pins, DHT11/DHT22, DS18B20, and an I2C scan.

A sensor is named by:
- ``mcu``: the chip's own temperature (``esp32.mcu_temperature()``, deg C; ESP32-S2/S3/C3);
- an alias of the datasheets' Pin Aliases table whose kind (the word after the pin) is
  ``dht11``, ``dht22``, ``ds18b20`` or ``adc``: ``| room | 5 | dht22 |``;
- ``<kind>:<GPIO>`` for a sensor without an alias: ``adc:4``, ``dht22:5``, ``ds18b20:6``.
A DHT gives two quantities: ``room`` is its temperature, ``room.humidity`` its relative
humidity (%). Units: deg C, %, and mV for an ADC pin.

Drivers are MicroPython's own, frozen into the ESP32 port: ``dht`` (DHT11/DHT22),
``onewire`` + ``ds18x20`` (micropython-lib, ``DS18X20(OneWire(pin))``), ``machine.ADC``
(``read_uv()``: calibrated microvolts; ``atten`` ``ATTN_0DB``..``ATTN_11DB``, 11 dB
reads up to about 3.1 V on the ESP32-S3), ``machine.I2C``
(https://docs.micropython.org/en/latest/esp32/quickref.html). Every pin passes the pin
policy (``mimi.hw.pins.check``) first. The ADC works on ADC1 only (GPIO1-10 on the
ESP32-S3): ADC2 is shared with WiFi, which takes it (ESP-IDF "ADC Oneshot Mode Driver").

Reads are short: a DHT read takes about 5 ms (and is cached ``_SENSOR_DHT_MIN_MS``: the
part answers at most every 2 s); a DS18B20 conversion takes 750 ms, so ``read(name,
wait=False)`` (the rules engine, in the I/O thread) starts one and returns the last
reading (None before the first), and a call 750 ms later reads the result and starts the
next; ``wait=True`` (a tool, in the agent thread) waits for it.
Errors raise ``ValueError`` (a name that is no sensor, a refused pin) or ``OSError`` (the
part did not answer).
"""
from micropython import const

from mimi import seam
from mimi.hw import pins

# Tunables (config.py holds those shared by several modules and the settings).
_SENSOR_DHT_MIN_MS = const(2000)  # DHT22 datasheet: one reading per 2 s at most (DHT11: 1 s)
_SENSOR_DS_CONVERT_MS = const(750)  # DS18B20 at 12 bits (its datasheet's tCONV)
_SENSOR_I2C_FREQ_HZ = const(100000)
_SENSOR_I2C_TIMEOUT_US = const(10000)  # per address: a bus held low costs a scan about 1 s, not 6
_SENSOR_ADC_PINS = const("1-10")  # ADC1 on the ESP32-S3

KINDS = ("dht11", "dht22", "ds18b20", "adc")
_ATTN = {0: "ATTN_0DB", 2.5: "ATTN_2_5DB", 6: "ATTN_6DB", 11: "ATTN_11DB"}

# pin -> [driver, ms of the last read or of the conversion started, its setting (ADC
# attenuation, DHT values, DS18B20 ROMs), kind, the DS18B20's last reading]
_dev = {}
_lock = seam.allocate_lock()


def resolve(name):
    """``(kind, pin, quantity)`` for a sensor name (see the module doc): ``("dht22", 5,
    "temperature")``, ``("mcu", None, "temperature")``, ``("adc", 4, "mV")``.

    Raises ``ValueError`` naming the sensors there are, or ``PinRefused`` (a
    ``ValueError``) when the policy refuses its pin. Touches no hardware.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a sensor is named by a string: mcu, an alias, or kind:GPIO such as adc:4")
    base, _, q = name.strip().lower().partition(".")
    if base == "mcu":
        kind, pin = "mcu", None
    elif ":" in base:
        kind, _, p = base.partition(":")
        from mimi.hw import datasheets

        pin = datasheets.parse_pin(p)
        if kind not in KINDS or pin is None:
            raise ValueError("'%s': use kind:GPIO with kind one of %s, e.g. adc:4" % (name, ", ".join(KINDS)))
    else:
        from mimi.hw import datasheets

        al = datasheets.aliases()
        pin, kind = al.get(datasheets.norm_alias(base), (None, None))
        if kind not in KINDS:
            have = ["mcu"]
            for a in sorted(al):
                if al[a][1] in KINDS:
                    have.append(a)
            raise ValueError("'%s' is no sensor (sensors: %s; or kind:GPIO such as adc:4)" % (name, ", ".join(have)))
    want = "humidity" if kind[:3] == "dht" else "mV" if kind == "adc" else "temperature"
    if q not in ("", "temperature", want):
        raise ValueError("'%s': a %s sensor gives %s" % (name, kind, "temperature or humidity" if want == "humidity"
                                                          else want))
    if kind == "adc" and not 1 <= pin <= 10:
        raise ValueError("GPIO%d has no usable ADC: the ESP32-S3's ADC1 is on GPIO%s (ADC2 is WiFi's)"
                         % (pin, _SENSOR_ADC_PINS))
    if pin is not None:
        pins.check(pin)
    return (kind, pin, q or ("mV" if kind == "adc" else "temperature"))


def unit(quantity):
    """The unit of a quantity: deg C for temperature, % for humidity, mV."""
    return "°C" if quantity == "temperature" else "%" if quantity == "humidity" else quantity


def read(name, wait=True, atten_db=11, now_ms=None):
    """The value of sensor ``name`` now (float: deg C, % or mV); with ``wait`` False a
    DS18B20 gives its last reading (None before the first) while a conversion runs.

    ``atten_db`` (ADC only): 0, 2.5, 6 or 11 (default; full scale about 3.1 V).
    Raises ``ValueError`` (not a sensor, a refused pin, a bad attenuation) or ``OSError``
    (no answer from the part: wiring, a missing pull-up).
    """
    kind, pin, q = resolve(name)
    now = seam.ticks_ms() if now_ms is None else now_ms
    if kind == "mcu":
        import esp32

        return float(esp32.mcu_temperature())
    import machine

    with _lock:
        d = _dev.get(pin)
        if d is not None and d[3] != kind:
            d = None  # the pin's sensor changed (a datasheet edit)
        if kind == "adc":
            if atten_db not in _ATTN:
                raise ValueError("atten_db must be 0, 2.5, 6 or 11")
            if d is None or d[2] != atten_db:
                a = machine.ADC(machine.Pin(pin), atten=getattr(machine.ADC, _ATTN[atten_db]))
                d = _dev[pin] = [a, now, atten_db, kind, None]
            return d[0].read_uv() / 1000
        if kind[:3] == "dht":
            if d is None:
                import dht

                part = dht.DHT11 if kind == "dht11" else dht.DHT22
                d = _dev[pin] = [part(machine.Pin(pin)), None, None, kind, None]
            if d[1] is None or seam.ticks_diff(now, d[1]) >= _SENSOR_DHT_MIN_MS:
                d[0].measure()  # OSError(ETIMEDOUT) when the part does not answer
                d[1] = now
                d[2] = (d[0].temperature(), d[0].humidity())
            return float(d[2][q == "humidity"])
        # DS18B20: the first one on the bus
        if d is None:
            import ds18x20
            import onewire

            ds = ds18x20.DS18X20(onewire.OneWire(machine.Pin(pin)))
            d = _dev[pin] = [ds, None, None, kind, None]
        if not d[2]:
            d[2] = d[0].scan()
            if not d[2]:
                raise OSError("no DS18B20 answers on GPIO%d (wiring, or the 4.7 kOhm pull-up)" % pin)
        if d[1] is None:
            d[0].convert_temp()
            d[1] = now
            if not wait:
                return d[4]
        left = _SENSOR_DS_CONVERT_MS - seam.ticks_diff(now, d[1])
        if left > 0:
            if not wait:
                return d[4]  # the last reading (None before the first) while this one converts
            seam.sleep_ms(left)
        t = d[0].read_temp(d[2][0])
        d[1] = None
        if not wait:  # the next reading is ready when the engine asks again
            d[0].convert_temp()
            d[1] = now
        if t is None:
            raise OSError("the DS18B20 on GPIO%d gave no reading" % pin)
        d[4] = float(t)
        return d[4]


def forget():
    """Drop the drivers made so far (tests; after rewiring)."""
    with _lock:
        _dev.clear()


def i2c_scan(sda, scl):
    """The addresses answering on an I2C bus with ``sda``/``scl`` (GPIO numbers): a sorted
    list of ints (7-bit). The pins pass the pin policy; raises ``ValueError`` then."""
    pins.check(sda)
    pins.check(scl)
    import machine

    bus = machine.I2C(0, scl=machine.Pin(scl), sda=machine.Pin(sda), freq=_SENSOR_I2C_FREQ_HZ,
                      timeout=_SENSOR_I2C_TIMEOUT_US)
    return sorted(bus.scan())
