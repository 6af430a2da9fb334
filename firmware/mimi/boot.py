"""Board bring-up, called by ``/boot.py``: safe mode, the board's checks, WiFi. Never
raises, and returns within a second or two whatever the network does: MicroPython runs
``/boot.py`` on every soft reset, mpremote's included, and mpremote gives the board 10 s
to show its raw REPL (a boot that waited for WiFi would lock ``tools/flash.sh`` out,
``flash.sh config`` too, which is how a wrong WiFi password gets fixed).

- Safe mode: when the flag file ``BOOT_SAFE_FLAG`` exists, or the app crashed
  ``_BOOT_CRASH_LIMIT`` times in a row before it ran ``BOOT_HEALTHY_MS`` (a reset loop),
  boot stops here: no WiFi, no app, just the REPL to repair things
  (``cli.safe_mode('off')``, then ``cli.restart()``). A crash is a boot from an unasked-for
  reset (panic, watchdog, the app's own ``machine.reset()``) while the app was running
  or boot was starting WiFi: ``run()`` marks its bring-up, ``/main.py`` and ``app.start()``
  the app; a clean ``app.stop()``, the end of the bring-up and every boot unmark it. So
  a reset after mpremote's soft reset (which runs ``/boot.py``, not ``/main.py``) or while
  the assistant was stopped is not a crash.
  Count and mark live in RTC memory, which survives a reset but not a power cut; the app
  clears the count once it has run healthy. Soft resets and power-ons never count; the
  S3's RST button is a power-on (it resets the whole chip, RTC memory too).
- The board: MicroPython older than 1.26 gets a warning (1.24 and 1.25 crash in
  getaddrinfo on the S3 and on a soft reset after a thread ended; fixed upstream in
  611d8f9ce8 and e1ab04e820); a board without PSRAM, or an octal one on the standard
  image, stops in safe mode with the image to flash (``check_board``).
- WiFi: boot only starts the first attempt (``NetKeeper``'s first tick, no waiting).
  The I/O thread goes on with the same ``NetKeeper``: it keeps trying with backoff (2 s
  doubling to 5 min), never gives up (MimiClaw stops after 10 tries), and reconnects
  when the link drops. Until then HTTPS calls fail at once with "no WiFi" (``seam.Conn``)
  or "the clock is not set" (``mimi.net.http``), and their callers retry.
- Clock: NTP in the I/O thread once WiFi is up, retried with backoff while it fails, and
  again every day (the RTC drifts). ``seam`` hides the port's epoch (2000 on the ESP32,
  1970 elsewhere).
"""
import os

from micropython import const

from mimi import commands, config, log, seam

# Tunables (config.py holds those shared by several modules and the settings).
_BOOT_WIFI_BACKOFF_MAX_MS = const(300000)
_BOOT_WIFI_CHECK_MS = const(5000)  # how often the I/O thread looks at the link
_BOOT_NTP_RETRY_MIN_MS = const(30000)
_BOOT_NTP_RETRY_MAX_MS = const(900000)
_BOOT_NTP_RESYNC_MS = const(86400000)  # daily: the RTC drifts seconds per day
_BOOT_CRASH_LIMIT = const(3)  # boots in a row that never got healthy -> safe mode


state = {"safe": False, "reason": "", "crashes": 0, "net": None, "armed": False, "feeding": False,
         "feeder": False, "portal": None}
# net: boot's NetKeeper, kept by the app; armed: a soft reset left the watchdog running;
# feeding: keep_fed's thread (feeder: it runs) feeds it until the app does; portal: why this
# boot opens the setup portal instead of starting the app (mimi.web.portal.wanted), or None


# -- crash counting and safe mode --------------------------------------------------------


def _load():
    """(crashes in a row, app running, watchdog armed) from RTC memory:
    ``b"mimi:<n>:<0|1>:<0|1>"`` (older records lack the last fields: 0)."""
    try:
        m = bytes(seam.rtc_memory() or b"")
        if m[:5] == b"mimi:":
            f = m[5:].split(b":")
            return int(f[0]), f[1:2] == [b"1"], f[2:3] == [b"1"]
    except Exception:  # noqa: BLE001 - garbage (or no RTC memory): no count
        pass
    return 0, False, False


def _store(n, running, armed):
    try:
        seam.rtc_memory(b"mimi:%d:%d:%d" % (n, 1 if running else 0, 1 if armed else 0))
    except Exception:  # noqa: BLE001 - no RTC memory: no count (never safe mode by crashes)
        pass


def crashes():
    """Crashes of the running app in a row, not yet cleared by a healthy run (int)."""
    return _load()[0]


def app_running(on):
    """Mark the app running (``/main.py``, ``app.start()``: an unasked-for reset from now on
    is a crash) or stopped cleanly (``app.stop()``)."""
    n, r, w = _load()
    if r != bool(on):
        _store(n, on, w)


def clear_crashes():
    """The app ran healthy (or a deliberate restart): the count starts again at 0."""
    n, r, w = _load()
    if n:
        _store(0, r, w)


def wdt_armed():
    """The app started the watchdog (``app.start``). MicroPython cannot stop it, and a soft
    reset (Ctrl-D, mpremote) ends the threads that fed it: the boot after one keeps it fed
    (``keep_fed``), or the board would reset in the middle of a REPL or mpremote session.
    A reset of the chip stops it, so only a soft reset's boot reads this mark."""
    n, r, w = _load()
    if not w:
        _store(n, r, True)


def keep_fed(rearm=False):
    """Feed the started watchdog from one small thread until the app starts and feeds it
    itself (``app.start`` sets ``state["feeding"]`` False): while the app is stopped
    (``app.stop``), and after a soft reset that left it armed (``rearm``: take the armed
    one again first, as nothing holds it after the reset)."""
    if rearm:
        seam.wdt_start(config.APP_WDT_TIMEOUT_MS)  # the armed one again (same timeout)
    state["feeding"] = True
    if not state["feeder"]:
        state["feeder"] = True
        seam.start_thread(_feeder, (), 4096)


def _feeder():
    while True:
        while state["feeding"]:
            seam.wdt_feed()
            seam.wait_ms(max(50, min(1000, config.APP_WDT_TIMEOUT_MS // 4)))
        state["feeder"] = False
        if not state["feeding"]:
            return
        state["feeder"] = True  # asked again while leaving: never left unfed


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
            f.write(commands.text("safe_file"))
        return
    try:
        os.remove(p)
    except OSError:
        pass
    _store(0, False, _load()[2])


def check_safe_mode(cause=None):
    """Decide whether this boot stops before the app; sets ``state``. Returns True for safe mode.

    ``cause``: ``seam.reset_cause()`` (default). A crash is counted when the app was running
    (``app_running``) and the reset was not asked for: "hard" (a panic, the app's own
    ``machine.reset()`` after repeated failures) or "watchdog". Boots where the app never
    ran (mpremote's soft resets run ``/boot.py`` only) and soft resets leave the count
    alone; a power-on starts it at 0 (the device's RTC memory is blank then): the S3's
    RST button is one, so pressing it is never a crash and clears a count. The app is
    not running at boot: the mark is cleared.
    """
    cause = cause or seam.reset_cause()
    n, ran, armed = _load()
    if cause == "power":  # power on, brownout, the RST button (RTC memory is blank then anyway)
        n = 0
    elif ran and cause in ("hard", "watchdog"):
        n += 1
    armed = armed and cause == "soft"  # any other reset restarted the chip, watchdog included
    _store(n, False, armed)
    state["crashes"] = n
    state["armed"] = armed
    state["safe"] = True
    if safe_flag():
        state["reason"] = commands.text("safe_flag", config.BOOT_SAFE_FLAG)
    elif n >= _BOOT_CRASH_LIMIT:
        state["reason"] = commands.text("safe_loop", n)
    else:
        state["safe"] = False
        state["reason"] = ""
    return state["safe"]


# -- the board's checks -----------------------------------------------------------------


def check_board():
    """Checks that need no network; True when this boot stops in safe mode.

    MicroPython older than 1.26: a warning on the console (it runs, but crashes the S3
    is known for are not fixed there). No PSRAM (``seam.ram()``; the PSRAM region
    is missing from ``esp32.idf_heap_info``): the message says which image to flash and
    the boot stops in safe mode, rather than failing later in ``app.init`` or in TLS. A
    runtime that cannot tell (no ``idf_heap_info``) is not stopped.
    """
    v = seam.version()
    if v and v < (1, 26):
        log.warn("boot", commands.text("old_mp", "%d.%d.%d" % v))
    r = seam.ram()
    if r["internal"] is not None and r["psram"] is None:
        state["safe"] = True
        state["reason"] = "no PSRAM"
        print(commands.text("no_psram"))
        return True
    return False


# -- WiFi and clock ----------------------------------------------------------------------


def run(cause=None):
    """Bring the board up; never raises, never waits for the network. Returns True when
    WiFi and the clock are ready already (a soft reset with the link up), else False.

    Safe mode (``check_safe_mode``) and the board's checks (``check_board``) first; then,
    with a WiFi network set, the first connection attempt starts (``NetKeeper``'s first
    tick, without NTP) and boot returns: the I/O thread goes on with it (``state["net"]``).
    ``cause``: as ``check_safe_mode``. After a soft reset that left the app's watchdog
    armed, it is fed from here on (``keep_fed``), safe mode or not.
    """
    try:
        safe = check_safe_mode(cause)
        if state["armed"]:
            keep_fed(True)
        if safe:
            print(commands.text("safe", state["reason"]))
            return False
        if check_board():
            return False
        if seam.wifi_needed():  # the host's network needs no WiFi and has no BOOT button
            from mimi.web import portal

            state["portal"] = portal.wanted()  # /main.py opens it (open_portal) instead of the app
        # A panic while WiFi starts counts as a crash too (a reset loop); the mark goes
        # when this returns (/main.py sets it again for the app).
        app_running(True)
        try:
            if not config.get("wifi_ssid"):
                if not seam.on_host():  # the host's network needs no WiFi
                    log.warn("boot", commands.text("no_wifi"))
                return False
            k = state["net"] = NetKeeper()  # the I/O thread goes on with it (one "connected" line)
            return k.tick(seam.ticks_ms(), False) and seam.clock_synced()
        finally:
            app_running(False)
    except KeyboardInterrupt:
        # Ctrl-C during boot: this boot stays at the REPL (the app is not started).
        state["safe"] = True
        state["reason"] = "Ctrl-C during boot"
        print(commands.text("boot_ctrlc"))
        raise
    except Exception as e:  # noqa: BLE001 - boot must never leave the board without a REPL
        log.exc("boot", "boot", e)
        return False


def open_portal():
    """The setup portal mode (``state["portal"]`` says why), which ``/main.py`` starts instead
    of the app: the portal in a thread of its own (the REPL stays live), the WiFi set kept
    trying meanwhile; once settings are saved, or WiFi is back and the portal idle (not
    when BOOT was held: the owner asked for it), the board restarts (mimi.web.portal.main).
    True when it started."""
    from mimi.web import portal

    return portal.start(keeper=state["net"], reason=state["portal"], stay=state["portal"] == portal.BOOT_HELD)


class NetKeeper:
    """Keeps WiFi up and the clock set; the I/O thread calls ``tick(now_ms)`` each loop.

    Never blocks long: a connection attempt is started and checked on later ticks (given
    ``BOOT_WIFI_WAIT_MS``, then a back-off of 2 s doubling to ``_BOOT_WIFI_BACKOFF_MAX_MS``
    before the next). NTP (a UDP exchange of at most ~1 s) runs when due: retried with
    back-off while it fails, then daily.
    """

    def __init__(self, now_ms=None):
        now = seam.ticks_ms() if now_ms is None else now_ms
        self.wifi_backoff_ms = config.BOOT_WIFI_BACKOFF_MIN_MS
        self.wifi_next_ms = now
        self.connecting = None  # ticks_ms when the attempt under way started
        self.up = None
        self.ntp_backoff_ms = _BOOT_NTP_RETRY_MIN_MS
        self.ntp_next_ms = seam.ticks_add(now, _BOOT_NTP_RESYNC_MS if seam.clock_synced() else 0)
        self.wifi_attempts = self.ntp_syncs = 0
        self.down_since = now  # ticks_ms when WiFi was last seen up (or this keeper began)

    def down_ms(self, now):
        """How long WiFi has been down (ms): since it was last up, or since this keeper
        began; 0 while it is up. The setup portal opens past ``config.PORTAL_WIFI_DOWN_MS``."""
        return 0 if self.up else max(0, seam.ticks_diff(now, self.down_since))

    def tick(self, now, ntp=True):
        """One step of WiFi and NTP upkeep; returns True while WiFi is up. ``ntp``: False
        at boot, which must not wait on DNS or a UDP answer."""
        ssid = config.get("wifi_ssid")
        up = bool(self.up)
        if not ssid:
            up = seam.wifi_status()[0]
        elif seam.ticks_diff(now, self.wifi_next_ms) >= 0:
            up = seam.wifi_status()[0]
            if not up and self.connecting is None:  # start an attempt
                self.wifi_attempts += 1
                self.connecting = now
                try:
                    up = seam.wifi_connect(ssid, config.get("wifi_pass"), 0)
                except OSError as e:
                    log.warn("boot", "wifi: %s", e)
            wait = 500
            if up:
                self.connecting = None
                self.wifi_backoff_ms = config.BOOT_WIFI_BACKOFF_MIN_MS
                wait = _BOOT_WIFI_CHECK_MS
            elif seam.ticks_diff(now, self.connecting) >= config.BOOT_WIFI_WAIT_MS:  # that attempt failed
                self.connecting = None
                wait = self.wifi_backoff_ms
                self.wifi_backoff_ms = min(wait * 2, _BOOT_WIFI_BACKOFF_MAX_MS)
            if up != self.up:
                log.info("boot", "wifi %s: %s", ssid, "connected" if up else "down")
            self.up = up
            self.wifi_next_ms = seam.ticks_add(now, wait)
        if up:
            self.down_since = now
        if ntp and up and seam.ticks_diff(now, self.ntp_next_ms) >= 0:
            try:
                seam.ntp_sync()
                self.ntp_syncs += 1
                self.ntp_backoff_ms = _BOOT_NTP_RETRY_MIN_MS
                wait = _BOOT_NTP_RESYNC_MS
            except (OSError, OverflowError, IndexError) as e:
                log.warn("boot", "NTP: %s", e)
                wait = self.ntp_backoff_ms
                self.ntp_backoff_ms = min(wait * 2, _BOOT_NTP_RETRY_MAX_MS)
            self.ntp_next_ms = seam.ticks_add(now, wait)
        return up
