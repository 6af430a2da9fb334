"""Which GPIOs mimi may touch: the ESP32-S3's rule table, plus the owner's file.

``check(pin)`` returns None (allowed), a warning (allowed, say why it is risky), or raises
``PinRefused`` (a ``ValueError``) whose message names the rule:
``GPIO19 refused (rule usb): USB D-/D+ ...``. Every pin action in ``mimi.hw.gpio`` calls it.

Facts for the ESP32-S3 (Espressif's ESP-IDF GPIO page and ESP32-S3-DevKitC-1 user guide):
GPIO0-21 and 26-48 exist; 26-32 are the module's SPI flash/PSRAM bus; 33-37 carry the
octal flash/PSRAM lines on modules with octal PSRAM (R8, R8V); 19/20 are USB D-/D+;
0, 3, 45 and 46 are strapping pins sampled at reset; 43/44 are UART0 (the console).
Every board mimi runs on is an ESP32-S3, so there is one table (``_MAP``/``_TEXT``),
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

# Tunables (config.py holds those shared by several modules and the settings).
_HW_POLICY_MAX_BYTES = const(1024)

# The rule of each GPIO 0-48, one digit per pin: 0 free, n the n-th entry of _TEXT.
# 1-3 are hard (the owner's file cannot lift them; 3 only while octal_psram is true),
# 4 is refused unless the owner allows the pin, 5-6 are allowed with a warning; check()
# gives 7-9 (the owner's file) and fills in the "*". Then summary()'s labels.
_MAP = const("5005000000000000000440111122222223333300000665500")
_TEXT = const("no_such_pin:no such GPIO on the ESP32-S3|flash:the SPI flash/PSRAM bus|octal_psram:octal PSRAM lines|"
              "usb:USB D-/D+, the console (the owner may allow it)|strapping:strapping pin, read at reset (boot mode)|"
              "uart0:UART0, a console|policy_file:*|owner_deny:denied by the owner|"
              "owner_only:the owner allows only GPIO *|allowed: GPIO|allowed with a warning:|refused (*):")


class PinRefused(ValueError):
    """A pin the policy refuses (``GPIO19 refused (rule usb): ...``); ``rule`` names the rule."""


# The owner's file: its (size, mtime) when last read (None: no file), and what it said
# (a dict) or why it is broken (a str); empty until read.
_pol = []
reload = _pol.clear  # reload(): forget the loaded policy; the next check reads the file again


def _valid(obj):
    """``obj`` if it is a well-formed policy dict; else raise ``ValueError``."""
    ok = type(obj) is dict
    for k in obj if ok else ():
        v = obj[k]
        ok = ok and (type(v) is bool if k == "octal_psram" else k in ("allow", "deny", "only") and (
            v is None or type(v) is list))
        for p in v if ok and type(v) is list else ():
            ok = ok and type(p) is int and 0 <= p <= 48
    if not ok:
        raise ValueError("want {octal_psram: true/false, allow/deny/only: [GPIO 0-48]}")
    return obj


def check(pin):
    """Decide whether mimi may use ``pin`` (int).

    Returns None when allowed, a warning str when allowed with a risk; raises
    ``PinRefused`` naming the rule otherwise. Reads the owner's file again when it
    changed (one ``stat`` per call).
    """
    real = seam.real_path(config.HW_POLICY_PATH)
    try:
        st = os.stat(real)
        st = (st[6], st[8])
    except OSError:
        st = None
    got = _pol[:]  # one copy: another thread (the web server's MCP calls) may load it too
    if not got or st != got[0]:
        pol = {}
        try:
            if st:
                with open(real) as f:
                    pol = _valid(json.loads(f.read(_HW_POLICY_MAX_BYTES)))
        except (OSError, ValueError) as e:  # UnicodeError is a ValueError
            pol = "%s: %s; every pin is refused until it is fixed or deleted" % (config.HW_POLICY_PATH, e)
            log.error("pins", pol)
        got = [st, pol]
        _pol[:] = got  # whole: a check in another thread never sees the stamp without its policy
    pol = arg = got[1]
    code = int(_MAP[pin]) if type(pin) is int and 0 <= pin <= 48 else 1
    if code != 1 and type(pol) is str:
        code = 7
    elif code == 0 or code > 3 or code == 3 and not pol.get("octal_psram", True):
        arg = pol.get("only")
        code = 8 if pin in (pol.get("deny") or ()) else 9 if arg is not None and pin not in arg else \
            0 if code == 3 or pin in (pol.get("allow") or ()) else code
    if code:
        rule, why = _TEXT.split("|")[code - 1].split(":")
        why = why.replace("*", str(arg))
        why = "GPIO%s %s(rule %s): %s" % (pin, "" if code in (5, 6) else "refused ", rule, why)
        if code in (5, 6):
            return why
        e = PinRefused(why)
        e.rule = rule
        raise e


def summary():
    """The policy in a few lines: allowed pins (``GPIO 0-18, 21``), those allowed with a
    warning, then each refused group with its rule (``refused (usb): 19-20``)."""
    t = _TEXT.split("|")
    groups = [[t[9]], [t[10]]]  # [label, pin, pin...]
    for p in range(49):
        try:
            if check(p):
                groups[1].append(p)
            groups[0].append(p)
        except PinRefused as e:
            label = t[11].replace("*", e.rule)
            for g in groups:
                if g[0] == label:
                    break
            else:
                g = [label]
                groups.append(g)  # in order of the group's first pin
            g.append(p)
    lines = []
    for g in groups:
        s = [g[0]]
        for i in range(1, len(g)):  # runs of pins as "0-18"
            p = g[i]
            if i == 1 or g[i - 1] != p - 1:
                s.append(" %d," % p)
            elif i + 1 == len(g) or g[i + 1] != p + 1:
                s[-1] = s[-1][:-1] + "-%d," % p
        if len(g) > 1 or not lines:
            lines.append("".join(s)[:-1] if len(g) > 1 else g[0] + " none")
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
