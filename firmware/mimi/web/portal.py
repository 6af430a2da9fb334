"""The WiFi setup portal: an access point ``mimi-XXXX``, a captive DNS and one form.

When it opens (``wanted``): no WiFi network is set; the BOOT button
(``config.PORTAL_BOOT_PIN``, low while pressed) is held at start; or WiFi is set but has
not connected for ``config.PORTAL_WIFI_DOWN_MS`` (``boot.NetKeeper.down_ms``).

The access point is open only while the board holds no secret (no setting marked secret
in ``config.SETTINGS`` is set: WiFi password, bot token, API keys, ...). Once one is, it
uses WPA2-PSK with a password made once (kept in NVS under ``config.PORTAL_PASS_KEY``) and printed on the
serial console each time the portal opens: whoever can join could otherwise replace the
owner's settings (never read them: see below).

The page (``/``): the networks seen (scan list), the WiFi password, the Telegram token,
the provider with its key and address, the time zone. Each field is checked as the
serial console checks it (``cli.token_ok``, ``commands.plain``, ``llm.switch``,
``llm.set_key``, ``clock.set_tz``) and stored in NVS through ``config``; a field left empty
keeps what is stored. No secret is ever sent to a browser, not even masked: a secret
field says "set" or "not set". After a save (a WiFi network being set) the portal closes and the
caller restarts the board, which then joins the network.

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
_SSID_MAX_BYTES = const(32)  # IEEE 802.11's limit
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


# -- the form's fields --------------------------------------------------------------------


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


def save(form):
    """Check and store the fields of ``form`` (a dict-like: ``get(name)``); returns
    ``(stored, errors)``: the names stored, and {field: message} for those refused
    (nothing of a refused field is stored; the others are). Empty fields keep what is
    stored. Field names: ssid, ssid_other (typed instead of picked), wifi_pass,
    tg_token, provider, base_url, api_key, tz.
    """
    from mimi import cli, commands, llm

    def field(name):
        v = form.get(name)
        return (v or "").strip() if name not in ("wifi_pass", "api_key") else (v or "")

    stored = []
    errors = {}
    ssid = field("ssid_other") or field("ssid")
    pw = field("wifi_pass")
    if ssid or pw:
        if not ssid:
            ssid = config.get("wifi_ssid")
        if not ssid:
            errors["ssid"] = "pick or type a network"
        elif not commands.plain(ssid) or len(ssid.encode()) > _SSID_MAX_BYTES:
            errors["ssid"] = "a network name is at most 32 bytes, one line"
        elif not commands.plain(pw):
            errors["wifi_pass"] = commands.text("ctrl", "wifi_pass")
        elif pw or ssid != config.get("wifi_ssid"):  # a new network's password may be empty (open)
            config.set("wifi_ssid", ssid)
            config.set("wifi_pass", pw)
            stored += ["wifi_ssid", "wifi_pass"]
    tok = field("tg_token")
    if tok:
        if cli.token_ok(tok) and commands.plain(tok):
            config.set("tg_token", tok)
            stored.append("tg_token")
        else:
            errors["tg_token"] = commands.text("bad_token").strip()
    prov = field("provider").lower()
    url = field("base_url")
    if prov and (prov != config.get("provider") or url != config.get("base_url")):  # the page shows both
        try:
            if not commands.plain(url):
                raise ValueError(commands.text("ctrl", "base_url"))
            llm.switch(provider=prov, base_url=url)  # "": the preset's address
            stored.append("provider")
        except ValueError as e:
            errors["provider"] = str(e)
    key = field("api_key").strip()
    if key and "provider" not in errors:
        if commands.plain(key):
            llm.set_key(key)
            stored.append("key_" + config.get("provider"))
        else:
            errors["api_key"] = commands.text("ctrl", "api_key")
    tz = field("tz")
    if tz and tz != config.get("tz"):
        from mimi import clock

        try:
            clock.set_tz(tz)
            stored.append("tz")
        except ValueError as e:
            errors["tz"] = str(e)
    return stored, errors


# -- the page -----------------------------------------------------------------------------


def esc(s):
    """``s`` safe inside HTML text and quoted attributes (network names come from
    anyone's access point)."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;").replace("'", "&#39;")


_CSS = ("body{font:16px system-ui,sans-serif;max-width:32em;margin:1em auto;padding:0 .8em;color:#222}"
        "fieldset{border:1px solid #bbb;border-radius:6px;margin:0 0 1em}label{display:block;margin:.5em 0 .2em}"
        "input,select{width:100%;box-sizing:border-box;padding:.4em;font:inherit}"
        "button{padding:.6em 1.2em;font:inherit}.s,.h{color:#555;font-size:.85em}.e{color:#b00}"
        ".ok{background:#e6f4e6;padding:.5em}")


def _status(name):
    return "set" if config.get(name) else "not set"


def page(notice="", errors=None, typed=None):
    """The form as HTML (str). ``notice``: a line at the top; ``errors``: {field: message};
    ``typed``: the non-secret values the owner typed (kept after a refusal). Secrets are
    never written into the page: their fields are empty, with "set" or "not set"."""
    from mimi import llm

    errors = errors or {}
    typed = typed or {}
    nets = state["scan"] or []
    cur = config.get("wifi_ssid")
    prov = typed.get("provider") or config.get("provider")

    def err(f):
        return '<div class="e">%s</div>' % esc(errors[f]) if f in errors else ""

    opts = []
    for n, rssi in nets:
        opts.append('<option value="%s"%s>%s (%d dBm)</option>' % (
            esc(n), " selected" if n == cur else "", esc(n), rssi))
    if cur and cur not in [n for n, _ in nets]:
        opts.insert(0, '<option value="%s" selected>%s (stored)</option>' % (esc(cur), esc(cur)))
    provs = []
    for p in llm.PRESETS:
        provs.append('<option%s>%s</option>' % (" selected" if p == prov else "", p))
    return "".join((
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        "<title>mimi setup</title><style>", _CSS, "</style></head><body><h1>mimi setup</h1>",
        '<p class="ok">%s</p>' % esc(notice) if notice else "",
        '<form method="post" action="/save"><input type="hidden" name="csrf" value="', state["token"], '">',
        "<fieldset><legend>WiFi</legend>",
        '<label for="ssid">Network</label><select id="ssid" name="ssid"><option value="">(choose)</option>',
        "".join(opts), "</select>",
        '<label for="ssid_other">or another name</label><input id="ssid_other" name="ssid_other" maxlength="32">',
        err("ssid"),
        '<label for="wifi_pass">Password <span class="s">(%s)</span></label>' % _status("wifi_pass"),
        '<input id="wifi_pass" name="wifi_pass" type="password" autocomplete="off">', err("wifi_pass"),
        '</fieldset><p class="s"><a href="/scan">Scan again</a></p>',
        "<fieldset><legend>Telegram</legend>",
        '<label for="tg_token">Bot token <span class="s">(%s)</span></label>' % _status("tg_token"),
        '<input id="tg_token" name="tg_token" type="password" autocomplete="off" placeholder="123456789:AAH...">',
        err("tg_token"), "</fieldset>",
        "<fieldset><legend>Model</legend>",
        '<label for="provider">Provider</label><select id="provider" name="provider">', "".join(provs), "</select>",
        err("provider"),
        '<label for="base_url">Server address <span class="s">(custom and local servers; empty: the preset\'s)</span>'
        '</label><input id="base_url" name="base_url" value="%s">' % esc(typed.get("base_url") or config.get("base_url")),
        '<label for="api_key">API key <span class="s">(%s)</span></label><div class="h">%s\'s key; one typed here '
        "goes to the provider chosen above</div>" % (_status("key_" + config.get("provider")), esc(config.get("provider"))),
        '<input id="api_key" name="api_key" type="password" autocomplete="off">', err("api_key"),
        "</fieldset><fieldset><legend>Time zone</legend>",
        '<label for="tz">UTC offset</label><input id="tz" name="tz" value="%s">' % esc(
            typed.get("tz") or config.get("tz")), err("tz"),
        '</fieldset><p class="s">Empty fields keep what is stored.</p><button type="submit">Save</button>'
        "</form></body></html>"))


# -- the web app --------------------------------------------------------------------------

# Paths the OS connectivity checks ask for: any answer but the expected one makes the
# phone or PC open its sign-in page; a redirect to the portal is what they expect there.
CHECK_PATHS = ("/generate_204", "/gen_204", "/hotspot-detect.html", "/library/test/success.html",
               "/connecttest.txt", "/ncsi.txt", "/redirect", "/canonical.html", "/success.txt")

_HEADERS = {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
            "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                       "frame-ancestors 'none'"}


def _html(body, status=200):
    from microdot import Response

    return Response(body, status, dict(_HEADERS))


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

    app = Microdot()

    @app.before_request
    def captive(req):
        state["last_ms"] = seam.ticks_ms()
        h = req.headers.get("Host") or ""
        if h != state["address"] and h != state["address"] + ":80":
            return _home()  # another site's name (the DNS says every name is the board)

    @app.route("/")
    def index(req):
        return _html(page())

    @app.route("/scan")
    def rescan(req):
        scan()
        return _home()

    @app.route("/save", methods=["POST"])
    def save_form(req):
        form = req.form or {}
        if not same_origin(req.headers) or form.get("csrf") != state["token"]:
            return _html("<p>This form is out of date: <a href='/'>open it again</a>.</p>", 403)
        stored, errors = save(form)
        log.info(_TAG, "stored: %s%s", ", ".join(stored) or "nothing",
                 "; refused: " + ", ".join(errors) if errors else "")
        if errors:
            typed = {"provider": form.get("provider"), "base_url": form.get("base_url"), "tz": form.get("tz")}
            return _html(page("Not saved: see the fields in red%s." % (
                "; saved: " + ", ".join(stored) if stored else ""), errors, typed), 400)
        if stored and config.get("wifi_ssid"):  # the portal closes; the board restarts and joins
            state["saved"] = seam.ticks_ms()
            note = "Saved: %s. The board now restarts and joins %s; this network closes." % (
                ", ".join(stored), config.get("wifi_ssid"))
        else:
            note = "Saved: %s." % (", ".join(stored) or "nothing changed")
        return _html(page(note))

    @app.route("/<path:path>", methods=["GET", "POST"])
    def anything(req, path):
        return _home()  # the connectivity checks (CHECK_PATHS) and every other path

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

    while True:
        await asyncio.sleep(_PORTAL_WATCH_MS / 1000)
        now = seam.ticks_ms()
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
        seam.wait_ms(200)
        seam.reset()
    return why


def stop():
    """Ask a running portal to close (within ``_PORTAL_WATCH_MS``)."""
    state["stop"][0] = True
