"""Pin actions through the seam and the machine stand-in (issue 7; both runtimes)."""
import machine

from mimi import config
from mimi.hw import datasheets as ds, gpio, pins
import support

RUNTIMES = ("cpython", "micropython")


def _fresh(policy=None):
    root = support.fresh_flash()
    if policy is not None:
        support.write(root + config.HW_POLICY_PATH, policy)
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    return root


def test_write_drives_the_pin_and_reads_back():
    _fresh()
    back, warn = gpio.write(5, 1)
    assert back == 1 and warn is None
    st = machine.PINS[5]
    assert st["mode"] == machine.Pin.OUT and st["value"] == 1
    back, _ = gpio.write(5, 0)
    assert back == 0 and machine.PINS[5]["value"] == 0
    support.raises(ValueError, gpio.write, 5, 2)


def test_reading_an_output_does_not_switch_it_to_input():
    # MimiClaw's gpio_read re-configured the pin as an input, so the LED went dark.
    _fresh()
    gpio.write(6, 1)
    for _ in range(3):
        assert gpio.read(6) == ("out", 1, None)
    assert machine.PINS[6]["mode"] == machine.Pin.OUT
    assert machine.PINS[6]["value"] == 1
    gpio.read(6, "up")  # a pull asked for an output pin changes nothing either
    assert machine.PINS[6]["mode"] == machine.Pin.OUT and machine.PINS[6]["pull"] != machine.Pin.PULL_UP


def test_reading_an_untouched_pin_makes_it_an_input_with_the_pull_asked():
    _fresh()
    assert gpio.read(7, "up") == ("in", 1, None)
    assert machine.PINS[7]["mode"] == machine.Pin.IN and machine.PINS[7]["pull"] == machine.Pin.PULL_UP
    machine.sim_drive(7, 0)
    assert gpio.read(7)[1] == 0
    assert gpio.read(8, "none")[1] == 0
    support.raises(ValueError, gpio.read, 7, "sideways")


def test_pwm_duty_percent_and_frequency_and_write_stops_it():
    _fresh()
    assert gpio.pwm(9, 25, 2000) is None
    p = machine.PINS[9]["pwm"]
    assert p == {"freq": 2000, "duty_u16": 16384}
    gpio.pwm(9, 100)
    assert machine.PINS[9]["pwm"] == {"freq": config.HW_PWM_FREQ_DEFAULT_HZ, "duty_u16": 65535}
    assert gpio.read(9) == ("pwm", (100, config.HW_PWM_FREQ_DEFAULT_HZ), None)
    gpio.write(9, 0)
    assert machine.PINS[9]["pwm"] is None and machine.PINS[9]["value"] == 0
    for bad in ((9, -1, 1000), (9, 101, 1000), (9, 50, 0), (9, 50, config.HW_PWM_FREQ_MAX_HZ + 1), (9, True, 10)):
        support.raises(ValueError, gpio.pwm, *bad)


def test_pwm_channel_and_timer_limits_of_the_chip():
    _fresh()
    for i, p in enumerate((1, 2, 4, 5, 6, 7, 8, 9)):
        gpio.pwm(p, 10, 1000 * (1 + i % 4))  # 4 different frequencies over 8 channels
    e = support.raises(ValueError, gpio.pwm, 10, 10, 1000)
    assert "8 PWM channels" in str(e)
    gpio.write(9, 0)
    e = support.raises(ValueError, gpio.pwm, 10, 10, 5000)
    assert "timers" in str(e)
    gpio.pwm(10, 10, 4000)  # a frequency already on a timer is fine


def test_rgb_sends_green_red_blue_bytes():
    _fresh()
    assert gpio.rgb(38, 10, 20, 30) is None
    assert machine.PINS[38]["bits"] == bytes((20, 10, 30))
    assert gpio.read(38) == ("rgb", (10, 20, 30), None)
    support.raises(ValueError, gpio.rgb, 38, 256, 0, 0)


def test_refused_pins_are_never_touched():
    _fresh()
    for p in (19, 20, 26, 33):
        support.raises(pins.PinRefused, gpio.write, p, 1)
        support.raises(pins.PinRefused, gpio.read, p)
        support.raises(pins.PinRefused, gpio.pwm, p, 50)
        assert p not in machine.PINS
    back, warn = gpio.write(0, 1)  # strapping: done, with the warning
    assert back == 1 and "strapping" in warn


def test_read_all_and_states_text_list_what_mimi_set_up():
    _fresh()
    assert "none set up" in gpio.states_text()
    gpio.write(4, 1)
    gpio.pwm(5, 50, 1000)
    gpio.read(6, "up")
    assert gpio.read_all() == [(4, "out", 1), (5, "pwm", (50, 1000)), (6, "in", 1)]
    t = gpio.states_text({4: "porch_light"})
    assert "simulated" in t
    assert "GPIO4  output, level 1  (porch_light)" in t
    assert "GPIO5  PWM 50% at 1000 Hz" in t and "GPIO6  input, level 1" in t
    assert 7 not in machine.PINS  # read_all touched nothing else
    root = support.fresh_flash()  # aliases from the datasheets when no names are given
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", "## Pin Aliases\nfan: 5\nvent: 5\n")
    ds.forget()
    assert "GPIO5  PWM 50% at 1000 Hz  (fan, vent)" in gpio.states_text()
