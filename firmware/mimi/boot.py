"""Board bring-up, called by ``/boot.py``: heap, WiFi, clock.

The runtime issue extends this (safe mode, WiFi backoff, NTP resync); this first form
brings up what every later part needs and never raises.
"""
from mimi import config, log, seam

TAG = "boot"


def run():
    """Bring the board up. Returns True when WiFi and the clock are ready."""
    seam.collect()
    ssid = config.get("wifi_ssid")
    up = False
    if ssid:
        up = seam.wifi_connect(ssid, config.get("wifi_pass"))
        log.info(TAG, "wifi %s: %s", ssid, "connected" if up else "not connected yet")
    else:
        log.warn(TAG, "no WiFi set: from mimi import cli; cli.set_wifi('ssid', 'password')")
    if not seam.clock_synced():
        try:
            seam.ntp_sync()
        except OSError as e:
            log.warn(TAG, "NTP failed: %s", e)
    return up and seam.clock_synced()
