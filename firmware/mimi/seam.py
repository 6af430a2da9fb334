"""The runtime seam: the one module that knows which runtime it is on.

Three runtimes run the same firmware (../shared/DESIGN.md, "Three runtimes"):
- ``esp32``: MicroPython on the board. Flash paths are real (``/data/...``); the epoch
  of ``time.time()`` may be 2000; secrets live in ``esp32.NVS("mimi")``.
- ``unix``: the MicroPython unix port (``micropython`` command), the virtual board.
- ``cpython``: CPython with ``host_sim`` stand-ins on ``sys.path``.
On the two host runtimes the board's flash is a folder (``MIMI_FLASH``): a device path
``/data/x`` is ``<flash>/data/x``, and the stand-ins for ``esp32``, ``machine`` and
``network`` keep their state in that folder too.

Everything else in ``firmware/`` imports what differs from here: paths, clocks, threads,
the settings store, sockets and TLS, pins, watchdog, heap figures, WiFi, NTP, reset.
"""
import gc
import json
import os
import sys
import time

import _thread
from micropython import const

from mimi import pick

# The messages, by key (``mimi.pick``: one string in RAM, not one each).
_MSG = const("|root the device's flash root is fixed|link %s leads outside /data through a link"
             "|utf W settings: %s is not UTF-8; using the default|long setting %s: value over %d bytes"
             "|none host not found: %s|wifi no WiFi: cannot reach %s|dns cannot resolve %s (%s)"
             "|tls %s's certificate was refused: %s|hs TLS handshake with %s failed: %s|")

if sys.platform == "esp32":
    _RT = "esp32"
elif sys.implementation.name == "micropython":
    _RT = "unix"
else:
    _RT = "cpython"

# Seconds from 1970-01-01 to the port's epoch (2000-01-01 on ports built that way).
_EPOCH_OFFSET = 946684800 if time.gmtime(0)[0] == 2000 else 0

# -- flash ----------------------------------------------------------------------------

# The host folder that plays the flash ('' on the device); real_path("") reads it.
_root = "" if _RT == "esp32" else (os.getenv("MIMI_FLASH") or "flash").rstrip("/")


_real = [(None, None, None)] * 4  # (device path, real path, root) that real_path kept last
_real_at = [0]


def set_flash_root(path):
    """Host runtimes only: make ``path`` the folder that plays the board's flash.

    Also points the ``esp32``/``machine`` stand-ins at it (via ``MIMI_FLASH``).
    Raises ``OSError`` on the device, whose flash is fixed.
    """
    global _root
    if _RT == "esp32":
        raise OSError(pick(_MSG, "root"))
    _root = path.rstrip("/")
    try:
        os.environ["MIMI_FLASH"] = _root
    except AttributeError:  # MicroPython: no os.environ
        os.putenv("MIMI_FLASH", _root)


# Unix port: folder -> (inode, mtime_s, when listed (s), [names of the links in it]); None
# turns the check off (host_sim's bench: it measures the board, whose LittleFS has no links).
_links = {}


def real_path(path):
    """Map a device path (``/data/memory/MEMORY.md``) to this runtime's file path.

    ``mimi.storage.fs`` decides which paths are allowed; the one check here is one the
    board never needs: LittleFS has no symbolic links, but a host folder may, and a link
    must not lead a tool to ``nvs.json``: a path under ``/data`` through a link that leads
    out raises ``OSError(EACCES)``. On CPython the real location (links resolved) must be
    inside ``<flash>/data``. The unix port cannot resolve a link: there a path through any
    link under ``/data`` is refused, wherever it leads (``mimi.links``, which lists folders
    only when they changed).
    """
    if _RT == "esp32" or _links is None:  # no link check to make: a kept answer stands
        for last in _real:  # the same few files again: a turn asks two dozen times (issue 17)
            if path == last[0] and last[2] is _root:
                return last[1]
    p = _root + path
    if path[:5] != "/data" or path[5:6] not in ("", "/"):
        return p
    if _RT == "esp32" or _RT == "unix" and _links is None:  # no link check: the answer can be kept
        i = _real_at[0] = (_real_at[0] + 1) % len(_real)
        _real[i] = (path, p, _root)  # one tuple in a fixed list, replaced whole: safe from two threads
    elif _RT == "cpython":
        data = os.path.realpath(_root + "/data")
        r = os.path.realpath(p)
        if r != data and not r.startswith(data + os.sep):
            raise OSError(13, pick(_MSG, "link") % path)
    elif _RT == "unix" and _links is not None:
        from mimi import links  # the unix port's check, loaded only where it runs

        if links.through(_links, _root, path):
            raise OSError(13, pick(_MSG, "link") % path)
    return p


# -- clocks ---------------------------------------------------------------------------

ticks_ms = time.ticks_ms
ticks_us = time.ticks_us
ticks_diff = time.ticks_diff
ticks_add = time.ticks_add
sleep_ms = time.sleep_ms  # exact, but on the ESP32 port it spins its last part: see wait_ms
_idle = []  # the ESP32 port's empty poll object, made on the first wait_ms


def wait_ms(ms):
    """Wait about ``ms`` without keeping the CPU busy: for the waits of loops that poll
    (the bus, the I/O loop, back-offs), where a wait may end up to one tick (10 ms) late.

    The ESP32 port's ``time.sleep_ms`` sleeps whole FreeRTOS ticks and spins the rest,
    under one tick, with the interpreter lock held (ports/esp32/mphalport.c,
    ``mp_hal_delay_ms``): a quarter of a 20 ms wait, and every other thread stalls
    meanwhile. ``poll`` with a timeout on an empty poll object waits tick by tick with
    the lock released (extmod/modselect.c, ``MICROPY_EVENT_POLL_HOOK``). The unix port's
    ``sleep_ms`` wakes every millisecond (ports/unix/unix_mphal.c), its ``poll`` once,
    so it waits the same way; CPython sleeps.
    """
    if _RT == "cpython" or ms <= 0:
        return sleep_ms(max(0, ms))
    if not _idle:
        import select

        # Nothing registered: it only waits. Shared by the threads: waiting only reads it.
        _idle.append(select.poll())
    _idle[0].poll(ms)


def moment():
    """Now, as a start that ``elapsed_ms`` can measure long intervals from (uptime,
    throttles, TTLs): ``[ticks_ms, wall seconds or None while the clock is unset]``."""
    return [ticks_ms(), time_s() if clock_synced() else None]


def elapsed_ms(m, now_ms=None):
    """Milliseconds since the ``moment()`` ``m``, right however long ago it was.

    ``ticks_diff`` is right only below half the ticks period: 2^29 ms (6.2 days) on the
    ESP32 port, where ``ticks_ms`` wraps at 2^30. So past 5 days this counts by the wall
    clock (whole seconds). A moment taken before NTP set the clock gets its wall time
    here, on the first call after (within days of it, while the ticks are still right).
    """
    d = ticks_diff(ticks_ms() if now_ms is None else now_ms, m[0])
    if m[1] is None:
        if clock_synced():
            m[1] = time_s() - d // 1000
        return d
    w = time_s() - m[1]
    return w * 1000 if w > 432000 else d


def time_s():
    """Wall clock: whole seconds since 1970-01-01 UTC, whatever the port's epoch."""
    return int(time.time()) + _EPOCH_OFFSET


def gmtime(epoch_s):
    """UTC broken-down time for unix seconds: (year, month, mday, hour, min, sec, wday, yday).

    ``wday`` is 0 for Monday, as MicroPython's ``time.gmtime``.
    """
    return time.gmtime(int(epoch_s) - _EPOCH_OFFSET)


def mktime(tm):
    """Unix seconds for a UTC broken-down time (8-tuple, as ``time.mktime`` on MicroPython).

    MicroPython's ``mktime`` takes its argument as UTC; CPython's as local time, so the
    host converts with ``calendar.timegm``.
    """
    if _RT == "cpython":
        import calendar
        return calendar.timegm(tuple(tm[:6]) + (0, 0, 0))
    return int(time.mktime(tuple(tm[:8]))) + _EPOCH_OFFSET


def clock_synced():
    """True once the wall clock has been set (by NTP on the device; always on a host)."""
    return time_s() > 1704067200  # 2024-01-01: a clock before this was never set


# -- threads --------------------------------------------------------------------------


# allocate_lock(): a new ``_thread`` lock (``acquire(waitflag=1, timeout=-1)``, ``release``).
allocate_lock = _thread.allocate_lock


def start_thread(fn, args=(), stack_bytes=0):
    """Start ``fn(*args)`` in a new thread with ``stack_bytes`` of stack (0: default).

    The ESP32 port's default thread stack is small (about 5 KB); callers that parse JSON
    or run TLS ask for more. The host ignores sizes below its own minimum.
    """
    if stack_bytes:
        try:
            _thread.stack_size(stack_bytes)
        except (ValueError, OSError):
            stack_bytes = 0  # not taken: nothing to put back
    try:
        return _thread.start_new_thread(fn, tuple(args))
    finally:
        if stack_bytes:
            _thread.stack_size(0)


# -- heap -----------------------------------------------------------------------------


def _none():
    return None


# collect(): run the garbage collector.
collect = gc.collect
# mem_free(), mem_alloc(): free and allocated GC heap in bytes; None where the runtime has
# no fixed heap (CPython).
mem_free = getattr(gc, "mem_free", _none)
mem_alloc = getattr(gc, "mem_alloc", _none)


# ESP-IDF's heap capability bits (esp_heap_caps.h); esp32.HEAP_DATA is MALLOC_CAP_8BIT.
_CAP_8BIT = const(1 << 2)
_CAP_SPIRAM = const(1 << 10)
_CAP_INTERNAL = const(1 << 11)
_CAP_DEFAULT = const(1 << 12)


def _heap_caps(caps):
    """(total, free, largest free block) in bytes over the ESP-IDF heap regions that have
    all of ``caps`` (``esp32.idf_heap_info``, ports/esp32/modesp32.c); None when there are
    none, or no ``idf_heap_info`` (a runtime without the esp32 module)."""
    try:
        import esp32

        regions = esp32.idf_heap_info(caps)
    except (ImportError, AttributeError, OSError):
        return None
    if not regions:
        return None
    t = f = big = 0
    for r in regions:  # (total, free, largest free block, minimum free)
        t += r[0]
        f += r[1]
        big = max(big, r[2])
    return t, f, big


def ram():
    """RAM in bytes, for status lines, ``cli.heap_info()`` and the PSRAM check. A dict:

    - ``gc_used``, ``gc_free``: the GC heap as it is now (None on CPython).
    - ``gc_grow``: how much more the GC heap can still take. The ESP32 port's heap starts
      at 64 KB and adds areas on demand (MICROPY_GC_SPLIT_HEAP_AUTO), each at most the
      largest free block of the system heap (ports/esp32/gccollect.c
      ``gc_get_max_new_split``), so ``gc.mem_free()`` understates it: this is that block.
      0 on the unix port (its heap is fixed by ``-X heapsize``), None on CPython.
    - ``psram``: (total, free, largest block) of the PSRAM, or None when the board has
      none (or the image did not find it).
    - ``internal``: (total, free, largest block) of internal RAM: thread stacks, TLS
      sessions and WiFi live there.
    On the host runtimes ``psram`` and ``internal`` are the stand-in's board, not the host.
    """
    collect()
    grow = None
    if _RT == "esp32":
        d = _heap_caps(_CAP_DEFAULT)
        grow = max(0, d[2] - max(2048, d[2] * 13 // 512)) if d else 0  # py/gc.c gc_try_add_heap's overhead
    elif _RT == "unix":
        grow = 0
    return {"gc_used": mem_alloc(), "gc_free": mem_free(), "gc_grow": grow,
            "psram": _heap_caps(_CAP_SPIRAM | _CAP_8BIT), "internal": _heap_caps(_CAP_INTERNAL | _CAP_8BIT)}


def version():
    """MicroPython's version as a tuple, e.g. (1, 28, 0); None on CPython."""
    impl = sys.implementation
    return tuple(impl.version[:3]) if impl.name == "micropython" else None


def board():
    """The board and chip as the firmware names them (``sys.implementation._machine``:
    "Generic ESP32S3 module with Octal-SPIRAM with ESP32S3"), or the host's platform."""
    return getattr(sys.implementation, "_machine", None) or sys.platform


def flash_free():
    """Free bytes on the file system that holds ``/data`` (``os.statvfs``: fragment size
    times blocks free to users), or None when the runtime cannot tell."""
    try:
        st = os.statvfs(real_path("/data"))
        return st[1] * st[4]
    except (OSError, AttributeError):
        return None


def describe():
    """One line naming the runtime, for status output: e.g. ``MicroPython 1.28.0 (esp32)``."""
    impl = sys.implementation
    return "%s %d.%d.%d (%s)" % (("MicroPython" if impl.name == "micropython" else "CPython",)
                                 + tuple(impl.version[:3]) + (_RT,))


def on_host():
    """True on the two host runtimes, where the flash is a folder and pins are simulated.

    For messages to the user ("simulated pins"), never to pick code paths.
    """
    return _RT != "esp32"


# -- settings store (NVS namespace "mimi") -------------------------------------------

_VALUE_MAX = const(512)  # bytes: settings are short strings (keys, URLs, chat id lists)
_nvs = None
_nvs_lock = None


def _store():
    global _nvs, _nvs_lock
    if _nvs is None:
        import esp32  # the real module on the device, host_sim's stand-in elsewhere

        _nvs_lock = _thread.allocate_lock()
        _nvs = esp32.NVS("mimi")
    return _nvs


def store_get(key):
    """Return the string stored under ``key`` (at most 15 characters), or None.

    Values are UTF-8 blobs of at most 512 bytes; one that is not UTF-8 (a damaged store)
    reads as None, with a warning on the console. Never logs the value.
    """
    nvs = _store()
    buf = bytearray(_VALUE_MAX)
    with _nvs_lock:
        try:
            n = nvs.get_blob(key, buf)
        except OSError:
            return None
    try:
        return bytes(buf[:n]).decode()
    except UnicodeError:  # a damaged value reads as unset (its default); setting it again mends it
        print(pick(_MSG, "utf") % key)
        return None


def store_set(key, value):
    """Store ``value`` (str, at most 512 bytes as UTF-8) under ``key`` and commit it.

    Raises ``ValueError`` when the value is too long.
    """
    data = value.encode()
    if len(data) > _VALUE_MAX:
        raise ValueError(pick(_MSG, "long") % (key, _VALUE_MAX))
    nvs = _store()
    with _nvs_lock:
        nvs.set_blob(key, data)
        nvs.commit()


def store_erase(key):
    """Remove ``key`` from the store; no error when it is absent."""
    nvs = _store()
    with _nvs_lock:
        try:
            nvs.erase_key(key)
            nvs.commit()
        except OSError:
            pass


# -- hardware: pins, watchdog, reset, identity ---------------------------------------


def pin(n, mode=None, pull=None, value=None):
    """``machine.Pin(n, ...)``; ``mode`` is "in", "out" or None (leave the pin as it is:
    ``machine.Pin(n)`` alone does not reconfigure it); ``pull`` is "up", "down", "none"
    (no pull) or None (leave the pull as it is).

    ``mode`` "pwm": start PWM on the pin, ``value`` is ``(freq_hz, duty_u16)`` (Hz,
    0-65535); returns the ``machine.PWM``. ``mode`` "rgb": the addressable RGB LED
    (WS2812, GRB order) on the pin, a ``neopixel.NeoPixel`` with one LED (micropython-lib's,
    frozen into the ESP32 port): ``np[0] = (r, g, b)`` (0-255 each), then ``np.write()``;
    the host's stand-in records what was written.
    """
    import machine

    if mode == "pwm":
        return machine.PWM(machine.Pin(n), freq=value[0], duty_u16=value[1])
    if mode == "rgb":
        import neopixel

        return neopixel.NeoPixel(machine.Pin(n), 1)
    if mode is None:
        return machine.Pin(n)
    m = machine.Pin.OUT if mode == "out" else machine.Pin.IN
    p = {"up": machine.Pin.PULL_UP, "down": machine.Pin.PULL_DOWN, "none": None}.get(pull, -1)
    return machine.Pin(n, m, p) if value is None else machine.Pin(n, m, p, value=value)


# wdt_feed(): feed the watchdog, if started (until then it does nothing).
wdt_feed = _none


def wdt_start(timeout_ms):
    """Start the hardware watchdog (it cannot be stopped once started); ``wdt_feed`` feeds it."""
    global wdt_feed
    import machine

    wdt_feed = machine.WDT(timeout=timeout_ms).feed


def reset():
    """Hard reset of the board (on a host: the launcher boots the firmware again)."""
    import machine

    machine.reset()


def rtc_memory(data=None):
    """Read (no argument) or replace the RTC memory, which survives a reset but not power loss."""
    import machine

    return machine.RTC().memory() if data is None else machine.RTC().memory(data)


# -- WiFi and NTP ---------------------------------------------------------------------

_wlan = None


def wlan():
    """The station interface (``network.WLAN(STA_IF)``), activated. ``OSError`` when the
    radio cannot start (``RuntimeError`` from the port becomes one: see ``wifi_connect``)."""
    global _wlan
    if _wlan is None:
        import network

        try:  # before the interface starts: DHCP and the port's mDNS responder use it (mimi.local)
            network.hostname(_HOSTNAME)
        except (AttributeError, ValueError, OSError):  # a MicroPython before 1.20, or a stand-in without it
            pass
        w = network.WLAN(network.STA_IF)
        try:
            w.active(True)
        except RuntimeError as e:
            raise OSError(str(e))
        _wlan = w
    return _wlan


_HOSTNAME = const("mimi")  # the board's name on the LAN: http://mimi.local (the web app, mimi.web)


def wifi_connect(ssid, password, timeout_ms=15000):
    """Start connecting to ``ssid`` and wait up to ``timeout_ms`` (0: do not wait); True
    when connected. ``OSError`` when the radio refuses: the ESP32 port raises
    ``RuntimeError("Wifi Unknown Error 0x....")`` for an ESP-IDF error it has no name for
    (ports/esp32/network_common.c), which reaches callers as ``OSError`` too."""
    try:
        w = wlan()
        if w.isconnected():
            return True
        w.connect(ssid, password)
        t0 = ticks_ms()
        while ticks_diff(ticks_ms(), t0) < timeout_ms:
            if w.isconnected():
                return True
            wait_ms(100)
        return w.isconnected()
    except RuntimeError as e:
        raise OSError(str(e))


def wifi_status():
    """(connected, ip or None, rssi or None); not connected when the radio cannot say."""
    try:
        w = wlan()
        if not w.isconnected():
            return (False, None, None)
        ip = w.ifconfig()[0]
    except (OSError, RuntimeError):
        return (False, None, None)
    try:
        rssi = w.status("rssi")
    except (OSError, RuntimeError, ValueError, TypeError):
        rssi = None
    return (True, ip, rssi)


def wifi_scan():
    """Visible networks as [(ssid str, rssi dBm, channel)], strongest first. ``OSError``
    when the radio refuses (as ``wifi_connect``)."""
    out = []
    try:
        items = wlan().scan()
    except RuntimeError as e:
        raise OSError(str(e))
    for item in items:
        try:
            name = item[0].decode()
        except UnicodeError:
            name = repr(item[0])
        i = 0
        while i < len(out) and out[i][1] >= item[3]:  # after the stronger and the as strong
            i += 1
        out.insert(i, (name, item[3], item[2]))
    return out


def ap_start(essid, password=None):
    """Open the access point ``essid`` (the setup portal's; mimi.web.portal): WPA2-PSK
    with ``password`` (8 to 63 characters), or open when ``password`` is None. Returns
    its IPv4 address as text (192.168.4.1 on the ESP32 port). The station interface
    stays as it is (the ESP32 runs both at once). ``OSError`` when the radio refuses.
    Source: https://docs.micropython.org/en/latest/library/network.WLAN.html
    (``authmode`` 0 open, 3 WPA2-PSK: network.AUTH_OPEN, AUTH_WPA2_PSK).
    """
    import network

    try:
        ap = network.WLAN(network.AP_IF)
        ap.active(True)
        if password:
            ap.config(essid=essid, password=password, authmode=3)
        else:
            ap.config(essid=essid, authmode=0)
        return ap.ifconfig()[0]
    except RuntimeError as e:
        raise OSError(str(e))


def ap_stop():
    """Close the access point (no error when it is not open)."""
    import network

    try:
        network.WLAN(network.AP_IF).active(False)
    except (OSError, RuntimeError):
        pass


def wifi_needed():
    """True where the firmware reaches the network through WiFi (the board); the host
    runtimes use the host's network, whatever the WiFi settings say (the stand-in WLAN)."""
    return _RT == "esp32"


def mac():
    """The station interface's MAC address (6 bytes)."""
    return bytes(wlan().config("mac"))


def ntp_sync(host=None):
    """Set the clock from NTP (micropython-lib ``ntptime``); raises ``OSError`` on failure."""
    import ntptime

    if host:
        ntptime.host = host
    ntptime.settime()


# -- network: TCP and TLS (issue 4; used only by mimi.net.http) ---------------------


class TLSError(OSError):
    """The TLS handshake failed or the server's certificate was not accepted."""


def tls_context(ders):
    """A client TLS context that verifies servers against the certificates ``ders`` yields.

    ``ders``: DER bytes each, maybe a generator (one certificate in RAM at a time).
    MicroPython: ``tls.SSLContext(PROTOCOL_TLS_CLIENT)`` with ``CERT_REQUIRED``; its
    ``load_verify_locations`` takes one DER certificate per call (the unix port's mbedTLS
    has no PEM parser, so callers convert PEM first). CPython: ``ssl.SSLContext``
    likewise. Returns ``(ctx, loaded, rejected)``: a certificate the library cannot parse
    is skipped and counted, not fatal.
    Source: https://docs.micropython.org/en/latest/library/ssl.html
    """
    if _RT == "cpython":
        import ssl as tls
    else:
        import tls
    ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)  # CPython: verifies and checks host names by default
    ctx.verify_mode = tls.CERT_REQUIRED
    n = bad = 0
    for d in ders:
        try:
            if _RT == "cpython":
                ctx.load_verify_locations(cadata=bytes(d))
            else:
                ctx.load_verify_locations(d)
            n += 1
        except (ValueError, OSError):  # CPython's ssl.SSLError is an OSError
            bad += 1
    return ctx, n, bad


def compiles(path):
    """True when a module at ``path`` (a module's ``__file__``) was compiled from source on
    this board as it was imported: a ``.py`` file on a file system, not frozen into the
    firmware (a relative name) and not bytecode (``.mpy``, the ROMFS image). The compiler
    then wants the main thread's stack (``mimi.app``). False on CPython, whose threads
    have room to compile."""
    return _RT != "cpython" and path.endswith(".py") and path.startswith("/")


def as_bytes(x):
    """A bytes-like view of ``x`` (str, bytes, bytearray, memoryview) for writing.

    MicroPython's ``memoryview(str)`` is the UTF-8 bytes without a copy; CPython encodes.
    """
    if isinstance(x, str):
        return x.encode() if _RT == "cpython" else memoryview(x)
    return x


def loads_view(mv):
    """``json.loads`` of a memoryview slice (MicroPython parses it in place; CPython copies)."""
    return json.loads(bytes(mv) if _RT == "cpython" else mv)


thread_id = _thread.get_ident  # an id of the calling thread, for per-thread caches

# A socket timeout's errno: ETIMEDOUT is 110 on Linux and in MicroPython's own table, 116
# in the newlib the ESP32 port uses (its sockets and mbedTLS raise that one).
_ETIMEDOUT = (110, 116) if _RT == "esp32" else (110,)
# One TLS context serves every thread (certs.context): the unix port runs threads without
# an interpreter lock, and its mbedTLS has no locks of its own, so there handshakes (which
# draw from the context's random generator) take turns. The ESP32 port's interpreter lock
# is held across each draw; CPython's ssl locks itself.
_tls_turn = _thread.allocate_lock() if _RT == "unix" else None


def timed_out(e):
    """True when the exception ``e`` is a socket timeout (errno ETIMEDOUT, either
    number; CPython's ``TimeoutError``)."""
    a = getattr(e, "args", ())
    return isinstance(e, OSError) and (bool(a) and a[0] in _ETIMEDOUT or type(e).__name__ in ("TimeoutError", "timeout"))


def _as_timeout(e):
    """``e`` as this module says a timeout (``OSError(110, "timed out")``), else ``e``."""
    return OSError(110, "timed out") if timed_out(e) else e


def resolve(host, port):
    """``getaddrinfo`` for a TCP connection to ``host``: a list of
    ``(family, type, proto, canonname, sockaddr)``. ``OSError`` saying what to fix: no
    WiFi (on the board, before any DNS), or that ``host`` does not resolve. The ESP32
    port's sockets are IPv4 only (an IPv6 answer would have no address: TypeError)."""
    import socket

    if _RT == "esp32" and not wlan().isconnected():
        raise OSError(pick(_MSG, "wifi") % host)  # what to fix first, not a DNS error
    try:
        return socket.getaddrinfo(host, port, socket.AF_INET if _RT == "esp32" else 0, socket.SOCK_STREAM)
    except OSError as e:  # MicroPython says only "-202", CPython "[Errno -2] Name or service not known"
        raise OSError(pick(_MSG, "dns") % (host, e))


def address(sockaddr):
    """The host part of a ``resolve`` answer's sockaddr as text ("149.154.167.220"): a
    tuple on the ESP32 port and CPython, raw ``sockaddr_in`` bytes on the unix port."""
    if isinstance(sockaddr, tuple):
        return str(sockaddr[0])
    b = bytes(sockaddr)
    if len(b) >= 8 and b[0] == 2:  # AF_INET: family, port, then the 4 address bytes
        return "%d.%d.%d.%d" % (b[4], b[5], b[6], b[7])
    return repr(b)


class Conn:
    """One TCP connection, maybe TLS, where every wait has a timeout.

    ``Conn(host, port, connect_timeout_ms, ctx=None)`` resolves and connects, trying each
    address (``OSError``: refused, timed out, host not found); with ``ctx`` (from
    ``tls_context``) it then does the TLS handshake, checking ``host``'s certificate
    (``TLSError`` naming the host and the library's reason when refused). DNS:
    ``getaddrinfo`` has no timeout of its own on MicroPython (lwIP's resolver gives up by
    itself after some seconds); CPython's is bounded by the OS resolver. Writes block with
    the socket's timeout; MicroPython's stream ``readinto`` would wait to fill the whole
    buffer, so there reads are non-blocking and ``select.poll`` does the waiting.
    """

    def __init__(self, host, port, connect_timeout_ms, ctx=None):
        import socket

        self._poll = None
        err = OSError(pick(_MSG, "none") % host)
        for ai in resolve(host, port):
            s = socket.socket(ai[0], socket.SOCK_STREAM, ai[2])
            try:
                s.settimeout(connect_timeout_ms / 1000)
                s.connect(ai[-1])
                break
            except BaseException as e:  # try the next address ("localhost": ::1, then 127.0.0.1)
                s.close()
                if not isinstance(e, OSError):
                    raise
                err = _as_timeout(e)
        else:
            raise err
        try:  # TCP_NODELAY (IPPROTO_TCP 6, option 1 on Linux and lwIP; the unix port names neither):
            s.setsockopt(6, 1, 1)  # on a kept connection, out of TCP's quick-ACK start, Nagle
        except (OSError, TypeError, ValueError):  # would hold a request's last piece 40 ms for an ACK
            pass
        self.raw = self.s = s  # raw: the socket itself; s: what we read and write (maybe TLS)
        self.via = None  # "proxy host:port" when mimi.net.proxy tunnelled it
        if ctx:
            self.start_tls(ctx, host, connect_timeout_ms)

    def start_tls(self, ctx, host, timeout_ms):
        """The TLS handshake over this connection (a tunnel's, or the one just made),
        checking ``host``'s certificate within ``timeout_ms``; errors as ``Conn`` says.
        The connection is closed on failure. Where the runtime needs it, handshakes take
        turns on the shared context (``_tls_turn``)."""
        s = self.raw
        s.settimeout(timeout_ms / 1000)  # blocking again after a non-blocking read
        self._poll = None  # it watched the plain socket
        try:
            if _tls_turn:
                with _tls_turn:
                    self.s = ctx.wrap_socket(s, server_hostname=host)
            else:
                self.s = ctx.wrap_socket(s, server_hostname=host)
        except (ValueError, OSError) as e:
            s.close()
            if timed_out(e):
                raise OSError(110, pick(_MSG, "hs") % (host, "timed out"))
            a = e.args
            code = a[0] if a and isinstance(a[0], int) and a[0] < 0 else 0  # MicroPython: mbedTLS's
            # A refused certificate: MicroPython's ValueError, an mbedTLS X509 code
            # (-0x2000 to -0x2FFF), CPython's SSLCertVerificationError. Not worth a retry.
            if isinstance(e, ValueError) or "CertVerif" in type(e).__name__ or -0x3000 < code <= -0x2000:
                why = getattr(e, "verify_message", None) or (
                    "mbedTLS error %d" % code if code else str(a[-1] if len(a) > 1 else e).strip())
                raise TLSError(pick(_MSG, "tls") % (host, why or type(e).__name__))
            if code or "SSL" in type(e).__name__:  # the handshake broke off (EOF, an alert): retry
                raise OSError(pick(_MSG, "hs") % (host, a[1] if code and len(a) > 1 else e))
            raise
        if _RT == "cpython":
            self.raw = self.s  # the plain socket was detached

    def readinto(self, mv, timeout_ms):
        """Read what has arrived into ``mv``, waiting at most ``timeout_ms``: the count (0 at
        the end of the stream), or None when nothing came in time."""
        s = self.s
        if _RT == "cpython":
            s.settimeout(timeout_ms / 1000)
            try:
                return s.recv_into(mv)
            except OSError as e:  # nothing yet: a timeout, or would block at timeout 0
                if isinstance(e, (TimeoutError, BlockingIOError)) or "Want" in type(e).__name__:
                    return None
                raise
        self.raw.setblocking(False)
        if self._poll is None:
            import select

            self._poll = select.poll()
            self._poll.register(s, 1)  # POLLIN
        while True:
            n = s.readinto(mv)  # what is there, or None
            if n is not None or not self._poll.poll(max(0, int(timeout_ms))):
                return n

    def write(self, data, timeout_ms):
        """Write all of ``data`` (bytes-like); ``OSError`` (timed out) if the peer stalls."""
        self.raw.settimeout(timeout_ms / 1000)
        try:
            if _RT == "cpython":
                self.s.sendall(data)
            else:
                self.s.write(data)
        except OSError as e:
            raise _as_timeout(e)

    def close(self):
        """Close the connection; safe to call twice."""
        for s in (self.s, self.raw):
            try:
                s.close()
            except OSError:
                pass


# -- storage (mimi/storage/fs.py; issue 3) -----------------------------


def mtime_s(real):
    """Last change of the file ``real`` as unix seconds (the port's epoch removed).

    Raises ``OSError`` when it is missing. LittleFS on the device keeps mtimes.
    """
    return int(os.stat(real)[8]) + _EPOCH_OFFSET


# -- runtime: threads (issue 5; used by mimi.app) ------------------------------------


def listen_host():
    """The address the web server listens on: every interface on the board; loopback on
    the host (a simulator is not offered to the network), or ``MIMI_WEB_HOST``."""
    if _RT == "esp32":
        return "0.0.0.0"
    return os.getenv("MIMI_WEB_HOST") or "127.0.0.1"


def thread_stack_bytes(device_bytes):
    """The stack to ask for where the device would use ``device_bytes``.

    The unix port is 64-bit: its stack frames are about twice the ESP32's, and it
    compiles ``.py`` imports in the thread that imports (the device runs precompiled or
    frozen modules), so it gets four times the size (16 KB on the device segfaults there
    when a thread imports a module). CPython ignores sizes below its own minimum.
    """
    if _RT == "unix":
        return device_bytes * 4
    return device_bytes


def reset_cause():
    """Why the board started: "power" (power on, a brownout, and the S3's RST/EN button,
    which resets the whole chip as a power-on does), "hard" (``machine.reset()``, a
    panic), "watchdog", "soft" (Ctrl-D, mpremote), "deepsleep" or "unknown".

    From ``machine.reset_cause()`` (ports/esp32/modmachine.c maps ESP_RST_POWERON and
    ESP_RST_BROWNOUT to PWRON_RESET, ESP_RST_SW and ESP_RST_PANIC to HARD_RESET); the
    host stand-in always says "power".
    """
    import machine

    c = machine.reset_cause()
    for name in ("power", "hard", "watchdog", "soft", "deepsleep"):
        k = "PWRON" if name == "power" else "WDT" if name == "watchdog" else name.upper()
        if getattr(machine, k + "_RESET", None) == c:  # machine.PWRON_RESET, ...
            return name
    return "unknown"
