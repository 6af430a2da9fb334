"""Host only: the sensor parts of the ``machine`` and ``esp32`` stand-ins, loaded when a
test or the firmware first uses one (their modules' ``__getattr__`` hands them out).

- ``machine.ADC``: https://docs.micropython.org/en/latest/esp32/quickref.html#adc-analog-to-digital-conversion;
  ``sim_adc(pin, mv)`` puts a voltage on a pin.
- ``machine.I2C`` / ``SoftI2C``: ``scan()`` lists what ``sim_i2c(sda, scl, addresses)`` put there.
- ``esp32.mcu_temperature()``: the chip's temperature, deg C; ``sim_mcu_temperature(c)`` sets it.
"""
_adc_mv = {}  # pin number -> millivolts on it
_i2c_found = {}  # (sda, scl) -> addresses that answer


def sim_adc(pin, mv):
    """Host only: put ``mv`` millivolts on ADC pin ``pin``."""
    _adc_mv[int(pin)] = mv


def sim_i2c(sda, scl, addresses):
    """Host only: the devices (7-bit addresses) on the bus with these pins."""
    _i2c_found[(int(sda), int(scl))] = list(addresses)


class ADC:
    """``ADC(pin, atten=ATTN_11DB)``; ``read_uv()`` (calibrated microvolts), ``read_u16()``.

    The ESP32-S3's full scale per attenuation (ESP-IDF "ADC Oneshot Mode Driver"): 0 dB
    950 mV, 2.5 dB 1250 mV, 6 dB 1750 mV, 11 dB 3100 mV; a higher voltage reads as full scale.
    Only ADC1 (GPIO1-10) and ADC2 (GPIO11-20) pins have an ADC.
    """

    ATTN_0DB = 0
    ATTN_2_5DB = 1
    ATTN_6DB = 2
    ATTN_11DB = 3
    _FULL_MV = (950, 1250, 1750, 3100)

    def __init__(self, pin, atten=3):
        self._id = pin._id if hasattr(pin, "_id") else int(pin)
        if not 1 <= self._id <= 20:
            raise ValueError("invalid Pin for ADC")
        self.atten(atten)

    def atten(self, atten):
        if atten not in (0, 1, 2, 3):
            raise ValueError("invalid attenuation")
        self._atten = atten

    def read_uv(self):
        mv = max(0, min(_adc_mv.get(self._id, 0), ADC._FULL_MV[self._atten]))
        return int(mv * 1000)

    def read_u16(self):
        return self.read_uv() * 65535 // (ADC._FULL_MV[self._atten] * 1000)


class I2C:
    """``I2C(id, scl=Pin, sda=Pin, freq=400000)``; ``scan()`` lists what ``sim_i2c`` put there."""

    def __init__(self, id=0, scl=None, sda=None, freq=400000, timeout=50000):
        if scl is None or sda is None:
            raise ValueError("scl and sda must be given")
        self._pins = (sda._id, scl._id)

    def scan(self):
        return list(_i2c_found.get(self._pins, ()))


SoftI2C = I2C


_mcu_temp_c = [41]


def sim_mcu_temperature(deg_c):
    """Host only: what ``mcu_temperature()`` returns."""
    _mcu_temp_c[0] = deg_c


def mcu_temperature():
    """The chip's internal temperature in deg C (an int on the device)."""
    return _mcu_temp_c[0]



def reset():
    """Forget the voltages and the I2C devices (``machine.sim_reset``: a fresh board)."""
    _adc_mv.clear()
    _i2c_found.clear()
