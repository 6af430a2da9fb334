"""Shared fixtures of the web tests (issue 16): a simulated board with the web app on, on
both runtimes, and a headless Chromium driven by Playwright.

- ``web_board``: one ``host_sim.harness.Sim`` per runtime for the whole session (booting
  one takes seconds), with ``MIMI_WEB_PASSWORD=PASSWORD`` and free loopback ports in
  ``MIMI_WEB_PORT``/``MIMI_GATEWAY_PORT``; ``board.web_url`` and ``board.gateway_url``
  (``ws://``) say where. Tests share it: each uses its own chat ids.
- ``browser``: Debian's ``/usr/bin/chromium`` (never ``playwright install``: no downloads
  here), headless; ``page`` a fresh context and page per test (no cookies carried over).
  Skipped when Chromium or Playwright is missing (``.ci/run`` installs both).
Other branches' browser tests (the setup portal, updates) sit beside these and use the
same fixtures.
"""
import os
import socket
import time
import urllib.request

import pytest

pytest.importorskip("host_sim.fakes.llm")

from host_sim.harness import Sim  # noqa: E402

PASSWORD = "correct-horse-42"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
_boards = {}


def free_port():
    """A TCP port free on 127.0.0.1 now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url, timeout_s=30):
    """Wait until ``url`` answers at all (any HTTP status)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("%s did not answer in %d s" % (url, timeout_s))


def start_board(flash, runtime, password=PASSWORD, **kw):
    """A booted Sim with the web app on free ports (``password`` None: no web app)."""
    wp, gp = free_port(), free_port()
    env = {"MIMI_WEB_PORT": str(wp), "MIMI_GATEWAY_PORT": str(gp)}
    if password:
        env["MIMI_WEB_PASSWORD"] = password
    b = Sim(flash, runtime, env=env, **kw).start()
    b.web_port, b.gateway_port = wp, gp
    b.web_url = "http://127.0.0.1:%d" % wp
    b.gateway_url = "ws://127.0.0.1:%d/" % gp
    if password:
        try:
            wait_http(b.web_url + "/login")
        except RuntimeError:
            b.stop()
            raise
    return b


@pytest.fixture(params=["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def web_board(request, tmp_path_factory):
    rt = request.param
    if rt not in _boards or not _boards[rt].alive():
        _boards[rt] = start_board(str(tmp_path_factory.mktemp("web-" + rt)), rt)
    b = _boards[rt]
    b.llm.reset()
    yield b
    assert b.alive(), b.log()[-4000:]


@pytest.fixture(scope="session", autouse=True)
def _stop_web_boards():
    yield
    for b in list(_boards.values()):
        b.stop()
    _boards.clear()


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("no %s (apt-get install chromium)" % CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1000, "height": 720})
    p = ctx.new_page()
    p.set_default_timeout(30000)
    yield p
    ctx.close()
