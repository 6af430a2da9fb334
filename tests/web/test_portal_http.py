"""The setup portal over HTTP and DNS, served by the firmware under CPython and under the
micropython command (tests/web/portal_fixtures.py): the captive redirects the OS checks
get, the guarded POST, the save, and that no response ever carries a secret."""
import http.client
import re
import urllib.parse

import dns.message
import dns.query
import pytest

from portal_fixtures import Portal

TOKEN = "123456789:AAH-FAKE-token-http-test-Kq7"
KEY = "sk-FAKE-openai-key-http-test-Zr8"
WIFI_PASS = "fake-wifi-pass-Wm3"
OLD_KEY = "sk-ant-FAKE-stored-before-Jx5"


@pytest.fixture(params=["cpython", "micropython"])
def portal(request):
    p = Portal(request.param, settings={"key_anthropic": OLD_KEY})
    yield p
    out = p.stop()
    for secret in (TOKEN, KEY, WIFI_PASS, OLD_KEY):  # nor on the console
        assert secret not in out


def call(p, method, path, host=None, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10)
    h = {"Host": host or "127.0.0.1:%d" % p.port}
    h.update(headers or {})
    if body is not None:
        body = urllib.parse.urlencode(body)
        h["Content-Type"] = "application/x-www-form-urlencoded"
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


CHECKS = (("connectivitycheck.gstatic.com", "/generate_204"), ("captive.apple.com", "/hotspot-detect.html"),
          ("www.msftconnecttest.com", "/connecttest.txt"), ("www.msftncsi.com", "/ncsi.txt"),
          ("detectportal.firefox.com", "/canonical.html"), ("detectportal.firefox.com", "/success.txt"),
          ("example.com", "/"), ("example.com", "/any/thing?x=1"))


def test_connectivity_checks_and_other_hosts_are_sent_to_the_portal(portal):
    home = portal.url + "/"
    for host, path in CHECKS:
        status, h, _ = call(portal, "GET", path, host=host)
        assert status == 302 and h["location"] == home, (host, path, status)
    status, h, _ = call(portal, "GET", "/generate_204")  # the portal's own name, a check's path
    assert status == 302 and h["location"] == home
    q = dns.message.make_query("connectivitycheck.gstatic.com", "A")
    ans = dns.query.udp(q, "127.0.0.1", port=portal.dns_port, timeout=5)
    assert [a.address for a in ans.answer[0]] == ["127.0.0.1"]  # the simulator's portal address


def test_the_form_and_its_headers(portal):
    status, h, body = call(portal, "GET", "/")
    assert status == 200 and h["content-type"].startswith("text/html")
    assert h["cache-control"] == "no-store" and "frame-ancestors 'none'" in h["content-security-policy"]
    assert "mimi-sim-wifi" in body  # the scan list
    assert re.search(r'name="csrf" value="[0-9a-f]{32}"', body)
    assert 'API key <span class="s">(set)</span></label><div class="h">anthropic' in body and OLD_KEY not in body
    # a secret is stored: the access point is WPA2, its password on the console
    assert re.search(r"WiFi mimi-[0-9A-F]{4} \(WPA2\) password: [a-z2-9]{12};", portal.output())


def _token(p):
    return re.search(r'name="csrf" value="([0-9a-f]+)"', call(p, "GET", "/")[2]).group(1)


def test_a_post_without_the_token_or_from_another_site_is_refused(portal):
    form = {"tg_token": TOKEN, "tz": "+02:00"}
    status, _, body = call(portal, "POST", "/save", body=form)
    assert status == 403
    form["csrf"] = "0" * 32
    assert call(portal, "POST", "/save", body=form)[0] == 403
    form["csrf"] = _token(portal)
    status, _, _ = call(portal, "POST", "/save", body=form, headers={"Origin": "http://evil.example"})
    assert status == 403
    status, h, _ = call(portal, "POST", "/save", body=form, host="evil.example")  # DNS rebinding
    assert status == 302
    assert portal.stored("tg_token") is None and portal.stored("tz") is None


def test_bad_fields_are_refused_and_nothing_secret_comes_back(portal):
    form = {"csrf": _token(portal), "tg_token": "nope", "api_key": KEY, "provider": "custom", "tz": "+99"}
    status, _, body = call(portal, "POST", "/save", body=form, headers={"Origin": portal.url})
    assert status == 400
    assert "bot token" in body and "base URL" in body and "+99" in body
    assert KEY not in body and "nope" not in body  # typed secrets are not written back
    assert portal.stored("tg_token") is None and portal.stored("key_custom") is None
    huge = {"csrf": _token(portal), "tg_token": "123:" + "a" * 20000}  # over microdot's 16 KB
    try:
        status = call(portal, "POST", "/save", body=huge)[0]
    except (ConnectionResetError, BrokenPipeError):  # refused and closed before all of it was sent
        status = "reset"
    assert status in (413, "reset")
    assert call(portal, "GET", "/")[0] == 200 and portal.stored("tg_token") is None  # and it serves on


def test_save_then_the_portal_closes_for_the_board_to_join(portal):
    form = {"csrf": _token(portal), "ssid": "mimi-sim-wifi", "wifi_pass": WIFI_PASS, "tg_token": TOKEN,
            "provider": "openai", "api_key": KEY, "tz": "+05:30", "web_password": "made-up-web-pass-7"}
    status, _, body = call(portal, "POST", "/save", body=form, headers={"Origin": portal.url,
                                                                        "Referer": portal.url + "/"})
    assert status == 200 and "restarts and joins mimi-sim-wifi" in body
    for secret in (TOKEN, KEY, WIFI_PASS, OLD_KEY, "made-up-web-pass-7"):
        assert secret not in body
    assert "not set" not in body and body.count("(set)") == 4
    assert portal.wait() == 0  # the portal closed by itself
    assert "a board would restart now and join mimi-sim-wifi" in portal.output()
    assert portal.stored("wifi_ssid") == "mimi-sim-wifi" and portal.stored("wifi_pass") == WIFI_PASS
    assert portal.stored("tg_token") == TOKEN and portal.stored("provider") == "openai"
    assert portal.stored("key_openai") == KEY and portal.stored("key_anthropic") == OLD_KEY
    assert portal.stored("tz") == "+05:30"
