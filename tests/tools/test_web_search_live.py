"""web_search against a fake Brave/Tavily service, under CPython and MicroPython."""
import os
import socket

import pytest

import mpcase
from host_sim.fakes.search import FakeSearch

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_web_live.py")


@pytest.fixture(scope="module")
def env():
    f = FakeSearch().start()
    f.results = [("MicroPython", "https://micropython.org/", "Python for microcontrollers " * 30),
                 ("ESP32-S3", "https://example.test/esp32s3", "Pins and more."),
                 ("Third \U0001F600", "https://example.test/3", "caf\u00e9 \U0001F34E")]  # sent as \\ud83d escapes
    f.answer = "MicroPython is Python for microcontrollers."
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    yield {"MIMI_T_SEARCH": f.url, "MIMI_T_DEAD": "http://127.0.0.1:%d" % dead}, f
    f.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    from mimi import config
    for k, v in env[0].items():
        monkeypatch.setenv(k, v)
    saved = (config.WEB_BRAVE_URL, config.WEB_TAVILY_URL)
    try:
        mpcase.run_cpython(CASES, name)
    finally:
        config.WEB_BRAVE_URL, config.WEB_TAVILY_URL = saved


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env[0])
    assert ok, out


def test_brave_query_is_percent_encoded_and_key_sent(env):
    ok, out = mpcase.run(CASES, "test_brave_results_as_text", env[0])
    assert ok, out
    fake = env[1]
    r = [r for r in fake.requests if r["path"] == "/res/v1/web/search"][-1]
    assert r["query"]["q"] == "ESP32-S3%20pinout%20%C3%BC%26x%3D1"
    assert r["query"]["count"] == "2"
    assert r["headers"]["x-subscription-token"] == "search-FAKE"
