"""The update page (``GET /update``) in a real browser: headless Chromium (Debian's
package) driven by Playwright picks an image file, the page computes its SHA-256 in
JavaScript, sends it to ``POST /api/update`` on a real microdot server (127.0.0.1),
and shows the version the board comes back with; a wrong password is refused.

The board's side: the image is written and checked as on a board without ROMFS (the
test's flash folder); the switch and reset are stood in for by making the running
version the applied one (the reset itself: tests/host_sim/test_ota_vboard.py).
"""
import os

import pytest
import romfs_maker
import support
from ota_http import PASSWORD, UpdateServer

import mimi_slot
from mimi import ota, seam

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is not installed: apt-get install chromium (.ci/run does)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _session_or_bearer(r):
    # As the web app's check may be: its password as a Bearer token, or its session
    # cookie with the CSRF token double-submitted (cookie "csrf" = header X-CSRF-Token).
    if r.headers.get("Authorization") == "Bearer " + PASSWORD:
        return True
    return (r.cookies.get("session") == "made-up-session" and r.cookies.get("csrf") == "made-up-csrf"
            and r.headers.get("X-CSRF-Token") == "made-up-csrf")


@pytest.fixture
def board(monkeypatch):
    """The update routes with a board that 'restarts' into what it was sent."""
    support.fresh_flash()
    mimi_slot.save(None)
    before = ota.running_version()
    applied = []

    def apply(version):
        ota.apply(version, reset=False)
        applied.append(version)

    monkeypatch.setattr(ota, "running_version", lambda: applied[-1] if applied else before)
    s = UpdateServer(apply=apply, authorized=_session_or_bearer)
    s.before = before
    yield s
    s.stop()


def test_an_image_picked_in_the_page_is_sent_checked_and_its_version_shown(browser, board, tmp_path):
    img = tmp_path / "mimi.romfs"
    img.write_bytes(romfs_maker.mimi_image("v-browser-1", pad=70000))  # several SHA-256 blocks, streamed
    page = browser.new_page()
    page.goto(board.url + "/update")
    page.fill("#password", PASSWORD)
    page.set_input_files("#image", str(img))
    page.click("#send")
    page.wait_for_function("document.getElementById('log').textContent.startsWith('Running')", timeout=30000)
    log = page.text_content("#log")
    assert log.startswith("Running v-browser-1 (before: %s)" % board.before), log
    assert page.text_content("#running") == "v-browser-1"
    with open(seam.real_path("/ota1/mimi/build.txt")) as f:
        assert f.read() == "v-browser-1\n"
    st = mimi_slot.load()
    assert st["slot"] == 1 and st["trial"] and st["running"] == "v-browser-1"


def test_a_wrong_password_is_refused_in_the_page(browser, board, tmp_path):
    img = tmp_path / "mimi.romfs"
    img.write_bytes(romfs_maker.mimi_image("v-browser-2"))
    page = browser.new_page()
    page.goto(board.url + "/update")
    page.fill("#password", "not-the-password")
    page.set_input_files("#image", str(img))
    page.click("#send")
    page.wait_for_function("document.getElementById('log').textContent.startsWith('Refused')", timeout=30000)
    assert page.text_content("#log") == "Refused (401): not authorized"
    assert mimi_slot.load() == {} and board.applied == []


def test_signed_in_the_page_sends_the_session_and_its_csrf_token(browser, board, tmp_path):
    img = tmp_path / "mimi.romfs"
    img.write_bytes(romfs_maker.mimi_image("v-browser-3"))
    context = browser.new_context()
    context.add_cookies([{"name": "session", "value": "made-up-session", "url": board.url},
                         {"name": "csrf", "value": "made-up-csrf", "url": board.url}])
    page = context.new_page()
    page.goto(board.url + "/update")
    page.wait_for_function("document.getElementById('running').textContent !== '?'", timeout=10000)
    page.set_input_files("#image", str(img))
    page.click("#send")
    page.wait_for_function("document.getElementById('log').textContent.startsWith('Running')", timeout=30000)
    assert page.text_content("#log").startswith("Running v-browser-3 (before: %s)" % board.before)
    context.clear_cookies()
    context.add_cookies([{"name": "session", "value": "made-up-session", "url": board.url}])  # no CSRF token
    page.goto(board.url + "/update")
    page.set_input_files("#image", str(img))
    page.click("#send")
    page.wait_for_function("document.getElementById('log').textContent.startsWith('Refused')", timeout=30000)
    assert page.text_content("#log") == "Refused (401): not authorized"
    context.close()
