"""Stand-in for micropython-lib's ``ntptime``: the host clock is already synced.

``time()`` returns seconds since the port's epoch, as the real module does;
``settime()`` would set the RTC and is a no-op here. ``FAIL`` makes that many calls
raise ``OSError(ETIMEDOUT)`` first (tests of boot's retry).
"""
import time as _t

host = "pool.ntp.org"
timeout = 1
FAIL = 0


def time():
    global FAIL
    if FAIL > 0:
        FAIL -= 1
        raise OSError(110)
    return int(_t.time())


def settime():
    time()
