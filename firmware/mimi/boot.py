"""Board bring-up, called by ``/boot.py``: safe mode, WiFi, clock. Never raises.

- Safe mode: when the flag file ``BOOT_SAFE_FLAG`` exists, or the last
  ``BOOT_CRASH_LIMIT`` boots all came from an unasked-for reset (panic, watchdog, the
  app's own reset) before the app ran ``BOOT_HEALTHY_MS`` (a reset loop), boot stops
  here: no WiFi, no app, just the REPL to repair things (``cli.safe_mode('off')``, then
  ``cli.restart()``). Boots are counted in RTC memory, which survives a reset but not a
  power cut (a file when the port has no RTC memory); the app clears the count once it
  has run healthy. Soft resets (Ctrl-D, mpremote) and power-ons do not count.
- WiFi: a few attempts at boot (``BOOT_WIFI_TRIES``), then ``NetKeeper`` in the I/O
  thread keeps trying with backoff (2 s doubling to 5 min) and never gives up (MimiClaw
  stops after 10 tries), and reconnects when the link drops.
- Clock: NTP at boot, retried with backoff while unset, and again every day (the RTC
  drifts). ``seam`` hides the port's epoch (2000 on the ESP32, 1970 elsewhere).
"""
import os

from mimi import config, log, seam

TAG = "boot"
_RTC_MAGIC = b"mimi:"
_COUNT_FILE = "/bootcount"  # fallback when the port has no RTC memory

state = {"safe": False, "reason": "", "crashes": 0}


# -- crash counting and safe mode --------------------------------------------------------


def _rtc_read():
    try:
        m = seam.rtc_memory()
    except (AttributeError, OSError, ImportError, ValueError, TypeError):
        return None
    return bytes(m or b"")


def crashes():
    """Boots in a row that ended before the app was healthy (int)."""
    m = _rtc_read()
    if m is None:
        try:
            with open(seam.real_path(_COUNT_FILE), "rb") as f:
                m = f.read(16)
        except OSError:
            return 0
    if not m.startswith(_RTC_MAGIC):
        return 0
    try:
        return int(m[len(_RTC_MAGIC):].decode())
    except (ValueError, UnicodeError):
        return 0


def _store_count(n):
    data = _RTC_MAGIC + str(n).encode()
    try:
        seam.rtc_memory(data)
        return
    except (AttributeError, OSError, ImportError, ValueError, TypeError):
        pass
    try:
        with open(seam.real_path(_COUNT_FILE), "wb") as f:
            f.write(data)
    except OSError as e:
        log.warn(TAG, "cannot keep the boot count: %s", e)


def note_boot():
    """Count this boot as unhealthy until ``clear_crashes()``; return the new count."""
    n = crashes() + 1
    _store_count(n)
    return n


def clear_crashes():
    """The app ran healthy (or a deliberate restart): the count starts again at 0."""
    if crashes():
        _store_count(0)


def safe_flag():
    """True when the safe-mode flag file exists."""
    try:
        os.stat(seam.real_path(config.BOOT_SAFE_FLAG))
        return True
    except OSError:
        return False


def set_safe_flag(on):
    """Create (``on``) or remove the safe-mode flag file; turning it off also clears the
    crash count, so the next boot starts the app."""
    p = seam.real_path(config.BOOT_SAFE_FLAG)
    if on:
        with open(p, "w") as f:
            f.write("remove this file (or cli.safe_mode('off')) to start the assistant again\n")
    else:
        try:
            os.remove(p)
        except OSError:
            pass
        _store_count(0)


def check_safe_mode(cause=None):
    """Decide whether this boot stops before the app; sets ``state``. Returns True for safe mode.

    ``cause``: ``seam.reset_cause()`` (default). Only a reset the owner did not ask for
    gets counted (see ``note_boot``): "hard" (a panic, the app's own reset after repeated
    failures, the reset pin) or "watchdog". A soft reset (Ctrl-D, mpremote deploys) leaves
    the count alone; a power-on starts it at 0 (the device's RTC memory is blank then).
    """
    cause = cause or seam.reset_cause()
    if cause == "power":
        clear_crashes()
    n = crashes()
    state["crashes"] = n
    if safe_flag():
        state["safe"] = True
        state["reason"] = "the flag file %s exists" % config.BOOT_SAFE_FLAG
    elif n >= config.BOOT_CRASH_LIMIT:
        state["safe"] = True
        state["reason"] = "the last %d boots crashed before the assistant was running" % n
    else:
        state["safe"] = False
        state["reason"] = ""
        if cause in ("hard", "watchdog"):
            state["crashes"] = note_boot()
    return state["safe"]


def _safe_banner():
    print("")
    print("=" * 60)
    print("mimi SAFE MODE: %s." % state["reason"])
    print("The assistant is not started; the REPL is yours. To repair:")
    print("  from mimi import cli; cli.help()          # e.g. cli.config_show()")
    print("  cli.safe_mode('off'); cli.restart()       # then boot normally")
    print("=" * 60)


# -- WiFi and clock ----------------------------------------------------------------------


def _ntp_once():
    try:
        seam.ntp_sync()
        return True
    except (OSError, OverflowError, IndexError) as e:
        log.warn(TAG, "NTP failed: %s", e)
        return False


def run():
    """Bring the board up. Returns True when WiFi and the clock are ready; never raises."""
    try:
        seam.collect()
        if check_safe_mode():
            _safe_banner()
            return False
        if state["crashes"] > 1:
            log.warn(TAG, "boot %d in a row that did not get healthy (safe mode after %d)",
                     state["crashes"], config.BOOT_CRASH_LIMIT)
        ssid = config.get("wifi_ssid")
        up = False
        if not ssid:
            log.warn(TAG, "no WiFi set: from mimi import cli; cli.set_wifi('ssid', 'password')")
        else:
            for i in range(config.BOOT_WIFI_TRIES):
                up = seam.wifi_connect(ssid, config.get("wifi_pass"), config.BOOT_WIFI_WAIT_MS)
                if up:
                    break
            log.info(TAG, "wifi %s: %s", ssid, "connected" if up else "not connected yet (will keep trying)")
        if up and not seam.clock_synced():
            for i in range(config.BOOT_NTP_TRIES):
                if _ntp_once():
                    break
        return up and seam.clock_synced()
    except KeyboardInterrupt:
        # Ctrl-C during boot: this boot stays at the REPL (the app is not started).
        state["safe"] = True
        state["reason"] = "Ctrl-C during boot"
        print("\n[boot] Ctrl-C: the assistant is not started this time (app.start() starts it)")
        raise
    except Exception as e:  # noqa: BLE001 - boot must never leave the board without a REPL
        log.exc(TAG, "boot failed", e)
        return False


class NetKeeper:
    """Keeps WiFi up and the clock set; the I/O thread calls ``tick(now_ms)`` each loop.

    Never blocks long: a connection attempt is started and checked on later ticks.
    NTP (a UDP exchange of at most ~1 s) runs when due.
    """

    def __init__(self, now_ms=None):
        now = seam.ticks_ms() if now_ms is None else now_ms
        self.wifi_backoff_ms = config.BOOT_WIFI_BACKOFF_MIN_MS
        self.wifi_next_ms = now
        self.connecting_since = None
        self.was_up = None
        self.ntp_backoff_ms = config.BOOT_NTP_RETRY_MIN_MS
        synced = seam.clock_synced()
        self.ntp_next_ms = seam.ticks_add(now, config.BOOT_NTP_RESYNC_MS if synced else 0)
        self.wifi_attempts = 0
        self.ntp_syncs = 0

    def tick(self, now_ms):
        up = self._wifi(now_ms)
        if up:
            self._ntp(now_ms)
        return up

    def _wifi(self, now):
        ssid = config.get("wifi_ssid")
        if not ssid:
            return seam.wifi_status()[0]
        if seam.ticks_diff(now, self.wifi_next_ms) < 0:
            return bool(self.was_up)
        up = seam.wifi_status()[0]
        if up:
            if not self.was_up:
                log.info(TAG, "wifi %s connected", ssid)
            self.was_up = True
            self.connecting_since = None
            self.wifi_backoff_ms = config.BOOT_WIFI_BACKOFF_MIN_MS
            self.wifi_next_ms = seam.ticks_add(now, config.BOOT_WIFI_CHECK_MS)
            return True
        if self.was_up:
            log.warn(TAG, "wifi %s lost; reconnecting", ssid)
        self.was_up = False
        if self.connecting_since is not None:
            # an attempt is under way: give it BOOT_WIFI_WAIT_MS, then back off
            if seam.ticks_diff(now, self.connecting_since) < config.BOOT_WIFI_WAIT_MS:
                self.wifi_next_ms = seam.ticks_add(now, 500)
                return False
            self.connecting_since = None
            log.info(TAG, "wifi %s: no connection; next try in %d s", ssid, self.wifi_backoff_ms // 1000)
            self.wifi_next_ms = seam.ticks_add(now, self.wifi_backoff_ms)
            self.wifi_backoff_ms = min(self.wifi_backoff_ms * 2, config.BOOT_WIFI_BACKOFF_MAX_MS)
            return False
        self.wifi_attempts += 1
        try:
            if seam.wifi_connect(ssid, config.get("wifi_pass"), 0):
                return self._wifi(now)
        except OSError as e:
            log.warn(TAG, "wifi connect failed: %s", e)
        self.connecting_since = now
        self.wifi_next_ms = seam.ticks_add(now, 500)
        return False

    def _ntp(self, now):
        if seam.ticks_diff(now, self.ntp_next_ms) < 0:
            return
        if _ntp_once():
            self.ntp_syncs += 1
            self.ntp_backoff_ms = config.BOOT_NTP_RETRY_MIN_MS
            self.ntp_next_ms = seam.ticks_add(now, config.BOOT_NTP_RESYNC_MS)
            log.info(TAG, "clock set from NTP")
        else:
            self.ntp_next_ms = seam.ticks_add(now, self.ntp_backoff_ms)
            self.ntp_backoff_ms = min(self.ntp_backoff_ms * 2, config.BOOT_NTP_RETRY_MAX_MS)
