"""The setup portal in a real browser: Debian's headless Chromium driven by Playwright
fills the form and submits it; NVS gets the values and the page says "set", never a
secret. The portal runs under CPython (tests/web/portal_fixtures.py).

``MIMI_SHOTS_DIR=docs/web`` also saves the screenshots docs/web/portal.png (the form) and
portal-saved.png (the answer to a save) there."""
import os
import shutil

import pytest

from portal_fixtures import Portal

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "123456789:AAH-FAKE-token-browser-test-Vb2"
KEY = "sk-ant-FAKE-key-browser-test-Np4"
WIFI_PASS = "fake-wifi-pass-Ht6"


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is missing: apt-get install chromium (.ci/run does)")
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def portal():
    p = Portal("cpython")
    yield p
    p.stop()


def _shot(page, name, tmp_path):
    path = str(tmp_path / name)
    page.screenshot(path=path, full_page=True)
    assert os.path.getsize(path) > 1000
    d = os.environ.get("MIMI_SHOTS_DIR")
    if d:
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(path, os.path.join(d, name))


def test_fill_the_form_in_chromium(browser, portal, tmp_path):
    page = browser.new_page(viewport={"width": 480, "height": 900})
    resp = page.goto(portal.url + "/")
    assert resp.status == 200
    assert page.title() == "mimi setup"
    assert page.locator("label[for=wifi_pass]").inner_text() == "Password (not set)"
    _shot(page, "portal.png", tmp_path)
    page.select_option("#ssid", "mimi-sim-wifi")
    page.fill("#wifi_pass", WIFI_PASS)
    page.fill("#tg_token", TOKEN)
    page.select_option("#provider", "anthropic")
    page.fill("#api_key", KEY)
    page.fill("#tz", "+01:00")
    with page.expect_navigation():
        page.click("button[type=submit]")
    html = page.content()
    assert "restarts and joins mimi-sim-wifi" in html
    for sel in ("wifi_pass", "tg_token", "api_key"):
        assert page.locator("label[for=%s] .s" % sel).inner_text() == "(set)"
        assert page.input_value("#" + sel) == ""  # never filled back
    for secret in (TOKEN, KEY, WIFI_PASS):
        assert secret not in html
    _shot(page, "portal-saved.png", tmp_path)
    assert portal.wait() == 0  # the portal closed for the board to join
    assert portal.stored("wifi_ssid") == "mimi-sim-wifi" and portal.stored("wifi_pass") == WIFI_PASS
    assert portal.stored("tg_token") == TOKEN and portal.stored("key_anthropic") == KEY
    assert portal.stored("tz") == "+01:00"


def test_a_refused_field_is_shown_in_red(browser, portal):
    page = browser.new_page()
    page.goto(portal.url + "/")
    page.fill("#tg_token", "not-a-token")
    page.fill("#tz", "+99:00")
    with page.expect_navigation():
        page.click("button[type=submit]")
    errors = page.locator(".e").all_inner_texts()
    assert len(errors) == 2 and any("bot token" in e for e in errors)
    assert page.input_value("#tz") == "+99:00"  # what was typed stays, a secret does not
    assert page.input_value("#tg_token") == ""
    assert portal.stored("tg_token") is None
