"""Stand-in for micropython-lib's ``neopixel`` module (frozen into the ESP32 port).

Same interface as https://docs.micropython.org/en/latest/library/neopixel.html:
``NeoPixel(pin, n, bpp=3, timing=1)`` sets ``pin`` to an output; ``np[i] = (r, g, b)``
stores the colour in ``buf`` in the LEDs' wire order (green, red, blue); ``write()`` sends
``buf`` with ``machine.bitstream``, which the ``machine`` stand-in records per pin.
"""
from machine import bitstream


class NeoPixel:
    ORDER = (1, 0, 2, 3)  # wire order G R B W: index of each of (r, g, b, w) in a pixel

    def __init__(self, pin, n, bpp=3, timing=1):
        self.pin = pin
        self.n = n
        self.bpp = bpp
        self.buf = bytearray(n * bpp)
        self.pin.init(pin.OUT)
        if isinstance(timing, int):  # 1: 800 kHz, 0: 400 kHz (high/low ns for 0 and 1 bits)
            timing = (400, 850, 800, 450) if timing else (800, 1700, 1600, 900)
        self.timing = timing

    def __len__(self):
        return self.n

    def __setitem__(self, i, v):
        base = i * self.bpp
        for k in range(self.bpp):
            self.buf[base + self.ORDER[k]] = v[k]

    def __getitem__(self, i):
        base = i * self.bpp
        return tuple(self.buf[base + self.ORDER[k]] for k in range(self.bpp))

    def fill(self, v):
        for i in range(self.n):
            self[i] = v

    def write(self):
        bitstream(self.pin, 0, self.timing, self.buf)
