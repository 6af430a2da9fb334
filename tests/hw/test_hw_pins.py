"""The pin policy: the ESP32-S3 table and the owner's /gpio.json (issue 7; both runtimes)."""
import json

from mimi import config
from mimi.hw import pins
import support

RUNTIMES = ("cpython", "micropython")


def _fresh(policy=None):
    root = support.fresh_flash()
    if policy is not None:
        support.write(root + config.HW_POLICY_PATH, policy if isinstance(policy, str) else json.dumps(policy))
    pins.reload()
    return root


def _rule(pin):
    e = support.raises(pins.PinRefused, pins.check, pin)
    assert ("GPIO%s refused (rule %s)" % (pin, e.rule)) in str(e)
    assert isinstance(e, ValueError)
    return e.rule


def test_free_pins_pass_and_the_reserved_ones_are_refused_naming_the_rule():
    _fresh()
    for p in (1, 2, 4, 5, 13, 21, 38, 47, 48):
        assert pins.check(p) is None
    assert _rule(19) == "usb" and _rule(20) == "usb"
    for p in range(26, 33):
        assert _rule(p) == "flash"
    for p in range(33, 38):  # octal PSRAM assumed until the owner says otherwise
        assert _rule(p) == "octal_psram"
    for p in (22, 25, 49, -1):
        assert _rule(p) == "no_such_pin"
    assert _rule(True) == "no_such_pin"  # a boolean is not a pin number


def test_strapping_and_console_pins_are_allowed_with_a_warning():
    _fresh()
    for p in (0, 3, 45, 46):
        w = pins.check(p)
        assert w and "rule strapping" in w and ("GPIO%d" % p) in w
    assert "rule uart0" in pins.check(43)


def test_owner_file_widens_and_narrows():
    _fresh({"octal_psram": False, "allow": [19, 0], "deny": [4], "only": None})
    assert pins.check(19) is None  # USB freed by the owner
    assert pins.check(0) is None  # warning silenced for an allowed strapping pin
    assert pins.check(35) is None  # no octal PSRAM on this module
    assert _rule(4) == "owner_deny"
    assert _rule(20) == "usb"  # only what was allowed
    _fresh({"only": [2, 5]})
    assert pins.check(5) is None
    assert _rule(6) == "owner_only"
    assert _rule(19) == "owner_only"


def test_hard_rules_cannot_be_lifted_by_the_owner():
    _fresh({"allow": [26, 30, 35], "octal_psram": True})
    assert _rule(26) == "flash" and _rule(30) == "flash" and _rule(35) == "octal_psram"


def test_a_broken_file_refuses_every_pin_until_fixed():
    for bad in ('{"alow": [19]}', "not json", '{"deny": ["4"]}', '{"octal_psram": "no"}', "[1, 2]",
                '{"only": [99]}', '{"deny": 4}', "[5]", '{"allow": [true]}'):
        _fresh(bad)
        e = support.raises(pins.PinRefused, pins.check, 5)
        assert e.rule == "policy_file" and config.HW_POLICY_PATH in str(e)
    root = _fresh('{"alow": [19]}')
    support.write(root + config.HW_POLICY_PATH, '{"allow": [19], "deny": [5, 6]}')  # fixed: size differs
    assert pins.check(19) is None and _rule(5) == "owner_deny"


def test_the_file_is_read_again_when_it_changes():
    root = _fresh()
    assert pins.check(4) is None
    support.write(root + config.HW_POLICY_PATH, '{"deny": [4]}')
    assert _rule(4) == "owner_deny"


def test_save_checks_before_writing_and_keeps_the_old_file_on_error():
    root = _fresh({"deny": [7]})
    support.raises(ValueError, pins.save, {"deny": [7], "typo": 1})
    assert json.loads(support.read(root + config.HW_POLICY_PATH)) == {"deny": [7]}
    pins.save({"deny": [8]})
    assert pins.check(7) is None and _rule(8) == "owner_deny"


def test_summary_lists_allowed_warned_and_refused_groups():
    _fresh({"octal_psram": False})
    s = pins.summary()
    assert "allowed: GPIO 0-18, 21, 33-48" in s
    assert "refused (usb): 19-20" in s and "refused (flash): 26-32" in s
    assert "refused (no_such_pin): 22-25" in s and "octal_psram" not in s


def test_every_board_gets_the_s3_table():
    _fresh()
    for board in ("esp32-s3-devkitc-1", "some-other-board"):  # mimi runs only on the S3
        config.set("board", board)
        assert _rule(19) == "usb" and _rule(30) == "flash" and pins.check(4) is None
    config.reset("board")
