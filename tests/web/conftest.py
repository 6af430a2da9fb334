"""Shared fixtures of the web tests (issue 16): a simulated board with the web app on, on
both runtimes, and a headless Chromium driven by Playwright.

- ``web_board``: one ``host_sim.harness.Sim`` per runtime for the whole session (booting
  one takes seconds), with ``MIMI_WEB_PASSWORD=PASSWORD`` and free loopback ports in
  ``MIMI_WEB_PORT``/``MIMI_GATEWAY_PORT``; ``board.web_url`` and ``board.gateway_url``
  (``ws://``) say where. Tests share it: each uses its own chat ids.
- ``start_board``, ``PASSWORD``, ``free_port``: in ``webboard.py`` (``from webboard import``).
- ``browser``: Debian's ``/usr/bin/chromium`` (never ``playwright install``: no downloads
  here), headless; ``page`` a fresh context and page per test (no cookies carried over).
  Skipped when Chromium or Playwright is missing (``.ci/run`` installs both).
Other branches' browser tests (the setup portal, updates) sit beside these and use the
same fixtures.
"""
import os

import pytest

pytest.importorskip("host_sim.fakes.llm")

from webboard import start_board  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
_boards = {}


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
