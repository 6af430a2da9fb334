"""Stand-in for MicroPython's ``network`` module: ``WLAN`` in station and access point mode.

Follows https://docs.micropython.org/en/latest/library/network.WLAN.html. The host is
"connected" a moment after ``connect()``; tests set ``FAIL_CONNECTS`` to make that many
attempts fail first (to exercise boot's retry), and ``SCAN`` to change what ``scan()`` sees.

``WLAN(AP_IF)`` is the access point (the setup portal's): ``active()``, ``config(essid=,
password=, authmode=)`` and ``config("essid")`` etc., ``ifconfig()`` (192.168.4.1, as the
ESP32 port's default). Its settings are in ``AP`` for tests to look at; nothing is really
broadcast: the host's portal is served on its loopback address.

``MIMI_SIM_WIFI`` (read at each use) plays a network that is not there:
- ``never``: ``connect()`` leaves the link connecting for ever (a wrong password, a
  5 GHz-only network);
- ``delay:N``: the link comes up N seconds after the first ``connect()`` of this process
  (slow DHCP, an access point still booting); connecting again does not restart the wait;
- ``error``: ``connect()`` raises ``RuntimeError("Wifi Unknown Error 0x3001")``, as the
  ESP32 port does for an ESP-IDF error it has no name for (ports/esp32/network_common.c).
"""
import os
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

AUTH_OPEN = 0
AUTH_WPA2_PSK = 3

_state = {"active": False, "status": STAT_IDLE, "ssid": None, "first": None}
AP = {"active": False, "essid": "", "password": None, "authmode": AUTH_OPEN}


def _sim():
    """(mode, seconds) from ``MIMI_SIM_WIFI``: ("", 0), ("never", 0), ("delay", N), ("error", 0)."""
    v = (os.getenv("MIMI_SIM_WIFI") or "").strip()
    if v.startswith("delay:"):
        return "delay", float(v[6:])
    return v, 0


class WLAN:
    def __init__(self, interface_id=STA_IF):
        self._if = interface_id

    def active(self, is_active=None):
        if self._if == AP_IF:
            if is_active is None:
                return AP["active"]
            AP["active"] = bool(is_active)
            return None
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
        mode, _ = _sim()
        if mode == "error":
            raise RuntimeError("Wifi Unknown Error 0x3001")
        if _state["first"] is None:
            _state["first"] = time.time()
        _state["ssid"] = ssid
        _state["status"] = STAT_CONNECTING if mode in ("never", "delay") else STAT_GOT_IP

    def disconnect(self):
        _state["status"] = STAT_IDLE

    def isconnected(self):
        return self.status() == STAT_GOT_IP

    def status(self, param=None):
        if param == "rssi":
            return -48
        if _state["status"] == STAT_CONNECTING:
            mode, wait_s = _sim()
            if mode == "" or mode == "delay" and time.time() - _state["first"] >= wait_s:
                _state["status"] = STAT_GOT_IP
        return _state["status"]

    def scan(self):
        time.sleep_ms(10)
        return list(SCAN)

    def ifconfig(self, cfg=None):
        if self._if == AP_IF:
            return ("192.168.4.1", "255.255.255.0", "192.168.4.1", "192.168.4.1")
        return ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")

    def ipconfig(self, *args, **kw):
        return ("127.0.0.1", "255.0.0.0")

    def config(self, *args, **kw):
        if self._if == AP_IF:
            return self._ap_config(args, kw)
        if args == ("mac",):
            return b"\x7c\xdf\xa1\x00\x51\x1a"
        if args == ("essid",) or args == ("ssid",):
            return _state["ssid"] or ""
        return None

    def _ap_config(self, args, kw):
        """The access point's ``config``: set keywords (essid, password/key, authmode), or
        read one (``config("essid")``); the ESP32 port raises ``OSError`` for a WPA2
        password outside 8-63 characters (ESP-IDF refuses it)."""
        if args:
            name = {"ssid": "essid", "key": "password", "mac": "mac"}.get(args[0], args[0])
            if name == "mac":
                return b"\x7e\xdf\xa1\x00\x51\x1b"
            return AP.get(name)
        for k, v in kw.items():
            k = {"ssid": "essid", "key": "password"}.get(k, k)
            AP[k] = v
        if AP["authmode"] == AUTH_OPEN:
            AP["password"] = None
        if AP["authmode"] != AUTH_OPEN and not 8 <= len(AP["password"] or "") <= 63:
            raise OSError("Wifi Invalid Arg")
        return None
