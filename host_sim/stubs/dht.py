"""Stand-in for MicroPython's ``dht`` module (DHT11, DHT22 on one pin).

Follows https://docs.micropython.org/en/latest/esp32/quickref.html#dht-driver:
``d = dht.DHT22(machine.Pin(5)); d.measure(); d.temperature(); d.humidity()``. A part
with nothing set on its pin does not answer: ``measure()`` raises ``OSError(ETIMEDOUT)``
as the driver does. DHT11 gives whole numbers. ``MEASURES`` counts the reads.
"""
_values = {}  # pin number -> (deg C, % RH)
MEASURES = [0]


def sim_set(pin, temperature, humidity=50.0):
    """Host only: what the DHT on ``pin`` measures; None takes it off the bus."""
    if temperature is None:
        _values.pop(int(pin), None)
    else:
        _values[int(pin)] = (temperature, humidity)


class DHTBase:
    def __init__(self, pin):
        self._id = pin._id
        self._t = self._h = None

    def measure(self):
        MEASURES[0] += 1
        v = _values.get(self._id)
        if v is None:
            raise OSError(110)  # ETIMEDOUT
        self._t, self._h = v


class DHT11(DHTBase):
    def temperature(self):
        return int(self._t)

    def humidity(self):
        return int(self._h)


class DHT22(DHTBase):
    def temperature(self):
        return self._t

    def humidity(self):
        return self._h
