"""Stand-in for micropython-lib's ``ntptime``: the host clock is already synced.

``time()`` returns seconds since the port's epoch, as the real module does;
``settime()`` would set the RTC and is a no-op here. ``FAIL`` makes that many calls
raise ``OSError(ETIMEDOUT)`` first (tests of boot's retry).

``MIMI_SIM_NTP`` (read at each use) plays an NTP server that does not answer, as a
network that blocks UDP port 123: ``never``, or ``delay:N`` (no answer until N seconds
after this module was imported). Each unanswered call waits ``timeout`` seconds first,
as the real one does, then raises ``OSError(ETIMEDOUT)``.
"""
import os
import time as _t

host = "pool.ntp.org"
timeout = 1
FAIL = 0
_T0 = _t.time()


def _silent():
    v = (os.getenv("MIMI_SIM_NTP") or "").strip()
    if v == "never":
        return True
    return v.startswith("delay:") and _t.time() - _T0 < float(v[6:])


def time():
    global FAIL
    if FAIL > 0:
        FAIL -= 1
        raise OSError(110)
    if _silent():
        _t.sleep(timeout)
        raise OSError(110)
    return int(_t.time())


def settime():
    time()
