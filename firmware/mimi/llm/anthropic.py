"""Anthropic Messages: ``POST {base}/v1/messages`` (https://docs.anthropic.com/en/api/messages).

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01`` (``common.Provider``); body
``model``, ``max_tokens``, ``system``, ``tools`` (``name``, ``description``,
``input_schema``), ``messages``. The internal message form (docs/internals.md) is
converted here, at the edge: an assistant's tool calls become ``tool_use`` blocks;
consecutive ``tool`` messages become one ``user`` message of ``tool_result`` blocks (a
user text right after them joins that message as a text block, since roles must
alternate). Stop reasons
(https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons):
end_turn/stop_sequence -> end, tool_use, max_tokens/model_context_window_exceeded ->
max_tokens, refusal, pause_turn.
"""
import json

from mimi.llm import common


def body(w, p, system, messages, tools, max_tokens):
    """Write the request body for provider ``p`` through ``w``, one message at a time."""
    w('{"model":%s,"max_tokens":%d' % (json.dumps(p.model), max_tokens))
    if system is not None and len(system):
        w(',"system":')
        common.json_text(w, system)
    if tools:
        sep = ',"tools":['
        for t in tools:
            w(sep)
            w(json.dumps({"name": t.name, "description": t.description, "input_schema": t.schema}))
            sep = ","
        w("]")
    w(',"messages":[')
    sep = ""
    results = False  # inside a user message of tool_result blocks
    for m in messages:
        role = m.get("role")
        text = m.get("content") or ""
        if role == "tool":
            b = {"type": "tool_result", "tool_use_id": m.get("tool_call_id", ""), "content": text or "(empty)"}
            if m.get("is_error"):
                b["is_error"] = True
            w("," if results else sep + '{"role":"user","content":[')
            w(json.dumps(b))
            results = True
        elif role == "user":
            if results:  # join the results' user message
                w(",")
                w(json.dumps({"type": "text", "text": text or "(empty)"}))
                w("]}")
                results = False
            else:
                w(sep)
                w(json.dumps({"role": "user", "content": text or "(empty)"}))
        elif role == "assistant":
            content = [{"type": "text", "text": text}] if text else []
            for c in m.get("tool_calls") or ():
                content.append({"type": "tool_use", "id": c.get("id", ""), "name": c.get("name", ""),
                                "input": c.get("input") or {}})
            if not content:
                continue  # an empty turn: the API refuses empty text blocks
            if results:
                w("]}")
                results = False
            w(sep)
            w(json.dumps({"role": "assistant", "content": content}))
        else:
            continue
        sep = ","
    w("]}]}" if results else "]}")


def parse(d, name="anthropic", esc=True):
    """The API's reply dict -> the internal reply (text, tool_calls, stop, usage).

    ``esc``: the raw reply held UTF-16 surrogate escapes (see ``common.repair_utf16``)."""
    if not isinstance(d, dict) or not isinstance(d.get("content"), list):
        raise common.LLMError("%s sent a reply without content" % name, 200, True)
    texts = []
    calls = []
    for b in d["content"]:
        t = b.get("type") if isinstance(b, dict) else None
        if t == "text":
            t = b.get("text") or ""
            texts.append(common.repair_utf16(t) if esc else t)
        elif t == "tool_use":
            inp = b.get("input")
            c = {"id": b.get("id") or "toolu_%d" % len(calls), "name": b.get("name") or "", "input": inp}
            if not isinstance(inp, dict):
                c["input"] = {}
                c["error"] = "arguments must be a JSON object"
            calls.append(c)
    s = d.get("stop_reason")
    stop = ("max_tokens" if s in ("max_tokens", "model_context_window_exceeded") else
            s if s in ("tool_use", "refusal", "pause_turn") else "tool_use" if calls else "end")
    u = d.get("usage") or {}
    usage = ((u.get("input_tokens") or 0) + (u.get("cache_read_input_tokens") or 0)
             + (u.get("cache_creation_input_tokens") or 0), u.get("output_tokens") or 0)
    text = texts[0] if len(texts) == 1 else "".join(texts)  # no copy of a long single text
    texts = d = None
    return {"text": common.strip_think(text), "tool_calls": calls, "stop": stop, "usage": usage}
