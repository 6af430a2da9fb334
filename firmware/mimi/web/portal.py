"""The WiFi setup portal: an access point ``mimi-XXXX``, a captive DNS and one form.

When it opens (``wanted``): no WiFi network is set; the BOOT button
(``config.PORTAL_BOOT_PIN``, low while pressed) is held at start; or WiFi is set but has
not connected for ``config.PORTAL_WIFI_DOWN_MS`` (``boot.NetKeeper.down_ms``).

The access point is open only while the board holds no secret (no setting marked secret
in ``config.SETTINGS`` is set: WiFi password, bot token, API keys, ...). Once one is, it
uses WPA2-PSK with a password made once (kept in NVS under ``config.PORTAL_PASS_KEY``)
and printed on the serial console each time the portal opens: whoever can join could otherwise replace the
owner's settings (never read them: see below).

The page (``/``, ``mimi.web.setup_form``): the networks seen (scan list), the WiFi
password, the Telegram token, the provider with its key and address, the time zone. Each
field is checked as the serial console checks it and stored in NVS through ``config``; a
field left empty keeps what is stored. No secret is ever sent to a browser, not even masked: a secret
field says "set" or "not set". After a save (a WiFi network being set) the portal closes
and the caller restarts the board, which then joins the network.

The POST is guarded, though the portal has no login (it is the owner's first contact):
a per-boot token in a hidden field (a page of another site cannot read it) and, when the
browser sends them, ``Origin``/``Referer`` of the portal's own address; any other
``Host`` is sent to the portal (captive redirects; also what stops DNS rebinding).

The OS connectivity checks (Android ``/generate_204``, Apple ``/hotspot-detect.html``,
Windows ``/connecttest.txt`` ``/ncsi.txt``, Firefox ``/canonical.html`` ``/success.txt``)
and every unknown host or path get a 302 to the portal, which makes the phone or PC
show its "sign in to network" page.

``run()`` serves it in the calling thread (asyncio: microdot's server, the DNS task, a
watcher); ``start()`` runs that in a thread of its own and ``main()`` is what the boot
runs: the portal, then a reset. docs/portal.md tells the owner's side.
"""
from micropython import const

from mimi import config, log, seam

_TAG = "portal"
_PORTAL_JOIN_DELAY_MS = const(3000)  # after a save: time for the answer page to arrive
_PORTAL_IDLE_MS = const(300000)  # WiFi back up and no request this long: the portal closes
_PORTAL_WATCH_MS = const(500)
_PORTAL_RETRY_MS = const(300000)  # after the portal failed to open, before start() tries again
_PORTAL_PASS_LEN = const(12)
_PORTAL_SCAN_MAX = const(20)  # networks listed
_PORTAL_STACK_BYTES = const(16384)
# Letters and digits that cannot be mistaken for one another on a console (no l, 1, o, 0)
_PASS_CHARS = "abcdefghijkmnpqrstuvwxyz23456789"

BOOT_HELD = "BOOT button held"  # wanted()'s reason when the owner asked for the portal

state = {"token": None, "address": None, "scan": None, "saved": None, "last_ms": 0,
         "stop": [False], "result": None, "running": False, "app": None, "failed_ms": None, "stay": False}
# token: the form's per-boot token; address: how browsers reach the portal ("192.168.4.1",
# "127.0.0.1:8080"); saved: ticks_ms of a save that set WiFi; last_ms: the last request;
# result: why run() returned ("saved", "wifi", "stopped"); stay: WiFi coming back does not close it


# -- when, and how the access point is secured ------------------------------------------


def secrets_stored():
    """True when any secret setting (``config.SETTINGS``'s third item) holds a value."""
    for name in config.SETTINGS:
        if config.is_secret(name) and config.get(name):
            return True
    return False


def ap_name():
    """The access point's name: ``mimi-`` and the last 4 hex digits of the MAC (``mimi-511A``)."""
    m = seam.mac()
    return "mimi-%02X%02X" % (m[-2], m[-1])


def ap_password():
    """The WPA2 password of the access point, or None while it is to be open (no secret
    stored). Made once from ``os.urandom`` (12 characters, about 60 bits) and kept in
    the settings store."""
    if not secrets_stored():
        return None
    pw = seam.store_get(config.PORTAL_PASS_KEY) or ""
    if len(pw) < 8:
        import os

        pw = "".join(_PASS_CHARS[b % len(_PASS_CHARS)] for b in os.urandom(_PORTAL_PASS_LEN))
        seam.store_set(config.PORTAL_PASS_KEY, pw)
    return pw


def boot_button():
    """True while the BOOT button (``config.PORTAL_BOOT_PIN``, pulled up) is pressed."""
    try:
        return seam.pin(config.PORTAL_BOOT_PIN, "in", "up").value() == 0
    except (OSError, ValueError):
        return False


def wanted(keeper=None, now_ms=None):
    """Why the portal should open now, as a short text, or None.

    ``keeper``: the ``boot.NetKeeper`` (None at boot: only the first two reasons apply).
    """
    if not config.get("wifi_ssid"):
        return "no WiFi set"
    if keeper is None:
        return BOOT_HELD if boot_button() else None
    down = keeper.down_ms(seam.ticks_ms() if now_ms is None else now_ms)
    if down >= config.PORTAL_WIFI_DOWN_MS:
        return "WiFi down for %d s" % (down // 1000)
    return None


# -- the scan list --------------------------------------------------------------------


def scan():
    """The networks to list: [(ssid, rssi dBm)], strongest first, names unique, at most
    ``_PORTAL_SCAN_MAX``; [] when the radio cannot scan. Kept until ``/scan`` asks again."""
    out = []
    try:
        for name, rssi, _ in seam.wifi_scan():
            if name and name not in [n for n, _ in out] and len(out) < _PORTAL_SCAN_MAX:
                out.append((name, rssi))
    except OSError as e:
        log.warn(_TAG, "scan: %s", e)
    state["scan"] = out
    return out


# -- the web app --------------------------------------------------------------------------

_HEADERS = {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
            "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                       "frame-ancestors 'none'"}


def _html(body, status=200):
    from microdot import Response

    return Response(body, status, dict(_HEADERS))


def _page(notice="", errors=None, typed=None, status=200):
    """The form (``setup_form.page``) with the scan list and token of this portal, as a response."""
    from mimi.web import setup_form

    return _html(setup_form.page(state["scan"] or [], state["token"], notice, errors, typed), status)


def _home():
    from microdot import Response

    return Response.redirect("http://%s/" % state["address"])


def same_origin(headers):
    """True unless the request's ``Origin`` or ``Referer`` names another site than the
    portal's address (a browser sends one of them with a form's POST; a client that sends
    neither is judged by the token alone)."""
    mine = "http://" + state["address"]
    o = headers.get("Origin")
    if o is not None:
        return o == mine
    r = headers.get("Referer")
    return r is None or r == mine or r[:len(mine) + 1] == mine + "/"


def make_app():
    """The portal's microdot app (routes and the captive redirects)."""
    from microdot import Microdot
    from mimi.web import setup_form

    app = Microdot()

    @app.before_request
    def captive(req):
        state["last_ms"] = seam.ticks_ms()
        h = req.headers.get("Host") or ""
        if h != state["address"] and h != state["address"] + ":80":
            return _home()  # another site's name (the DNS says every name is the board)

    @app.route("/")
    def index(req):
        return _page()

    @app.route("/scan")
    def rescan(req):
        scan()
        return _home()

    @app.route("/save", methods=["POST"])
    def save_form(req):
        form = req.form or {}
        if not same_origin(req.headers) or form.get("csrf") != state["token"]:
            return _html("<p>This form is out of date: <a href='/'>open it again</a>.</p>", 403)
        stored, errors = setup_form.save(form)
        log.info(_TAG, "stored: %s%s", ", ".join(stored) or "nothing",
                 "; refused: " + ", ".join(errors) if errors else "")
        if errors:
            typed = {"provider": form.get("provider"), "base_url": form.get("base_url"), "tz": form.get("tz")}
            return _page("Not saved: see the fields in red%s." % ("; saved: " + ", ".join(stored) if stored else ""),
                         errors, typed, 400)
        if stored and config.get("wifi_ssid"):  # the portal closes; the board restarts and joins
            state["saved"] = seam.ticks_ms()
            note = "Saved: %s. The board now restarts and joins %s; this network closes." % (
                ", ".join(stored), config.get("wifi_ssid"))
        else:
            note = "Saved: %s." % (", ".join(stored) or "nothing changed")
        return _page(note)

    # The OS connectivity checks (/generate_204, /hotspot-detect.html, /connecttest.txt,
    # /ncsi.txt, /canonical.html, /success.txt...) expect one exact answer; anything else,
    # a redirect to the portal here, makes the phone or PC open its sign-in page.
    @app.route("/<path:path>", methods=["GET", "POST"])
    def anything(req, path):
        return _home()

    return app


# -- running it ---------------------------------------------------------------------------


def _token():
    import binascii
    import os

    return binascii.hexlify(os.urandom(16)).decode()


async def _watch(app, keeper):
    """Close the portal (``app.shutdown()``) when asked (``stop()``), after a save (with a WiFi
    network set; once the answer page had time to go), or, unless ``state["stay"]``, when WiFi
    is back and nobody used the portal for ``_PORTAL_IDLE_MS``. ``keeper``: a ``boot.NetKeeper`` to tick (the portal
    mode's; None beside the app, whose I/O thread ticks its own)."""
    import asyncio

    t0 = seam.ticks_ms()
    healthy = False
    while True:
        await asyncio.sleep(_PORTAL_WATCH_MS / 1000)
        now = seam.ticks_ms()
        if not healthy and seam.ticks_diff(now, t0) >= config.BOOT_HEALTHY_MS:
            from mimi import boot

            boot.clear_crashes()  # it ran this long: the boots before were no reset loop
            healthy = True
        up = keeper.tick(now, False) if keeper is not None else seam.wifi_status()[0]
        why = None
        if state["stop"][0]:
            why = "stopped"
        elif state["saved"] is not None and seam.ticks_diff(now, state["saved"]) >= _PORTAL_JOIN_DELAY_MS:
            why = "saved"
        elif up and not state["stay"] and seam.ticks_diff(now, state["last_ms"]) >= _PORTAL_IDLE_MS:
            why = "wifi"
        if why:
            state["result"] = why
            app.shutdown()
            return


def run(port=80, dns_port=53, host="0.0.0.0", address=None, keeper=None, reason="", stay=False):
    """Open the access point and serve the portal in this thread until it closes; returns
    why: "saved" (settings were stored and a WiFi network is set: restart to join), "wifi"
    (the network came back), "stopped" (``stop()``).

    ``port``, ``dns_port``, ``host``: where the HTTP server and the DNS responder listen
    (the board: 80 and 53 on every interface, which is sure to bind as soon as the access
    point is up; from a network the board has joined meanwhile the page is only a redirect
    to the access point's address, as the Host differs; the simulator: high ports on
    127.0.0.1).
    ``address``: how a browser reaches the portal ("127.0.0.1:8080"); default the access
    point's address (and ``:port`` unless 80). ``keeper``: see ``_watch``. ``stay``: WiFi
    coming back does not close it (the owner asked for it: BOOT held). Prints the
    access point's name and, when it is secured, its password on the console.
    ``OSError`` when a port cannot be bound or the radio refuses (the AP is closed again).
    """
    import asyncio
    from mimi.net import captive_dns

    name = ap_name()
    pw = ap_password()
    ip = seam.ap_start(name, pw)
    dns = None
    try:
        state["address"] = address or (ip if port == 80 else "%s:%d" % (ip, port))
        state["token"] = state["token"] or _token()
        state["stop"][0] = False
        state["saved"] = state["result"] = None
        state["stay"] = stay
        state["last_ms"] = seam.ticks_ms()
        state["running"] = True
        # DNS names the address browsers reach the portal at (the simulator's loopback)
        dns = captive_dns.Responder(state["address"].split(":")[0], dns_port, host)
        scan()
        app = state["app"] = make_app()
        print("[portal] %s: WiFi %s%s; open http://%s/ (%s)" % (
            reason or "setup", name, " (WPA2) password: " + pw if pw else " (open)", state["address"],
            "every name leads there" if dns_port == 53 else "DNS on port %d" % dns_port))

        async def main():
            asyncio.create_task(captive_dns.serve(dns, state["stop"]))
            asyncio.create_task(_watch(app, keeper))
            await app.start_server(host, port)
            state["stop"][0] = True  # the DNS task ends
            await asyncio.sleep(0.2)

        asyncio.run(main())
    finally:
        state["running"] = False
        state["app"] = None
        if dns is not None:
            dns.close()
        seam.ap_stop()
    state["result"] = state["result"] or "stopped"
    log.info(_TAG, "closed: %s", state["result"])
    return state["result"]


def start(**kw):
    """``main(**kw)`` in a thread of its own; returns at once: False when the portal runs
    already, or failed to open less than ``_PORTAL_RETRY_MS`` ago. The thread logs an
    error and ends on ``OSError`` (a port taken, the radio refusing)."""
    f = state["failed_ms"]
    if state["running"] or f is not None and seam.ticks_diff(seam.ticks_ms(), f) < _PORTAL_RETRY_MS:
        return False
    state["running"] = True
    seam.start_thread(_thread_main, (kw,), seam.thread_stack_bytes(_PORTAL_STACK_BYTES))
    return True


def _thread_main(kw):
    try:
        main(**kw)
    except Exception as e:  # noqa: BLE001 - a thread's end: say why
        state["running"] = False
        state["failed_ms"] = seam.ticks_ms()
        log.exc(_TAG, "portal", e)


def main(restart=True, **kw):
    """``run(**kw)``, then, with ``restart``, a reset when it closed after a save, or
    because WiFi came back in the portal mode (a ``keeper`` given: the app is not
    running), so the board boots normally: the app, WiFi joined. Beside the running app
    (no ``keeper``) WiFi coming back just closes the portal."""
    why = run(**kw)
    if restart and (why == "saved" or why == "wifi" and kw.get("keeper") is not None):
        from mimi import app, boot

        seam.wait_ms(200)
        if app.running():
            app.restart()  # beside the app: stopped cleanly (the Telegram offset kept), then reset
        boot.app_running(False)  # a deliberate reset: not a crash (mimi.boot)
        boot.clear_crashes()
        seam.reset()
    return why


def stop():
    """Ask a running portal to close (within ``_PORTAL_WATCH_MS``)."""
    state["stop"][0] = True
