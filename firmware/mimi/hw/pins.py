"""Which GPIOs mimi may touch: one rule table per board profile, plus the owner's file.

``check(pin)`` returns None (allowed), a warning (allowed, say why it is risky), or raises
``PinRefused`` (a ``ValueError``) whose message names the rule:
``GPIO19 refused (rule usb): USB D-/D+ ...``. Every pin action in ``mimi.hw.gpio`` calls it.

Facts for the ESP32-S3 (Espressif's ESP-IDF GPIO page and ESP32-S3-DevKitC-1 user guide):
GPIO0-21 and 26-48 exist; 26-32 are the module's SPI flash/PSRAM bus; 33-37 carry the
octal flash/PSRAM lines on modules with octal PSRAM (R8, R8V); 19/20 are USB D-/D+;
0, 3, 45 and 46 are strapping pins sampled at reset.

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

from mimi import config, log, seam

TAG = "pins"

HARD = "hard"  # never, whatever the owner's file says
REFUSE = "refuse"  # refused unless the owner's file allows the pin
WARN = "warn"  # allowed, with a warning

# (rule, action, pins, why). The first rule naming a pin decides. A rule whose name is a
# flag of the policy (``octal_psram``) applies only while that flag is true.
_S3_RULES = (
    ("no_such_pin", HARD, (22, 23, 24, 25), "the ESP32-S3 has no GPIO22-25"),
    ("flash", HARD, (26, 27, 28, 29, 30, 31, 32),
     "wired to the module's SPI flash/PSRAM; driving it crashes the chip"),
    ("octal_psram", HARD, (33, 34, 35, 36, 37),
     "octal flash/PSRAM data lines on modules with octal PSRAM (N8R8, N16R8V, N32R8V)"),
    ("usb", REFUSE, (19, 20), "USB D-/D+: the USB serial/JTAG console runs on them"),
    ("strapping", WARN, (0, 3, 45, 46),
     "strapping pin: its level at reset selects the boot mode, JTAG source or flash voltage; "
     "keep it at its default level while the board resets"),
    ("uart0", WARN, (43, 44), "UART0 TX/RX to the USB-to-UART bridge: the console on that port stops"),
)

# board profile -> (highest GPIO number, rules, default flags)
PROFILES = {
    "esp32-s3": (48, _S3_RULES, {"octal_psram": True}),
}
_KEYS = ("octal_psram", "allow", "deny", "only")


class PinRefused(ValueError):
    """A pin the policy refuses; ``rule`` names the rule."""

    def __init__(self, pin, rule, why):
        super().__init__("GPIO%s refused (rule %s): %s" % (pin, rule, why))
        self.pin = pin
        self.rule = rule


# The loaded policy: file stamp (size, mtime) or None, and the parsed overrides.
_pol = {"stamp": -1, "flags": None, "allow": (), "deny": (), "only": None, "error": None}


def profile_name(board=None):
    """The profile for ``board`` (default: the configured board). Every board mimi runs on
    is an ESP32-S3, so an unknown name falls back to ``esp32-s3``."""
    b = (board or config.get("board") or "").lower()
    for name in PROFILES:
        if b.startswith(name):
            return name
    return "esp32-s3"


def _profile():
    return PROFILES[profile_name()]


def _stamp():
    try:
        st = os.stat(seam.real_path(config.HW_POLICY_PATH))
    except OSError:
        return None
    return (st[6], st[8])


def parse(text, max_pin=48):
    """Check policy file text; return the dict or raise ``ValueError`` naming the problem."""
    try:
        obj = json.loads(text)
    except ValueError:
        raise ValueError("not valid JSON")
    if not isinstance(obj, dict):
        raise ValueError("must be a JSON object")
    for k in obj:
        if k not in _KEYS:
            raise ValueError("unknown key '%s' (known: %s)" % (k, ", ".join(_KEYS)))
    if "octal_psram" in obj and not isinstance(obj["octal_psram"], bool):
        raise ValueError("octal_psram must be true or false")
    for k in ("allow", "deny", "only"):
        v = obj.get(k)
        if v is None:
            continue
        if not isinstance(v, list):
            raise ValueError("%s must be a list of pin numbers" % k)
        for p in v:
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= max_pin:
                raise ValueError("%s: %r is not a pin number 0-%d" % (k, p, max_pin))
    return obj


def _load():
    """Reload the owner's file when it changed (one ``stat`` per check)."""
    stamp = _stamp()
    if stamp == _pol["stamp"]:
        return
    max_pin, _, defaults = _profile()
    flags = dict(defaults)
    _pol.update(stamp=stamp, flags=flags, allow=(), deny=(), only=None, error=None)
    if stamp is None:
        return
    try:
        if stamp[0] > config.HW_POLICY_MAX_BYTES:
            raise ValueError("over %d bytes" % config.HW_POLICY_MAX_BYTES)
        with open(seam.real_path(config.HW_POLICY_PATH), "rb") as f:
            obj = parse(f.read(config.HW_POLICY_MAX_BYTES).decode(), max_pin)
    except (OSError, ValueError) as e:  # UnicodeError is a ValueError
        _pol["error"] = "%s: %s; fix or delete the file" % (config.HW_POLICY_PATH, e)
        log.error(TAG, "%s: every pin refused", _pol["error"])
        return
    if "octal_psram" in obj:
        flags["octal_psram"] = obj["octal_psram"]
    _pol["allow"] = tuple(obj.get("allow") or ())
    _pol["deny"] = tuple(obj.get("deny") or ())
    if obj.get("only") is not None:
        _pol["only"] = tuple(obj["only"])
    log.info(TAG, "policy file loaded: %s", config.HW_POLICY_PATH)


def reload():
    """Forget the loaded policy; the next check reads the file again."""
    _pol["stamp"] = -1


def _rule(pin):
    for rule, action, pins, why in _profile()[1]:
        if pin in pins and _pol["flags"].get(rule, True):
            return (rule, action, why)
    return None


def check(pin):
    """Decide whether mimi may use ``pin`` (int).

    Returns None when allowed, a warning str when allowed with a risk; raises
    ``PinRefused`` naming the rule otherwise. Reads the owner's file when it changed.
    """
    _load()
    return _decide(pin)


def _decide(pin):
    max_pin = _profile()[0]
    if isinstance(pin, bool) or not isinstance(pin, int) or not 0 <= pin <= max_pin:
        raise PinRefused(pin, "no_such_pin", "GPIO numbers on this chip are 0-%d" % max_pin)
    if _pol["error"]:
        raise PinRefused(pin, "policy_file", _pol["error"])
    r = _rule(pin)
    if r and r[1] == HARD:
        raise PinRefused(pin, r[0], r[2])
    if pin in _pol["deny"]:
        raise PinRefused(pin, "owner_deny", "the owner's %s denies it" % config.HW_POLICY_PATH)
    if _pol["only"] is not None and pin not in _pol["only"]:
        raise PinRefused(pin, "owner_only", "the owner's %s allows only GPIO %s"
                         % (config.HW_POLICY_PATH, _ranges(_pol["only"])))
    if r and pin not in _pol["allow"]:
        if r[1] == REFUSE:
            raise PinRefused(pin, r[0], r[2] + " (the owner may allow it in %s)" % config.HW_POLICY_PATH)
        return "GPIO%d (rule %s): %s" % (pin, r[0], r[2])
    return None


def _ranges(pins):
    """``(0, 1, 2, 5)`` -> ``"0-2, 5"``."""
    ps = sorted(pins)
    out = []
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(str(ps[i]) if i == j else "%d-%d" % (ps[i], ps[j]))
        i = j + 1
    return ", ".join(out)


def summary():
    """The policy in a few lines: allowed pins, then each refused or warned group with its rule."""
    refused = {}
    warned = []
    ok = []
    _load()
    for p in range(_profile()[0] + 1):
        try:
            w = _decide(p)
        except PinRefused as e:
            refused.setdefault(e.rule, []).append(p)
            continue
        ok.append(p)
        if w:
            warned.append(p)
    lines = ["allowed: GPIO %s" % (_ranges(ok) or "none")]
    if warned:
        lines.append("allowed with a warning: %s" % _ranges(warned))
    for rule in sorted(refused, key=lambda r: refused[r][0]):  # dict order differs by runtime
        lines.append("refused (%s): %s" % (rule, _ranges(refused[rule])))
    return "\n".join(lines)


def save(obj):
    """Owner only (REPL, serial CLI): check ``obj`` (dict) and write it as the policy file.

    Atomic (temporary file, then rename). Raises ``ValueError`` naming the problem, and
    then the old file stays as it was.
    """
    text = json.dumps(obj)
    parse(text, _profile()[0])
    path = seam.real_path(config.HW_POLICY_PATH)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
    reload()
