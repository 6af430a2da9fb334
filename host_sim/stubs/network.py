"""Stand-in for MicroPython's ``network`` module: ``WLAN`` in station mode.

Follows https://docs.micropython.org/en/latest/library/network.WLAN.html. The host is
"connected" a moment after ``connect()``; tests set ``FAIL_CONNECTS`` to make that many
attempts fail first (to exercise boot's retry), and ``SCAN`` to change what ``scan()`` sees.
"""
import time

STA_IF = 0
AP_IF = 1
STAT_IDLE = 1000
STAT_CONNECTING = 1001
STAT_GOT_IP = 1010
STAT_WRONG_PASSWORD = 202
STAT_NO_AP_FOUND = 201
STAT_CONNECT_FAIL = 203

FAIL_CONNECTS = 0
SCAN = [(b"mimi-sim-wifi", b"\x02\x00\x00\x00\x00\x01", 6, -48, 3, False)]

_state = {"active": False, "status": STAT_IDLE, "ssid": None}


class WLAN:
    def __init__(self, interface_id=STA_IF):
        self._if = interface_id

    def active(self, is_active=None):
        if is_active is None:
            return _state["active"]
        _state["active"] = bool(is_active)
        return None

    def connect(self, ssid=None, key=None, bssid=None):
        global FAIL_CONNECTS
        if not _state["active"]:
            raise OSError("Wifi Not Started")
        if FAIL_CONNECTS > 0:
            FAIL_CONNECTS -= 1
            _state["status"] = STAT_NO_AP_FOUND
            return
        _state["ssid"] = ssid
        _state["status"] = STAT_GOT_IP

    def disconnect(self):
        _state["status"] = STAT_IDLE

    def isconnected(self):
        return _state["status"] == STAT_GOT_IP

    def status(self, param=None):
        if param == "rssi":
            return -48
        return _state["status"]

    def scan(self):
        time.sleep_ms(10)
        return list(SCAN)

    def ifconfig(self, cfg=None):
        return ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")

    def ipconfig(self, *args, **kw):
        return ("127.0.0.1", "255.0.0.0")

    def config(self, *args, **kw):
        if args == ("mac",):
            return b"\x7c\xdf\xa1\x00\x51\x1a"
        if args == ("essid",) or args == ("ssid",):
            return _state["ssid"] or ""
        return None
