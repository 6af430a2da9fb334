"""host_sim stand-ins behave like MicroPython's modules (both runtimes)."""
import esp32
import machine
import network
import support

RUNTIMES = ("cpython", "micropython")


def test_nvs_missing_key_raises_enoent_like_the_device():
    support.fresh_flash()
    nvs = esp32.NVS("mimi")
    e = support.raises(OSError, nvs.get_i32, "nope")
    assert e.args[0] == 2  # ENOENT
    buf = bytearray(8)
    support.raises(OSError, nvs.get_blob, "nope", buf)


def test_nvs_changes_reach_flash_only_on_commit():
    support.fresh_flash()
    a = esp32.NVS("mimi")
    a.set_i32("count", 7)
    assert a.get_i32("count") == 7  # visible before commit, as on the device
    esp32._pending.clear()  # a power cut before commit loses the change
    support.raises(OSError, a.get_i32, "count")
    a.set_i32("count", 8)
    a.commit()
    esp32._pending.clear()
    assert esp32.NVS("mimi").get_i32("count") == 8


def test_nvs_blob_buffer_too_small_and_key_too_long():
    support.fresh_flash()
    nvs = esp32.NVS("mimi")
    nvs.set_blob("k", b"hello world")
    nvs.commit()
    small = bytearray(4)
    support.raises(OSError, nvs.get_blob, "k", small)
    big = bytearray(32)
    assert nvs.get_blob("k", big) == 11 and bytes(big[:11]) == b"hello world"
    support.raises(OSError, nvs.set_i32, "a-key-longer-than-15", 1)
    nvs.erase_key("k")
    nvs.commit()
    support.raises(OSError, nvs.erase_key, "k")


def test_pin_output_reads_back_and_input_follows_the_outside():
    p = machine.Pin(5, machine.Pin.OUT)
    p.on()
    assert p.value() == 1
    assert machine.PINS[5]["value"] == 1
    q = machine.Pin(6, machine.Pin.IN, machine.Pin.PULL_UP)
    assert q.value() == 1
    machine.sim_drive(6, 0)
    assert q.value() == 0
    support.raises(ValueError, machine.Pin, 99)


def test_pwm_records_duty_and_frequency():
    pw = machine.PWM(machine.Pin(7), freq=1000, duty_u16=32768)
    assert pw.freq() == 1000 and pw.duty_u16() == 32768
    support.raises(ValueError, pw.duty_u16, 70000)
    pw.deinit()
    assert machine.PINS[7]["pwm"] is None


def test_wlan_can_fail_then_connect():
    w = network.WLAN(network.STA_IF)
    w.active(True)
    network.FAIL_CONNECTS = 1
    w.connect("mimi-sim-wifi", "x")
    assert not w.isconnected()
    w.connect("mimi-sim-wifi", "x")
    assert w.isconnected()
