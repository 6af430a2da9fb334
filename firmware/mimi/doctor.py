"""``tools/flash.sh doctor``: a report made on the board, changing nothing.

flash.sh runs ``from mimi import doctor; doctor.run()`` over ``mpremote resume exec``:
``resume`` means no soft reset, so a running assistant goes on running. Each line starts
with ``OK``, ``WARN`` (works, but worth a look) or ``FIX`` (what to do is on the line),
in this order: MicroPython and the board; PSRAM, internal RAM, GC heap, flash; WiFi; the
clock; the settings store (an NVS round trip on a key of its own, erased after); for the
Telegram API and the LLM, DNS and then a TCP connection with the TLS handshake against
the CA bundle, timed; the MQTT broker when ``mqtt_url`` is set (the assistant's
connection, or one made and closed here while it is stopped); a thread with the app's
stack size doing a handshake; which
settings are set (names only, never a value). The last line counts the FIX lines.

It reads settings and the network like the app does, so what it says is what the app
meets. Only ``run`` is public; it never raises (a check that fails is a FIX line).
"""
from micropython import const

from mimi import config, seam

_TAG_LEN = const(4)
_HEAP_NEED_KB = const(300)  # what the app's init and a turn take as .py files (README "Limits")
_INTERNAL_PEAK_KB = const(150)  # mimi's own internal RAM at its peak (docs/heap.md "Internal RAM")
_FLASH_LOW_KB = const(64)
_RSSI_WEAK_DBM = const(-80)
_THREAD_WAIT_MS = const(30000)
_NVS_KEY = "mimi_doctor"  # at most 15 characters (NVS)


def run(out=print):
    """Print the report, one check a line, through ``out``; return the number of FIX lines."""
    fixes = 0
    for check in (_runtime, _memory, _wifi, _clock, _nvs, _servers, _mqtt, _thread, _settings):
        try:
            for level, text in check():
                out("%-*s %s" % (_TAG_LEN, level, text))
                fixes += level == "FIX"
        except Exception as e:  # noqa: BLE001 - a report line, never a traceback
            out("%-*s %s: %r" % (_TAG_LEN, "FIX", check.__name__[1:], e))
            fixes += 1
    out("doctor: %s" % ("all OK" if not fixes else "%d to fix" % fixes))
    return fixes


def _kb(n):
    return n // 1024


def _runtime():
    v = seam.version()
    if v is None:
        yield "OK", "%s on %s (the host: no board checks)" % (seam.describe(), seam.board())
    elif v < (1, 26):
        yield "FIX", ("MicroPython %d.%d.%d on %s: 1.26 or newer is needed (1.24 and 1.25 crash in getaddrinfo "
                      "on the S3 and on a soft reset after a thread ended): flash 1.28.0 (tools/flash.sh flash)"
                      % (v + (seam.board(),)))
    else:
        yield "OK", "MicroPython %d.%d.%d on %s" % (v + (seam.board(),))


def _memory():
    from mimi import app

    r = seam.ram()
    running = app.running()
    p = r["psram"]
    if p is None and r["internal"] is not None:
        yield "FIX", ("no PSRAM found: an octal-PSRAM module (N16R8, N8R8) needs MicroPython's SPIRAM_OCT image "
                      "(https://micropython.org/download/ESP32_GENERIC_S3/); a board without PSRAM cannot run mimi")
    elif p is not None:
        yield "OK", "PSRAM: %d KB free of %d KB" % (_kb(p[1]), _kb(p[0]))
    i = r["internal"]
    if i is not None:
        line = "internal RAM: %d KB free, largest block %d KB" % (_kb(i[1]), _kb(i[2]))
        if i[2] < config.APP_THREAD_STACK_BYTES + 1024:
            yield "FIX", line + ": a thread's %d KB stack does not fit; tools/flash.sh reset" % _kb(
                config.APP_THREAD_STACK_BYTES)
        elif not running and _kb(i[1]) < _INTERNAL_PEAK_KB:
            yield "WARN", line + ": under the %d KB mimi takes at its peak (stacks, TLS)" % _INTERNAL_PEAK_KB
        else:
            yield "OK", line + (" (the assistant running)" if running else "")
    if r["gc_free"] is not None:
        room = r["gc_free"] + (r["gc_grow"] or 0)
        g = r["gc_grow"]
        line = "GC heap: %d KB used, %d KB free, %s" % (
            _kb(r["gc_used"]), _kb(r["gc_free"]), "can grow by %d KB" % _kb(g) if g else "fixed size")
        if not running and _kb(room) < _HEAP_NEED_KB:
            yield "WARN", line + ": the assistant needs about %d KB (tools/flash.sh deploy puts it in ROMFS: half)" % (
                _HEAP_NEED_KB)
        else:
            yield "OK", line
    f = seam.flash_free()
    if f is not None:
        if _kb(f) < _FLASH_LOW_KB:
            yield "WARN", "flash: %d KB free: notes and chats soon fail to save (delete /data/sessions/archive)" % _kb(f)
        else:
            yield "OK", "flash: %d KB free" % _kb(f)


def _wifi():
    ssid = config.get("wifi_ssid")
    up, ip, rssi = seam.wifi_status()
    if not ssid:
        if seam.on_host():
            yield "OK", "WiFi: none set (the host's network)"
        else:
            yield "FIX", "WiFi: none set: tools/flash.sh config wifi_ssid=NAME wifi_pass=PASSWORD"
        return
    if not up:
        seen = [n for n, _, _ in seam.wifi_scan()]
        why = ("the network is there: check the password (tools/flash.sh config wifi_pass=...)" if ssid in seen else
               "no such network in range: the S3 has 2.4 GHz only (a 5 GHz-only network is invisible to it), "
               "check the name (tools/flash.sh config wifi_ssid=...)")
        yield "FIX", "WiFi: not connected to %s: %s" % (ssid, why)
        return
    line = "WiFi: connected to %s, address %s, signal %s dBm" % (ssid, ip, rssi)
    if rssi is not None and rssi < _RSSI_WEAK_DBM:
        yield "WARN", line + ": weak, expect dropped calls (move the board closer)"
    else:
        yield "OK", line


def _clock():
    if not seam.clock_synced():
        yield "FIX", ("clock: not set: NTP has not answered (it needs WiFi, and UDP port 123 open); "
                      "HTTPS cannot check certificates until it is")
        return
    tm = seam.gmtime(seam.time_s())
    yield "OK", "clock: %04d-%02d-%02d %02d:%02d:%02d UTC" % tm[:6]


def _nvs():
    t0 = seam.ticks_ms()
    v = "doctor %d" % t0
    try:
        seam.store_set(_NVS_KEY, v)
        back = seam.store_get(_NVS_KEY)
    finally:
        seam.store_erase(_NVS_KEY)
    gone = seam.store_get(_NVS_KEY) is None
    ms = seam.ticks_diff(seam.ticks_ms(), t0)
    if back == v and gone:
        yield "OK", "settings store (NVS): write, read back, erase in %d ms" % ms
    else:
        yield "FIX", "settings store (NVS): wrote %r, read %r%s: the NVS partition may be damaged" % (
            v, back, "" if gone else ", not erased")


def _targets():
    """[(label, url)]: the Telegram API and the LLM endpoint the app would call."""
    from mimi import llm

    return [("Telegram", config.get("tg_api_base")), ("LLM", llm.current().url)]


def _servers():
    from mimi.net import http

    for label, url in _targets():
        try:
            tls, host, port, _ = http.parse_url(url)
        except ValueError as e:
            yield "FIX", "%s: %s" % (label, e)
            continue
        if config.get("proxy"):
            from mimi.net import tunnel

            if not tunnel.direct(host):  # the proxy resolves the name: the board asks no DNS for it
                yield "OK", "DNS %s: resolved by the proxy %s" % (host, tunnel.shown(config.get("proxy")))
                yield _connect(label, host, port, tls)
                continue
        t0 = seam.ticks_ms()
        try:
            ais = seam.resolve(host, port)
        except OSError as e:
            yield "FIX", "DNS %s: %s: check the network's DNS, or the address (%s)" % (host, e, url)
            continue
        yield "OK", "DNS %s: %s in %d ms" % (host, seam.address(ais[0][-1]), seam.ticks_diff(seam.ticks_ms(), t0))
        yield _connect(label, host, port, tls)


def _connect(label, host, port, tls):
    """One (level, text) line: a TCP connection to ``host``, with the TLS handshake when
    ``tls``, timed, then closed."""
    from mimi.net import certs

    ctx = None
    if tls:
        if not seam.clock_synced():
            return "FIX", "TLS %s: not tried: the clock is not set (see the clock line)" % host
        try:
            ctx = certs.context()
        except OSError as e:
            return "FIX", "TLS %s: %s: tools/flash.sh seed puts the bundle there" % (host, e)
    from mimi.net import proxy

    t0 = seam.ticks_ms()
    try:
        c = proxy.connect(host, port, ctx)  # as the assistant connects: through the proxy when one is set
    except ValueError as e:
        return "FIX", "proxy setting: %s: tools/flash.sh config proxy=... (or proxy= to clear it)" % e
    except seam.TLSError as e:
        return "FIX", "TLS %s: %s: a proxy or an intercepting network? add its root as a .pem in %s" % (
            host, e, config.CERTS_DIR)
    except OSError as e:
        return "FIX", "%s %s:%d: cannot connect: %s" % (label, host, port, e)
    ms = seam.ticks_diff(seam.ticks_ms(), t0)
    via = getattr(c, "via", None)
    c.close()
    via = " (through %s)" % via if via else ""
    if not tls:
        return "OK", "%s %s:%d: plain HTTP, connected in %d ms%s" % (label, host, port, ms, via)
    return "OK", "TLS %s:%d: handshake in %d ms, certificate accepted by the CA bundle%s" % (host, port, ms, via)


def _mqtt():
    """The broker of ``mqtt_url``, when set: the assistant's connection as it is, or (the
    assistant stopped) one connection made, timed, and closed: the same client id, so it
    is never tried beside the assistant's, which the broker would drop."""
    if not config.get("mqtt_url"):
        return
    from mimi.net import mqtt

    fix = "tools/flash.sh config mqtt_url=mqtt://[user:pass@]host[:port]"
    try:
        c = mqtt.client() or mqtt.Client(config.get("mqtt_url"))
    except ValueError as e:
        yield "FIX", "MQTT: %s: %s" % (e, fix)
        return
    if c is mqtt.client() and c.state != "stopped":
        yield "OK" if c.state == "connected" else "FIX", "MQTT (the assistant's): " + c.describe()
        return
    t0 = seam.ticks_ms()
    c.tick(t0)
    ms = seam.ticks_diff(seam.ticks_ms(), t0)
    if c.state != "connected":
        yield "FIX", "MQTT: %s: check the broker's address, user and password (%s)" % (c.describe(), fix)
        return
    c.stop()
    yield "OK", "MQTT %s:%d: connected in %d ms%s" % (c.host, c.port, ms, " (TLS)" if c.tls else "")


def _thread():
    label, url = _targets()[1]
    from mimi.net import http

    try:
        tls, host, port, _ = http.parse_url(url)
    except ValueError:
        return
    stack = seam.thread_stack_bytes(config.APP_THREAD_STACK_BYTES)
    got = []

    def work():
        try:
            import micropython

            use = micropython.stack_use() if hasattr(micropython, "stack_use") else None
            use = use or None  # CPython's stand-in says 0: unknown
            got.append((_connect(label, host, port, tls), use))
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            got.append((("FIX", "%r" % e), None))

    try:
        seam.start_thread(work, (), stack)
    except (OSError, RuntimeError, MemoryError) as e:
        yield "FIX", "thread with a %d KB stack: cannot start (%s): internal RAM is short; tools/flash.sh reset" % (
            _kb(stack), e)
        return
    t0 = seam.ticks_ms()
    while not got and seam.ticks_diff(seam.ticks_ms(), t0) < _THREAD_WAIT_MS:
        seam.wait_ms(50)
    if not got:
        yield "FIX", "thread with a %d KB stack: no answer in %d s" % (_kb(stack), _THREAD_WAIT_MS // 1000)
        return
    (level, text), use = got[0]
    yield level, "thread with a %d KB stack%s: %s" % (
        _kb(stack), "" if use is None else " (%d B in use at its start)" % use, text)


def _settings():
    from mimi import llm

    have = []
    for name in config.SETTINGS:
        if seam.store_get(config.SETTINGS[name][0]) is not None:
            have.append(name)
    have.sort()
    yield "OK", "settings set: %s" % (", ".join(have) or "none")
    if "tg_token" not in have:
        yield "FIX", "tg_token not set: tools/flash.sh config tg_token=<the token @BotFather gave>"
    if llm.current()._key is None:  # a provider that needs a key (not a local server) and has none
        yield "FIX", "no API key for %s: tools/flash.sh config api_key=..." % config.get("provider")
    if "allowed_chats" not in have:
        yield "WARN", "no chat allowed yet: the console's cli.pair() gives a code to send from yours"
