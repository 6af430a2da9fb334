"""OpenAI Chat Completions: ``POST {base}/chat/completions``, ``base`` including ``/v1``
as in the official SDK (https://platform.openai.com/docs/api-reference/chat/create).

Used for OpenAI and the OpenAI-compatible servers (OpenRouter, DeepSeek, Ollama, LM
Studio, a custom base URL). Bearer auth (left out when no key is set: local servers).
Tools are ``{"type": "function", "function": {name, description, parameters}}``; an
assistant's tool calls carry ``arguments`` as a JSON string; results are ``role: tool``
messages with ``tool_call_id``. Replies: ``content``, or ``reasoning_content`` /
``reasoning`` when ``content`` is empty (reasoning models behind some servers);
``<think>...</think>`` is stripped so thinking never reaches the chat. finish_reason: stop
-> end, tool_calls -> tool_use, length -> max_tokens, content_filter -> refusal.
Arguments that are not valid JSON become a call with ``"error"``, which the agent answers
with an error result the model reads.
"""
import json

from mimi import config
from mimi.llm import common

_STOP = {"stop": "end", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
         "content_filter": "refusal"}


class Provider:
    """``chat(system, messages, tools, max_tokens) -> reply`` for OpenAI-compatible servers."""

    protocol = "openai"

    def __init__(self, name, base_url, api_key, model, needs_key=True):
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._key = api_key
        self._needs_key = needs_key

    def url(self):
        return self.base_url + "/chat/completions"

    def headers(self):
        h = {"content-type": "application/json"}
        if self._key:
            h["authorization"] = "Bearer " + self._key
        return h

    def writer(self, system, messages, tools, max_tokens):
        """The body writer (called twice by ``http``: count, then send)."""
        def write_body(w):
            w('{"model":')
            common.dump(w, self.model)
            # OpenAI itself wants max_completion_tokens (its reasoning models refuse
            # max_tokens); compatible servers know only max_tokens.
            w(',"%s":%d' % ("max_completion_tokens" if self.name == "openai" else "max_tokens", max_tokens))
            if tools:
                w(',"tools":[')
                for i, t in enumerate(tools):
                    if i:
                        w(",")
                    w('{"type":"function","function":{"name":')
                    common.dump(w, t.name)
                    w(',"description":')
                    common.dump(w, t.description)
                    w(',"parameters":')
                    common.dump(w, t.schema)
                    w("}}")
                w("]")
            w(',"messages":[')
            first = True
            if system is not None and len(system):
                w('{"role":"system","content":')
                common.json_text(w, system)
                w("}")
                first = False
            for m in messages:
                if _message(w, m, first):
                    first = False
            w("]}")
        return write_body

    def chat(self, system, messages, tools=None, max_tokens=None):
        """One request; returns the reply dict (docs/internals.md, "LLM").

        ``system``: str or bytes-like (the context's memoryview); ``messages``: internal
        form; ``tools``: ``registry.Tool`` list. Raises ``common.LLMError``.
        """
        if self._needs_key and not self._key:
            raise common.LLMError("no API key is set for %s" % self.name)
        d, esc = common.call(self.url(), self.headers(),
                             self.writer(system, messages, tools, max_tokens or config.LLM_MAX_TOKENS), self.name)
        return parse(d, self.name, esc)


def _message(w, m, first):
    role = m.get("role")
    text = m.get("content") or ""
    if role == "tool":
        w("" if first else ",")
        w('{"role":"tool","tool_call_id":')
        common.dump(w, m.get("tool_call_id", ""))
        w(',"content":')
        common.dump(w, text)
        w("}")
        return True
    if role == "user":
        w("" if first else ",")
        w('{"role":"user","content":')
        common.dump(w, text)
        w("}")
        return True
    if role != "assistant":
        return False
    calls = m.get("tool_calls") or ()
    if not text and not calls:
        return False
    w("" if first else ",")
    w('{"role":"assistant","content":')
    common.dump(w, text if text else None)
    if calls:
        w(',"tool_calls":[')
        for i, c in enumerate(calls):
            if i:
                w(",")
            w('{"id":')
            common.dump(w, c.get("id", ""))
            w(',"type":"function","function":{"name":')
            common.dump(w, c.get("name", ""))
            w(',"arguments":')
            common.dump(w, json.dumps(c.get("input") or {}))
            w("}}")
        w("]")
    w("}")
    return True


def _same(s):
    return s


def parse(d, name="openai", esc=True):
    """The API's reply dict -> the internal reply (text, tool_calls, stop, usage).

    ``esc``: the raw reply held UTF-16 surrogate escapes (see ``common.repair_utf16``)."""
    fix = common.repair_utf16 if esc else _same
    try:
        choice = d["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise common.LLMError("%s sent a reply without choices" % name, 200, True)
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or ()):
        f = c.get("function") or {}
        inp, err = common.parse_args(f.get("arguments"))
        call = {"id": c.get("id") or "call_%d" % i, "name": f.get("name") or "", "input": inp}
        if err:
            call["error"] = err
        calls.append(call)
    text = common.strip_think(fix(msg.get("content") or ""))
    if not text and not calls:
        text = common.strip_think(fix(msg.get("reasoning_content") or msg.get("reasoning") or ""))
    stop = _STOP.get(choice.get("finish_reason"), "end")
    if calls and stop == "end":
        stop = "tool_use"  # some servers say "stop" with tool calls
    u = d.get("usage") or {}
    usage = (u.get("prompt_tokens") or 0, u.get("completion_tokens") or 0)
    return {"text": text, "tool_calls": calls, "stop": stop, "usage": usage}
