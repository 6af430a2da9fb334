"""The setup portal's form (mimi.web.portal): its fields checked and stored, and the page.

Each field is checked as the serial console checks it (``cli.token_ok``, ``commands.plain``,
``llm.switch``, ``llm.set_key``, ``clock.set_tz``, ``mimi.web.auth.set_password``) and stored in NVS through ``config``.
The page is plain HTML and CSS, no JavaScript; it never carries a secret, not even masked:
a secret field says "set" or "not set".
"""
from micropython import const

from mimi import config

_SSID_MAX_BYTES = const(32)  # IEEE 802.11's limit
_WIFI_PASS_MAX = const(64)  # WPA2: a passphrase of 8-63 characters, or 64 hex digits


def save(form):
    """Check and store the fields of ``form`` (a dict-like: ``get(name)``); returns
    ``(stored, errors)``: the names stored, and {field: message} for those refused
    (nothing of a refused field is stored; the others are). Empty fields keep what is
    stored. Field names: ssid, ssid_other (typed instead of picked), wifi_pass,
    tg_token, provider, base_url, api_key, tz, web_password (the LAN web app's login).
    """
    from mimi import cli, commands, llm

    def field(name):
        v = form.get(name)
        return (v or "").strip() if name not in ("wifi_pass", "api_key", "web_password") else (v or "")

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
        elif len(pw) > _WIFI_PASS_MAX:
            errors["wifi_pass"] = "a WiFi password is at most 63 characters (or 64 hex digits)"
        elif pw or ssid != config.get("wifi_ssid"):  # a new network's password may be empty (open)
            config.set("wifi_ssid", ssid)
            config.set("wifi_pass", pw)
            stored += ["wifi_ssid", "wifi_pass"]
    tok = field("tg_token")
    if tok:
        try:
            if not (cli.token_ok(tok) and commands.plain(tok)):
                raise ValueError(commands.text("bad_token").strip())
            config.set("tg_token", tok)  # ValueError past the store's 512 bytes
            stored.append("tg_token")
        except ValueError as e:
            errors["tg_token"] = str(e)
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
        try:
            if not commands.plain(key):
                raise ValueError(commands.text("ctrl", "api_key"))
            llm.set_key(key)  # ValueError past the store's 512 bytes
            stored.append("key_" + config.get("provider"))
        except ValueError as e:
            errors["api_key"] = str(e)
    tz = field("tz")
    if tz and tz != config.get("tz"):
        from mimi import clock

        try:
            clock.set_tz(tz)
            stored.append("tz")
        except ValueError as e:
            errors["tz"] = str(e)
    web_pw = field("web_password")
    if web_pw:
        from mimi.web import auth

        try:
            auth.set_password(web_pw)  # as set_web_password at the console: 8+ characters, no spaces
            stored.append("web_password")
        except ValueError as e:
            errors["web_password"] = str(e)
    return stored, errors


def esc(s):
    """``s`` safe inside HTML text and quoted attributes (network names come from
    anyone's access point)."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;").replace("'", "&#39;")


_CSS = ("body{font:16px system-ui,sans-serif;max-width:32em;margin:1em auto;padding:0 .8em;color:#222}"
        "fieldset{border:1px solid #bbb;border-radius:6px;margin:0 0 1em}label{display:block;margin:.5em 0 .2em}"
        "input,select{width:100%;box-sizing:border-box;padding:.4em;font:inherit}"
        "button{padding:.6em 1.2em;font:inherit}.s,.h{color:#555;font-size:.85em}.e{color:#b00}"
        ".ok{background:#e6f4e6;padding:.5em}.bad{background:#fbe9e9;padding:.5em}")


def _status(name):
    return "set" if config.get(name) else "not set"


def page(nets, token, notice="", errors=None, typed=None):
    """The form as HTML (str). ``nets``: [(ssid, rssi dBm)] to list; ``token``: the form's
    per-boot token (its hidden field); ``notice``: a line at the top; ``errors``: {field:
    message}; ``typed``: the non-secret values the owner typed (kept after a refusal).
    Secrets are never written into the page: their fields are empty, with "set" or "not
    set"."""
    from mimi import llm

    errors = errors or {}
    typed = typed or {}
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
        '<p class="%s">%s</p>' % ("bad" if errors else "ok", esc(notice)) if notice else "",
        '<form method="post" action="/save"><input type="hidden" name="csrf" value="', token, '">',
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
        "</fieldset><fieldset><legend>Web app</legend>",
        '<label for="web_password">Password for http://mimi.local <span class="s">(%s)</span></label>'
        '<div class="h">at least 8 characters; the web app and the chat gateway on your network</div>'
        % _status("web_password"),
        '<input id="web_password" name="web_password" type="password" autocomplete="new-password">',
        err("web_password"),
        '</fieldset><p class="s">Empty fields keep what is stored.</p><button type="submit">Save</button>'
        "</form></body></html>"))
