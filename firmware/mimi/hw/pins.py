"""Which GPIOs mimi may touch: the ESP32-S3's rule table, plus the owner's file.

``check(pin)`` returns None (allowed), a warning (allowed, say why it is risky), or raises
``PinRefused`` (a ``ValueError``) whose message names the rule:
``GPIO19 refused (rule usb): USB D-/D+ ...``. Every pin action in ``mimi.hw.gpio`` calls it.

Facts for the ESP32-S3 (Espressif's ESP-IDF GPIO page and ESP32-S3-DevKitC-1 user guide):
GPIO0-21 and 26-48 exist; 26-32 are the module's SPI flash/PSRAM bus; 33-37 carry the
octal flash/PSRAM lines on modules with octal PSRAM (R8, R8V); 19/20 are USB D-/D+;
0, 3, 45 and 46 are strapping pins sampled at reset; 43/44 are UART0 (the console).
Every board mimi runs on is an ESP32-S3, so there is one table (``_MAP``/``_RULES``),
whatever the ``board`` setting says.

The owner narrows or widens the table in ``config.HW_POLICY_PATH`` (``/gpio.json``, at the
flash root, outside ``/data``, so no tool can edit it; the owner copies it over USB with
``mpremote`` or calls ``save()`` from the REPL)::

    {"octal_psram": false, "allow": [19, 20], "deny": [4], "only": [2, 4, 5, 6]}

- ``octal_psram``: false on modules without octal PSRAM (N8, N8R2) frees 33-37.
- ``allow``: lifts "refuse" rules (USB) and silences warnings for these pins. "hard"
  rules (flash, no such pin) cannot be lifted.
- ``deny``: refused whatever the table says (rule ``owner_deny``).
- ``only``: every pin not listed is refused (rule ``owner_only``).
A file that cannot be read, is not JSON, or has an unknown key refuses every pin (rule
``policy_file``) until fixed: a broken file must not quietly undo the owner's narrowing.
"""
import json
import os

from micropython import const

from mimi import config, log, seam

_MAX_PIN = const(48)
# The rule of each GPIO 0-48, one digit per pin: 0 free, n the n-th entry of _RULES.
# 1-3 are hard (the owner's file cannot lift them; 3 only while octal_psram is true),
# 4 is refused unless the owner allows the pin, 5-6 are allowed with a warning.
_MAP = b"5005000000000000000440111122222223333300000665500"
_RULES = ("no_such_pin:the ESP32-S3 has GPIO0-21 and 26-48 only|"
          "flash:wired to the module's SPI flash/PSRAM; driving it crashes the chip|"
          "octal_psram:octal flash/PSRAM lines on modules with octal PSRAM (N8R8, N16R8V)|"
          "usb:USB D-/D+, the USB console runs on them|"
          "strapping:strapping pin, its level at reset selects the boot mode; keep it at its default then|"
          "uart0:UART0 TX/RX, the console on the USB-UART port stops")


class PinRefused(ValueError):
    """A pin the policy refuses; ``rule`` names the rule."""

    def __init__(self, pin, rule, why):
        super().__init__("GPIO%s refused (rule %s): %s" % (pin, rule, why))
        self.rule = rule


# The owner's file: its (size, mtime) when last read (-1: never, None: no file), and what
# it said (a dict) or why it is broken (a str).
_stamp = -1
_pol = {}


def _valid(obj):
    """``obj`` if it is a well-formed policy dict; else raise ``ValueError`` naming the key."""
    if not isinstance(obj, dict):
        raise ValueError("must be a JSON object")
    for k in obj:
        v = obj[k]
        if not (k == "octal_psram" and isinstance(v, bool) or k in ("allow", "deny", "only") and (
                v is None or isinstance(v, list) and all(type(p) is int and 0 <= p <= _MAX_PIN for p in v))):
            raise ValueError("bad '%s' (keys: octal_psram true/false; allow, deny, only: lists of GPIO 0-48)" % k)
    return obj


def _load():
    """The owner's policy, read again when the file changed (one ``stat`` per call)."""
    global _stamp, _pol
    path = seam.real_path(config.HW_POLICY_PATH)
    try:
        st = os.stat(path)
        stamp = (st[6], st[8])
    except OSError:
        stamp = None
    if stamp != _stamp:
        _stamp = stamp
        _pol = {}
        try:
            if stamp:
                if stamp[0] > config.HW_POLICY_MAX_BYTES:
                    raise ValueError("over %d bytes" % config.HW_POLICY_MAX_BYTES)
                with open(path) as f:
                    _pol = _valid(json.loads(f.read()))
                log.info("pins", "policy file loaded")
        except (OSError, ValueError) as e:  # UnicodeError is a ValueError
            _pol = "%s: %s; fix or delete the file" % (config.HW_POLICY_PATH, e)
            log.error("pins", "%s: every pin refused", _pol)
    return _pol


def reload():
    """Forget the loaded policy; the next check reads the file again."""
    global _stamp
    _stamp = -1


def check(pin):
    """Decide whether mimi may use ``pin`` (int).

    Returns None when allowed, a warning str when allowed with a risk; raises
    ``PinRefused`` naming the rule otherwise. Reads the owner's file when it changed.
    """
    pol = _load()
    code = 1
    if type(pin) is int and 0 <= pin <= _MAX_PIN:
        code = _MAP[pin] - 48
    if code != 1 and isinstance(pol, str):
        raise PinRefused(pin, "policy_file", pol)
    if code == 3 and not pol.get("octal_psram", True):
        code = 0
    if code:
        rule, why = _RULES.split("|")[code - 1].split(":", 1)
        if code < 4:
            raise PinRefused(pin, rule, why)
    path = config.HW_POLICY_PATH
    if pin in (pol.get("deny") or ()):
        raise PinRefused(pin, "owner_deny", "the owner's %s denies it" % path)
    only = pol.get("only")
    if only is not None and pin not in only:
        raise PinRefused(pin, "owner_only", "the owner's %s allows only GPIO %s" % (path, _ranges(only)))
    if code and pin not in (pol.get("allow") or ()):
        if code == 4:
            raise PinRefused(pin, rule, "%s (the owner may allow it in %s)" % (why, path))
        return "GPIO%d (rule %s): %s" % (pin, rule, why)
    return None


def _ranges(pins):
    """``(0, 1, 2, 5)`` -> ``"0-2, 5"``."""
    out = []
    for p in sorted(pins):
        if out and out[-1][1] == p - 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def summary():
    """The policy in a few lines: allowed pins, then each refused or warned group with its rule."""
    ok = []
    warned = []
    refused = {}
    for p in range(_MAX_PIN + 1):
        try:
            if check(p):
                warned.append(p)
            ok.append(p)
        except PinRefused as e:
            refused.setdefault(e.rule, []).append(p)
    lines = ["allowed: GPIO " + (_ranges(ok) or "none")]
    if warned:
        lines.append("allowed with a warning: " + _ranges(warned))
    for p, rule in sorted((refused[r][0], r) for r in refused):  # dict order differs by runtime
        lines.append("refused (%s): %s" % (rule, _ranges(refused[rule])))
    return "\n".join(lines)


def save(obj):
    """Owner only (REPL, serial CLI): check ``obj`` (dict) and write it as the policy file.

    Atomic (temporary file, then rename). Raises ``ValueError`` naming the problem, and
    then the old file stays as it was.
    """
    text = json.dumps(_valid(obj))
    path = seam.real_path(config.HW_POLICY_PATH)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
    reload()
