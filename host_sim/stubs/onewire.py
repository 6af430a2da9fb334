"""Stand-in for MicroPython's ``onewire`` module (the bus the ``ds18x20`` stand-in uses).

Follows micropython-lib's micropython/drivers/bus/onewire: ``OneWire(pin)``; the bus has
no electrical side here, the ``ds18x20`` stand-in looks at which pin it is on.
"""


class OneWireError(Exception):
    pass


class OneWire:
    def __init__(self, pin):
        self.pin = pin
        self._id = pin._id

    def reset(self, required=False):
        return True
