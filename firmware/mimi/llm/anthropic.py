"""Anthropic Messages: ``POST {base}/v1/messages`` (https://docs.anthropic.com/en/api/messages).

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01``; body ``model``,
``max_tokens``, ``system``, ``tools`` (``name``, ``description``, ``input_schema``),
``messages``. The internal message form (docs/internals.md) is converted here, at the
edge: an assistant's tool calls become ``tool_use`` blocks; consecutive ``tool``
messages become one ``user`` message of ``tool_result`` blocks (a user text right after
them joins that message as a text block, since roles must alternate).
Stop reasons (https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons):
end_turn/stop_sequence -> end, tool_use, max_tokens/model_context_window_exceeded ->
max_tokens, refusal, pause_turn.
"""
from mimi import config
from mimi.llm import common

_STOP = {"end_turn": "end", "stop_sequence": "end", "tool_use": "tool_use", "max_tokens": "max_tokens",
         "model_context_window_exceeded": "max_tokens", "refusal": "refusal", "pause_turn": "pause_turn"}


class Provider:
    """``chat(system, messages, tools, max_tokens) -> reply`` for the Anthropic API."""

    protocol = "anthropic"

    def __init__(self, name, base_url, api_key, model):
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._key = api_key

    def url(self):
        return self.base_url + "/v1/messages"

    def headers(self):
        return {"x-api-key": self._key, "anthropic-version": config.LLM_ANTHROPIC_VERSION,
                "content-type": "application/json"}

    def writer(self, system, messages, tools, max_tokens):
        """The body writer (called twice by ``http``: count, then send)."""
        def write_body(w):
            w('{"model":')
            common.dump(w, self.model)
            w(',"max_tokens":%d' % max_tokens)
            if system is not None and len(system):
                w(',"system":')
                common.json_text(w, system)
            if tools:
                w(',"tools":[')
                for i, t in enumerate(tools):
                    if i:
                        w(",")
                    w('{"name":')
                    common.dump(w, t.name)
                    w(',"description":')
                    common.dump(w, t.description)
                    w(',"input_schema":')
                    common.dump(w, t.schema)
                    w("}")
                w("]")
            w(',"messages":[')
            _messages(w, messages)
            w("]}")
        return write_body

    def chat(self, system, messages, tools=None, max_tokens=None):
        """One request; returns the reply dict (docs/internals.md, "LLM").

        ``system``: str or bytes-like (the context's memoryview); ``messages``: internal
        form; ``tools``: ``registry.Tool`` list. Raises ``common.LLMError``.
        """
        if not self._key:
            raise common.LLMError("no API key is set for %s" % self.name)
        d, esc = common.call(self.url(), self.headers(),
                             self.writer(system, messages, tools, max_tokens or config.LLM_MAX_TOKENS), self.name)
        return parse(d, esc)


def _messages(w, messages):
    open_results = False  # inside a user message of tool_result blocks
    first = True
    for m in messages:
        role = m.get("role")
        if role == "tool":
            if not open_results:
                w("" if first else ",")
                w('{"role":"user","content":[')
                open_results = True
            else:
                w(",")
            w('{"type":"tool_result","tool_use_id":')
            common.dump(w, m.get("tool_call_id", ""))
            w(',"content":')
            common.dump(w, m.get("content") or "(empty)")
            if m.get("is_error"):
                w(',"is_error":true')
            w("}")
            first = False
            continue
        text = m.get("content") or ""
        if role == "user":
            if open_results:  # join the results' user message
                w(',{"type":"text","text":')
                common.dump(w, text or "(empty)")
                w("}]}")
                open_results = False
                continue
            w("" if first else ",")
            w('{"role":"user","content":')
            common.dump(w, text or "(empty)")
            w("}")
        elif role == "assistant":
            calls = m.get("tool_calls") or ()
            if not text and not calls:
                continue  # an empty turn: the API refuses empty text blocks
            if open_results:
                w("]}")
                open_results = False
            w("" if first else ",")
            w('{"role":"assistant","content":[')
            sep = ""
            if text:
                w('{"type":"text","text":')
                common.dump(w, text)
                w("}")
                sep = ","
            for c in calls:
                w(sep)
                w('{"type":"tool_use","id":')
                common.dump(w, c.get("id", ""))
                w(',"name":')
                common.dump(w, c.get("name", ""))
                w(',"input":')
                common.dump(w, c.get("input") or {})
                w("}")
                sep = ","
            w("]}")
        else:
            continue
        first = False
    if open_results:
        w("]}")


def parse(d, esc=True):
    """The API's reply dict -> the internal reply (text, tool_calls, stop, usage).

    ``esc``: the raw reply held UTF-16 surrogate escapes (see ``common.repair_utf16``)."""
    if not isinstance(d, dict) or not isinstance(d.get("content"), list):
        raise common.LLMError("anthropic sent a reply without content", 200, True)
    texts = []
    calls = []
    for b in d["content"]:
        t = b.get("type") if isinstance(b, dict) else None
        if t == "text":
            t = b.get("text") or ""
            texts.append(common.repair_utf16(t) if esc else t)
        elif t == "tool_use":
            inp = b.get("input")
            call = {"id": b.get("id") or "toolu_%d" % len(calls), "name": b.get("name") or "",
                    "input": inp if isinstance(inp, dict) else {}}
            if not isinstance(inp, dict):
                call["error"] = "arguments must be a JSON object"
            calls.append(call)
    stop = _STOP.get(d.get("stop_reason"), "end")
    if calls and stop == "end":
        stop = "tool_use"
    u = d.get("usage") or {}
    usage = ((u.get("input_tokens") or 0) + (u.get("cache_read_input_tokens") or 0)
             + (u.get("cache_creation_input_tokens") or 0), u.get("output_tokens") or 0)
    text = texts[0] if len(texts) == 1 else "".join(texts)  # no copy of a long single text
    texts = d = None
    return {"text": common.strip_think(text), "tool_calls": calls, "stop": stop, "usage": usage}
