"""The setup portal's logic (mimi.web.portal): when it opens, open or WPA2, the form's
checks, and that no secret is ever written into a page (both runtimes)."""
import machine
import network

from mimi import config, seam
from mimi.web import portal, setup_form
import support

RUNTIMES = ("cpython", "micropython")

TOKEN = "123456789:AAH-FAKE-token-for-tests-only-x1"
KEY = "sk-ant-FAKE-key-for-tests-QzWv"
WIFI_PASS = "fake-wifi-pass-42"
WEB_PASS = "made-up-web-pass-7"


def fresh():
    support.fresh_flash()
    machine.sim_reset()
    portal.state["scan"] = None
    portal.state["token"] = "t0k"


class Form:
    def __init__(self, **kw):
        self.d = kw

    def get(self, k):
        return self.d.get(k)


def test_open_while_no_secret_then_wpa2_with_a_kept_password():
    fresh()
    config.set("wifi_ssid", "home")  # a network name is no secret
    assert not portal.secrets_stored()
    assert portal.ap_password() is None
    assert seam.ap_start(portal.ap_name(), portal.ap_password()) == "192.168.4.1"
    assert network.AP["authmode"] == 0 and network.AP["essid"] == portal.ap_name()
    config.set("tg_token", TOKEN)
    assert portal.secrets_stored()
    pw = portal.ap_password()
    assert len(pw) == 12 and all(c in "abcdefghijkmnpqrstuvwxyz23456789" for c in pw)
    config._cache.clear()  # as after a reboot: the same password
    assert portal.ap_password() == pw
    seam.ap_start(portal.ap_name(), pw)
    assert network.AP["authmode"] == 3 and network.AP["password"] == pw
    seam.ap_stop()
    assert not network.AP["active"]


def test_every_secret_setting_counts_but_the_portal_password():
    for name in config.SETTINGS:
        if not config.is_secret(name):
            continue
        fresh()
        config.set(name, "fake-secret-value-1234")
        assert portal.secrets_stored(), name
    fresh()
    seam.store_set(config.PORTAL_PASS_KEY, "abcdefghijkm")
    assert not portal.secrets_stored() and portal.ap_password() is None


def test_ap_name_is_the_mac_tail():
    fresh()
    m = seam.mac()
    assert portal.ap_name() == "mimi-%02X%02X" % (m[4], m[5])
    assert len(portal.ap_name()) == 9


class Keeper:
    def __init__(self, down):
        self.down = down

    def down_ms(self, now):
        return self.down


def test_when_the_portal_opens():
    fresh()
    assert portal.wanted() == "no WiFi set"
    config.set("wifi_ssid", "home")
    assert portal.wanted() is None
    machine.sim_drive(config.PORTAL_BOOT_PIN, 0)  # BOOT held: the pin reads low
    assert portal.wanted() == "BOOT button held"
    machine.sim_drive(config.PORTAL_BOOT_PIN, 1)
    assert portal.wanted() is None
    assert portal.wanted(Keeper(config.PORTAL_WIFI_DOWN_MS - 1)) is None
    assert "WiFi down" in portal.wanted(Keeper(config.PORTAL_WIFI_DOWN_MS))


def test_save_stores_good_fields():
    fresh()
    stored, errors = setup_form.save(Form(ssid="home", wifi_pass=WIFI_PASS, tg_token=TOKEN, provider="openai",
                                      api_key=KEY, tz="+8", web_password=WEB_PASS))
    assert errors == {}
    assert config.get("web_password") == WEB_PASS and "web_password" in stored
    assert config.get("wifi_ssid") == "home" and config.get("wifi_pass") == WIFI_PASS
    assert config.get("tg_token") == TOKEN
    assert config.get("provider") == "openai" and config.get("key_openai") == KEY
    assert config.get("key_anthropic") == ""  # the key goes to the provider chosen, no other
    assert config.get("tz") == "+08:00"
    assert "key_openai" in stored and "tz" in stored
    config._cache.clear()  # in NVS, not only in RAM
    assert config.get("tg_token") == TOKEN


def test_empty_fields_keep_what_is_stored():
    fresh()
    setup_form.save(Form(ssid="home", wifi_pass=WIFI_PASS, tg_token=TOKEN, api_key=KEY))
    stored, errors = setup_form.save(Form(ssid="home", wifi_pass="", tg_token="", provider="anthropic", api_key="",
                                      tz=""))
    assert (stored, errors) == ([], {})
    assert config.get("wifi_pass") == WIFI_PASS and config.get("tg_token") == TOKEN
    assert config.get("key_anthropic") == KEY
    stored, _ = setup_form.save(Form(ssid_other="office", wifi_pass=""))  # another network may be open
    assert config.get("wifi_ssid") == "office" and config.get("wifi_pass") == ""


def test_bad_fields_are_refused_as_the_console_refuses_them():
    fresh()
    config.set("tz", "+01:00")
    stored, errors = setup_form.save(Form(ssid="home", wifi_pass="a\nb", tg_token="not a token", provider="nope",
                                      api_key=KEY, tz="+25:00"))
    assert set(errors) == {"wifi_pass", "tg_token", "provider", "tz"}
    assert stored == []
    assert "bot token" in errors["tg_token"] and "unknown provider" in errors["provider"]
    assert "+25:00" in errors["tz"]
    assert config.get("wifi_ssid") == "" and config.get("tg_token") == "" and config.get("tz") == "+01:00"
    assert config.get("key_anthropic") == ""  # a key for a refused provider is not stored
    _, errors = setup_form.save(Form(provider="custom"))
    assert "base URL" in errors["provider"] and config.get("provider") == "anthropic"
    stored, errors = setup_form.save(Form(web_password="short"))  # as set_web_password refuses it
    assert "8 characters" in errors["web_password"] and config.get("web_password") == "" and stored == []
    stored, errors = setup_form.save(Form(tg_token="123:" + "a" * 600, api_key="k" * 600, wifi_pass="p" * 65,
                                          ssid="home"))
    assert set(errors) == {"tg_token", "api_key", "wifi_pass"} and stored == []  # clear errors, no crash
    assert "512 bytes" in errors["tg_token"] and "63" in errors["wifi_pass"]
    _, errors = setup_form.save(Form(ssid_other="x" * 33))
    assert "ssid" in errors and config.get("wifi_ssid") == ""
    _, errors = setup_form.save(Form(provider="custom", base_url="ftp://x"))
    assert "provider" in errors and config.get("provider") == "anthropic"
    stored, errors = setup_form.save(Form(provider="custom", base_url="http://192.168.1.20:8000/v1"))
    assert errors == {} and config.get("base_url") == "http://192.168.1.20:8000/v1"
    # the form sent back as the page showed it changes nothing
    assert setup_form.save(Form(provider="custom", base_url="http://192.168.1.20:8000/v1", tz="+01:00")) == ([], {})
    stored, errors = setup_form.save(Form(provider="openai", base_url=""))  # the preset's address again
    assert errors == {} and config.get("base_url") == "" and config.get("provider") == "openai"


def test_the_page_says_set_and_never_holds_a_secret():
    fresh()
    nets = [("home", -40), ("<script>alert(1)</script>", -70)]
    empty = setup_form.page(nets, "t0k")
    assert empty.count("not set") == 4  # WiFi password, token, the provider's key, the web password
    setup_form.save(Form(ssid="home", wifi_pass=WIFI_PASS, tg_token=TOKEN, api_key=KEY,
                     provider="anthropic", tz="-05:30", web_password=WEB_PASS))
    html = setup_form.page(nets, "t0k", "Saved")
    assert "not set" not in html and html.count("(set)") == 4
    for secret in (WIFI_PASS, TOKEN, KEY, WEB_PASS, seam.store_get(config.PORTAL_PASS_KEY) or "x" * 40):
        assert secret not in html
        assert secret[-4:] not in html  # not even the masked tail
    assert "<script>alert" not in html and "&lt;script&gt;" in html  # a network's name is anyone's
    assert 'value="home" selected' in html and 'value="-05:30"' in html
    assert 'name="csrf" value="t0k"' in html
    assert len(html) < 6000


def test_same_origin():
    portal.state["address"] = "192.168.4.1"
    assert portal.same_origin({})
    assert portal.same_origin({"Origin": "http://192.168.4.1"})
    assert portal.same_origin({"Referer": "http://192.168.4.1/"})
    assert not portal.same_origin({"Origin": "http://evil.example"})
    assert not portal.same_origin({"Origin": "null"})
    assert not portal.same_origin({"Referer": "http://192.168.4.1.evil.example/"})


def test_boot_chooses_the_portal_on_a_board_without_wifi():
    from mimi import boot

    fresh()
    real = seam.wifi_needed
    seam.wifi_needed = lambda: True  # as on the board (the host needs no WiFi)
    try:
        boot.run("power")
        assert boot.state["portal"] == "no WiFi set"
        config.set("wifi_ssid", "home")
        boot.run("power")
        assert boot.state["portal"] is None
        machine.sim_drive(config.PORTAL_BOOT_PIN, 0)
        boot.run("power")
        assert boot.state["portal"] == "BOOT button held"
    finally:
        seam.wifi_needed = real
        machine.sim_reset()
        boot.state["portal"] = None
    fresh()
    boot.run("power")
    assert boot.state["portal"] is None  # the host: the app starts without WiFi


def test_the_keeper_counts_how_long_wifi_is_down():
    from mimi import boot

    fresh()
    k = boot.NetKeeper(1000)
    assert k.down_ms(61000) == 60000
    config.set("wifi_ssid", "home")
    k.tick(2000, False)  # the stand-in connects at once
    assert k.up and k.down_ms(500000) == 0
    k.up = False  # the link dropped at 2000
    assert k.down_ms(2000 + config.PORTAL_WIFI_DOWN_MS) == config.PORTAL_WIFI_DOWN_MS


class FakeApp:
    def __init__(self):
        self.shut = 0

    def shutdown(self):
        self.shut += 1


class UpKeeper:
    def tick(self, now, ntp=True):
        return True


def _watch_once(stay, saved=None):
    import asyncio

    portal.state.update({"stop": [False], "saved": saved, "result": None, "stay": stay,
                         "last_ms": seam.ticks_add(seam.ticks_ms(), -400000)})  # idle 400 s
    app = FakeApp()

    async def go():
        t = asyncio.create_task(portal._watch(app, UpKeeper()))
        await asyncio.sleep(0.6)
        portal.stop()  # ends it when nothing else did
        await asyncio.sleep(0.6)
        return t

    asyncio.run(go())
    return portal.state["result"], app.shut


def test_the_portal_closes_when_wifi_is_back_unless_the_owner_asked_for_it():
    fresh()
    assert _watch_once(False) == ("wifi", 1)
    assert _watch_once(True) == ("stopped", 1)  # BOOT held: it stays until a save or a stop
    assert _watch_once(True, seam.ticks_add(seam.ticks_ms(), -5000)) == ("saved", 1)


def test_after_a_save_the_board_resets_and_that_is_no_crash():
    from mimi import boot

    fresh()
    real = portal.run
    try:
        portal.run = lambda **kw: "wifi"
        assert portal.main() == "wifi"  # beside the app (no keeper): WiFi back, no reset
        assert not machine.RESET_REQUESTED
        portal.run = lambda **kw: "saved"
        boot.app_running(True)  # /main.py marks the portal mode as it does the app
        boot._store(2, True, False)  # two crashes counted before
        support.raises(SystemExit, portal.main)  # the stand-in's machine.reset()
        assert machine.RESET_REQUESTED
        assert boot._load()[:2] == (0, False)  # not running, no crash counted
    finally:
        portal.run = real
        machine.RESET_REQUESTED = False
