"""web_search: search the web through Brave Search or Tavily (group ``net``).

Offered only when a key is set (settings ``search_key``, ``search_provider`` = "brave"
or "tavily"). The response is read into the LLM's reply buffer (``mimi.llm.init()``):
tools run on the agent thread between LLM calls, when that buffer is free, so a search
costs no buffer of its own.
- Brave: ``GET https://api.search.brave.com/res/v1/web/search?q=...&count=N`` with
  ``X-Subscription-Token``; results in ``web.results[]`` (title, url, description).
  https://api-dashboard.search.brave.com/app/documentation/web-search/get-started
- Tavily: ``POST https://api.tavily.com/search`` with ``Authorization: Bearer``, body
  ``{"query", "max_results"}``; results in ``results[]`` (title, url, content), plus
  ``answer`` when present. https://docs.tavily.com/api-reference/endpoint/search
"""
import json

from micropython import const

from mimi import config
from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_WEB_RESULTS_MAX = const(10)
_WEB_SNIPPET_MAX_CHARS = const(300)
_WEB_TIMEOUT_MS = const(20000)

# errors the model reads, by key (``mimi.llm.pick``: one string, RAM)
_MSG = const("|401 key was rejected|403 key was rejected|429 rate limit was reached|big reply was too large"
             "|json sent invalid JSON|reach could not reach the %s search (%s)"
             "|which search_provider must be brave or tavily|")


def quote(text):
    """Percent-encode ``text`` (UTF-8) for a URL query value (no ``urllib`` on MicroPython)."""
    out = []
    for c in text.encode():
        out.append(chr(c) if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b"-._~" else "%%%02X" % c)
    return "".join(out)


def _clip(s, n):
    s = " ".join(str(s or "").split())
    return s if len(s) <= n else s[:n - 3] + "..."


def web_search(args, ctx):
    """``query``, optional ``count`` (1-10, default 5) -> numbered results as text."""
    from mimi.llm import init, pick
    from mimi.net import http

    query = args["query"].strip()
    if not query:
        raise ValueError("no query")
    count = max(1, min(int(args.get("count") or 5), _WEB_RESULTS_MAX))
    provider = config.get("search_provider").strip().lower() or "brave"
    key = config.get("search_key")
    try:
        if provider == "tavily":
            r = http.request("POST", config.WEB_TAVILY_URL, {"authorization": "Bearer " + key,
                                                            "content-type": "application/json"},
                             json.dumps({"query": query, "max_results": count}), _WEB_TIMEOUT_MS, init())
        elif provider == "brave":
            r = http.request("GET", "%s?q=%s&count=%d&text_decorations=false&result_filter=web" % (
                config.WEB_BRAVE_URL, quote(query), count), {"accept": "application/json", "x-subscription-token": key},
                None, _WEB_TIMEOUT_MS, init())
        else:
            raise ValueError(pick(_MSG, "which"))
    except OSError as e:
        raise ValueError(pick(_MSG, "reach") % (provider, str(e)[:60] or type(e).__name__))
    if r.status != 200 or r.truncated:
        why = pick(_MSG, "big" if r.truncated else r.status) or "failed"
        raise ValueError("the %s search %s (%d)" % (provider, why, r.status))
    try:
        d = r.json()
    except ValueError:
        raise ValueError("the %s search %s" % (provider, pick(_MSG, "json")))
    r = None
    lines = []
    if provider == "tavily":
        items, snip = d.get("results"), "content"
        if d.get("answer"):
            lines.append("Answer: " + _clip(d["answer"], _WEB_SNIPPET_MAX_CHARS * 2))
    else:
        items, snip = (d.get("web") or {}).get("results"), "description"
    d = None
    for i, x in enumerate((items or ())[:count]):
        lines.append("%d. %s\n   %s\n   %s" % (i + 1, _clip(x.get("title"), 120), x.get("url") or "",
                                                _clip(x.get(snip), _WEB_SNIPPET_MAX_CHARS)))
    if not items:
        return "No results for: %s" % query
    from mimi.llm.wire import repair_utf16  # an emoji escaped in the JSON: one character, not two halves

    return repair_utf16("\n".join(lines))


def register_all():
    """Register web_search (group ``net``; offered only when ``search_key`` is set: its
    line in ``tools.jsonl`` says so)."""
    registry.load(("mimi.tools.web",))
