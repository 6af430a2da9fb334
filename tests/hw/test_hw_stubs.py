"""The host stand-ins the hardware code relies on behave like MicroPython's (both runtimes)."""
import machine
import neopixel

from mimi import seam
import support

RUNTIMES = ("cpython", "micropython")


def test_the_s3_has_no_gpio22_to_25():
    machine.sim_reset()
    for n in (22, 23, 24, 25, 49):
        support.raises(ValueError, machine.Pin, n)
    machine.Pin(21)
    machine.Pin(26)


def test_pin_without_mode_leaves_the_pin_as_it_is():
    machine.sim_reset()
    machine.Pin(5, machine.Pin.OUT, value=1)
    p = machine.Pin(5)
    assert p.value() == 1 and machine.PINS[5]["mode"] == machine.Pin.OUT
    assert seam.pin(5).value() == 1


def test_neopixel_writes_grb_bytes_through_bitstream():
    machine.sim_reset()
    np = neopixel.NeoPixel(machine.Pin(38), 2)
    assert machine.PINS[38]["mode"] == machine.Pin.OUT and len(np) == 2
    np[0] = (1, 2, 3)
    np[1] = (4, 5, 6)
    assert np[0] == (1, 2, 3)
    np.write()
    assert machine.PINS[38]["bits"] == bytes((2, 1, 3, 5, 4, 6))
    np.fill((0, 0, 0))
    np.write()
    assert machine.PINS[38]["bits"] == bytes(6)
    support.raises(ValueError, machine.bitstream, machine.Pin(38), 1, (1, 2, 3, 4), b"x")


def test_sim_reset_forgets_pins_and_outside_signals():
    machine.Pin(6, machine.Pin.IN)
    machine.sim_drive(6, 1)
    assert machine.Pin(6).value() == 1
    machine.sim_reset()
    assert machine.PINS == {}
    assert machine.Pin(6, machine.Pin.IN).value() == 0
