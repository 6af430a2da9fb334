"""Client half of web_search's live test (``test_web_search_live.py`` runs it under
CPython and MicroPython against ``host_sim.fakes.search``; MIMI_T_SEARCH is its URL)."""
import os

from mimi import config
from mimi.tools import registry, web
import support


def _setup(provider, key="search-FAKE"):
    support.fresh_flash()
    registry.clear()
    web.register_all()
    base = os.getenv("MIMI_T_SEARCH")
    config.WEB_BRAVE_URL = base + "/res/v1/web/search"
    config.WEB_TAVILY_URL = base + "/search"
    config.set("search_provider", provider)
    if key:
        config.set("search_key", key)


def test_not_offered_without_a_key():
    _setup("brave", key=None)
    assert [t.name for t in registry.offered()] == []
    text, err = registry.execute("web_search", {"query": "x"}, {})
    assert err and "not available" in text


def test_brave_results_as_text():
    _setup("brave")
    assert [t.name for t in registry.offered()] == ["web_search"]
    text, err = registry.execute("web_search", {"query": "ESP32-S3 pinout ü&x=1", "count": 2}, {})
    assert not err, text
    assert text.startswith("1. MicroPython\n   https://micropython.org/\n")
    assert "2. ESP32-S3" in text and "3." not in text


def test_tavily_results_with_answer():
    _setup("tavily")
    text, err = registry.execute("web_search", {"query": "what is micropython"}, {})
    assert not err, text
    assert text.startswith("Answer: MicroPython is Python for microcontrollers.")
    # the fake escapes non-ASCII (\\ud83d\\ude00): one 4-byte character on both runtimes
    assert "3. Third \U0001F600\n   https://example.test/3\n   caf\u00e9 \U0001F34E" in text
    assert "\U0001F600".encode() in text.encode()


def test_errors_are_results_the_model_reads():
    _setup("brave", key="wrong")
    text, err = registry.execute("web_search", {"query": "x"}, {})
    assert err and "search key was rejected (401)" in text
    _setup("tavily")
    text, err = registry.execute("web_search", {"query": "RATELIMIT please"}, {})
    assert err and "rate limit" in text
    text, err = registry.execute("web_search", {"query": "NOTHING at all"}, {})
    assert not err and text == "No results for: NOTHING at all"
    config.WEB_TAVILY_URL = os.getenv("MIMI_T_DEAD") + "/search"
    text, err = registry.execute("web_search", {"query": "x"}, {})
    assert err and "could not reach" in text
