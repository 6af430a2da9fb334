"""A fake web search service speaking Brave Search's and Tavily's formats.

    fake = FakeSearch(key="brave-FAKE").start()
    config.WEB_BRAVE_URL = fake.url + "/res/v1/web/search"; config.WEB_TAVILY_URL = fake.url + "/search"
    fake.results = [("Title", "https://example.test/", "snippet"), ...]
    fake.status = 429   # the next replies fail with this status (None: answer normally)

A query holding ``RATELIMIT`` gets a 429 and one holding ``NOTHING`` no results, so a
client in another process can reach those cases too.

Brave: ``GET /res/v1/web/search`` with ``X-Subscription-Token`` -> ``{"type": "search",
"web": {"type": "search", "results": [{"title", "url", "description", ...}]}}``.
Tavily: ``POST /search`` with ``Authorization: Bearer`` -> ``{"query", "answer",
"results": [{"title", "url", "content", "score"}], "response_time"}``.
"""
from host_sim.fakes import FakeServer, Out


class FakeSearch(FakeServer):
    def __init__(self, key="search-FAKE"):
        super().__init__()
        self.key = key
        self.results = [("Example Domain", "https://example.test/", "This domain is for use in examples.")]
        self.answer = None
        self.status = None

    def handle(self, req):
        q = req["query"].get("q", "") + str((req["json"] or {}).get("query", ""))
        status = self.status or (429 if "RATELIMIT" in q else None)
        if status:
            return Out(status, {"error": {"code": "FAKE", "status": status}})
        n = 0 if "NOTHING" in q else len(self.results)
        if req["path"] == "/res/v1/web/search" and req["method"] == "GET":
            if req["headers"].get("x-subscription-token") != self.key:
                return Out(401, {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}})
            n = min(n, int(req["query"].get("count", "20")))
            web = [{"title": t, "url": u, "description": d, "is_source_local": False, "language": "en",
                    "profile": {"name": "Example", "url": u}, "meta_url": {"scheme": "https", "hostname": "example.test"}}
                   for t, u, d in self.results[:n]]
            return Out(200, {"type": "search", "query": {"original": req["query"].get("q", "")},
                             "web": {"type": "search", "results": web}})
        if req["path"] == "/search" and req["method"] == "POST":
            if req["headers"].get("authorization") != "Bearer " + self.key:
                return Out(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
            body = req["json"] or {}
            n = min(n, int(body.get("max_results", 5)))
            res = [{"title": t, "url": u, "content": d, "score": 0.9} for t, u, d in self.results[:n]]
            return Out(200, {"query": body.get("query"), "answer": self.answer, "results": res,
                             "response_time": 0.5})
        return Out(404, {"error": "not found"})
