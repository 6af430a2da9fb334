"""web_search's URL encoding (both runtimes)."""
from mimi.tools import web

RUNTIMES = ("cpython", "micropython")


def test_quote():
    assert web.quote("a b&c=d/é~") == "a%20b%26c%3Dd%2F%C3%A9~"
    assert web.quote("") == ""
    assert web.quote("Az09-._~") == "Az09-._~"
