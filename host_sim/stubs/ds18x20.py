"""Stand-in for MicroPython's ``ds18x20`` module (DS18B20 temperature sensors).

Follows micropython-lib's micropython/drivers/sensor/ds18x20: ``ds = DS18X20(OneWire(pin));
roms = ds.scan(); ds.convert_temp(); time.sleep_ms(750); ds.read_temp(roms[0])``. Tests
put a sensor on a pin with ``sim_set(pin, deg_c)``; ``CONVERSIONS`` counts conversions.
"""
_temps = {}  # pin number -> deg C
CONVERSIONS = [0]


def sim_set(pin, deg_c):
    """Host only: a DS18B20 on ``pin`` reading ``deg_c``; None takes it off the bus."""
    if deg_c is None:
        _temps.pop(int(pin), None)
    else:
        _temps[int(pin)] = deg_c


class DS18X20:
    def __init__(self, onewire):
        self.ow = onewire

    def scan(self):
        p = self.ow._id
        return [bytearray(b"\x28" + bytes((p,)) + b"\x00\x00\x00\x00\x00\x11")] if p in _temps else []

    def convert_temp(self):
        CONVERSIONS[0] += 1

    def read_temp(self, rom):
        return _temps.get(rom[1])
