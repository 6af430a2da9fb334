"""Drive a ``host_sim.fakes.llm`` fake over its control API from either runtime.

Firmware-side case modules cannot hold the fake object (it lives in the pytest process),
so they script it and read what it received over HTTP, with mimi's own client.
"""
import json

from mimi.net import http


def reset(url):
    http.request("POST", url + "/_fake/reset", None, b"")


def script(url, *replies):
    """Queue replies: dicts in ``Reply.to_dict()`` form (see ``reply``)."""
    r = http.request("POST", url + "/_fake/script", {"content-type": "application/json"}, json.dumps(list(replies)))
    assert r.status == 200, r.status


def requests(url):
    """What the fake received, oldest first: dicts with method, path, headers, json."""
    r = http.request("GET", url + "/_fake/requests", buf=bytearray(262144))
    assert r.status == 200 and not r.truncated
    return r.json()


def reply(kind="text", **kw):
    """A reply spec: ``reply("text", text="hi", stop="end")``, ``reply("tools", calls=[[name,
    input]])``, ``reply("error", status=429, retry_after_ms=50)``, ``reply("malformed")``;
    options: ``delay_s``, ``chunked``, ``drop``, ``reasoning``, ``reasoning_in_tags``, ``usage``."""
    d = {"kind": kind}
    if kind == "tools":
        d["stop"] = "tool_use"
    d.update(kw)
    return d


def config(url, **settings):
    """Set what the fake does across a conversation: ``context_tokens=N``, ``thinking=True``
    (``host_sim.fakes.llm``, module doc); ``reset`` clears them."""
    r = http.request("POST", url + "/_fake/config", {"content-type": "application/json"}, json.dumps(settings))
    assert r.status == 200, r.status
