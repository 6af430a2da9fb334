"""The web app in a real browser: headless Chromium (Debian's) driven by Playwright, against
the simulator on both runtimes (issue 16, item 7). A failed and a good login, a chat round
trip through the fake LLM with a tool call, editing MEMORY.md, the pages; CSRF and the
cookie's flags as the browser sees them. Screenshots of the pages go to docs/web/ when
``MIMI_SCREENSHOTS=1`` (the CPython board; they are committed, not made by every run).
"""
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest

from host_sim.fakes.llm import Reply

from webboard import PASSWORD

SHOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "web")


def _shot(page, board, name):
    if os.environ.get("MIMI_SCREENSHOTS") == "1" and board.runtime == "cpython":
        os.makedirs(SHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SHOTS, name + ".png"), full_page=True)


def _login(page, board):
    page.goto(board.web_url + "/login")
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Log in')")
    page.wait_for_url(board.web_url + "/")


def test_a_wrong_password_is_refused_then_the_right_one_lets_in(page, web_board):
    page.goto(web_board.web_url + "/status")
    assert page.url == web_board.web_url + "/login"  # every page wants the session
    _shot(page, web_board, "login")
    page.fill("input[name=password]", "not-the-password")
    page.click("button:has-text('Log in')")
    assert "Wrong password." in page.inner_text("main")
    assert not page.context.cookies()
    _login(page, web_board)
    c = [c for c in page.context.cookies() if c["name"] == "mimi_session"][0]
    assert c["httpOnly"] and c["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # out of the page script's reach
    page.goto(web_board.web_url + "/status")
    assert "Last warnings and errors" in page.inner_text("main")
    assert "Web: port %d" % web_board.web_port in page.inner_text("pre")
    _shot(page, web_board, "status")


def test_a_chat_round_trip_with_a_tool_call(page, web_board):
    web_board.llm.script(Reply.tools([("get_current_time", {})]), Reply.text("It is **noon** on the board."))
    _login(page, web_board)
    page.wait_for_selector("#state:has-text('connected')")
    page.fill("#text", "what time is it?")
    page.press("#text", "Enter")
    page.wait_for_selector(".m.assistant:has-text('on the board')")
    assert page.locator(".m.user").last.inner_text() == "what time is it?"
    reqs = web_board.llm_requests()
    assert len(reqs) == 2 and "get_current_time" in json.dumps(reqs[1]["json"]["messages"])
    # the history is the web chat's own, and the page shows it again after a reload
    page.reload()
    page.wait_for_selector(".m.assistant:has-text('on the board')")
    assert os.path.exists(os.path.join(web_board.flash, "data", "sessions", "ws_web.jsonl"))
    _shot(page, web_board, "chat")


def test_editing_memory_md_saves_it_through_the_checked_layer(page, web_board):
    _login(page, web_board)
    page.click("nav a:has-text('Files')")
    _shot(page, web_board, "files")
    page.click("a:has-text('MEMORY.md')")
    text = "# Memory\n\n- The owner's cat is called Miso.\n- Edited in the browser.\n"
    page.fill("textarea[name=content]", text)
    page.click("button:has-text('Save')")
    assert "Saved: wrote" in page.inner_text("main")
    with open(os.path.join(web_board.flash, "data", "memory", "MEMORY.md")) as f:
        assert f.read() == text
    page.reload()
    assert page.input_value("textarea[name=content]") == text
    _shot(page, web_board, "edit")
    # a path outside the editable files is refused, never opened
    page.goto(web_board.web_url + "/edit?path=/data/sessions/ws_web.jsonl")
    assert "Not a file this page edits." in page.inner_text("main")


def test_settings_keep_secrets_write_only(page, web_board):
    _login(page, web_board)
    page.click("nav a:has-text('Settings')")
    html = page.content()
    assert PASSWORD not in html and "sk-FAKE-sim-key" not in html and "FAKE-sim-token" not in html
    row = page.locator("tr", has=page.locator("td", has_text="tz"))
    row.locator("input[name=value]").fill("+02:00")
    row.locator("button").click()
    assert "tz set to +02:00" in page.inner_text("main")
    _shot(page, web_board, "settings")
    page.click("nav a:has-text('Log')")
    assert "[web]" in page.inner_text("pre")
    page.click("nav a:has-text('Reminders')")
    assert "No reminders" in page.inner_text("main")


def test_a_post_without_the_csrf_token_is_refused(page, web_board):
    _login(page, web_board)
    cookie = [c for c in page.context.cookies() if c["name"] == "mimi_session"][0]["value"]
    body = urllib.parse.urlencode({"path": "/data/memory/MEMORY.md", "content": "overwritten"}).encode()
    req = urllib.request.Request(web_board.web_url + "/edit", body, {"Cookie": "mimi_session=" + cookie})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 403
    with open(os.path.join(web_board.flash, "data", "memory", "MEMORY.md")) as f:
        assert "overwritten" not in f.read()


def test_logging_out_ends_the_session(page, web_board):
    _login(page, web_board)
    page.click("button:has-text('Log out')")
    page.wait_for_url(web_board.web_url + "/login")
    page.goto(web_board.web_url + "/")
    assert page.url == web_board.web_url + "/login"


def test_the_settings_page_leads_to_the_update_page_whose_upload_passes_the_login(page, web_board):
    # The update page (mimi.web.update_route) on the board's own web app: reached from
    # Settings; signed in, its script sends the session's CSRF token, so a bad image is
    # refused for what it is (400, a wrong SHA-256), not as a stranger's upload (401).
    _login(page, web_board)
    page.click("nav a:has-text('Settings')")
    page.click("a:has-text('Update the software')")
    page.wait_for_url(web_board.web_url + "/update")
    token = [c for c in page.context.cookies() if c["name"] == "csrf"][0]
    assert token["sameSite"] == "Strict" and not token["httpOnly"]
    status = page.evaluate("""async () => {
        const r = await fetch('/api/update', {method: 'POST', body: new Uint8Array(64),
            headers: Object.assign({'X-Update-SHA256': '0'.repeat(64)}, headers())});
        return r.status; }""")
    assert status == 400
    anon = urllib.request.Request(web_board.web_url + "/api/update", b"x" * 64,
                                  {"X-Update-SHA256": "0" * 64, "Content-Type": "application/octet-stream"})
    with pytest.raises(urllib.error.HTTPError) as e:  # no session, no token: refused before reading
        urllib.request.urlopen(anon, timeout=10)
    assert e.value.code == 401
