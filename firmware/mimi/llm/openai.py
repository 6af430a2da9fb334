"""OpenAI Chat Completions: ``POST {base}/chat/completions``, ``base`` including ``/v1``
as in the official SDK (https://platform.openai.com/docs/api-reference/chat/create).

Used for OpenAI and the OpenAI-compatible servers (OpenRouter, DeepSeek, Ollama, LM
Studio, a custom base URL). Bearer auth (left out when no key is set: local servers;
``common.Provider``). Tools are ``{"type": "function", "function": {name, description,
parameters}}``; an assistant's tool calls carry ``arguments`` as a JSON string; results are
``role: tool`` messages with ``tool_call_id``. Replies: ``content``, or
``reasoning_content`` / ``reasoning`` when ``content`` is empty (reasoning models behind
some servers); ``<think>...</think>`` is stripped so thinking never reaches the chat.
finish_reason: stop -> end, tool_calls -> tool_use, length -> max_tokens, content_filter
-> refusal. Arguments that are not valid JSON become a call with ``"error"``, which the
agent answers with an error result the model reads.
"""
import json

from mimi.llm import common


def body(w, p, system, messages, tools, max_tokens):
    """Write the request body for provider ``p`` through ``w``, one message at a time."""
    # OpenAI itself wants max_completion_tokens (its reasoning models refuse max_tokens);
    # compatible servers know only max_tokens.
    w('{"model":%s,"%s":%d,"messages":[' % (json.dumps(p.model), "max_completion_tokens" if p.name == "openai"
                                             else "max_tokens", max_tokens))
    sep = ""
    if system is not None and len(system):
        w('{"role":"system","content":')
        common.json_text(w, system)
        w("}")
        sep = ","
    for m in messages:
        role = m.get("role")
        text = m.get("content") or ""
        calls = m.get("tool_calls")
        if role == "tool":
            d = {"role": "tool", "tool_call_id": m.get("tool_call_id", ""), "content": text}
        elif role == "user":
            d = {"role": "user", "content": text}
        elif role == "assistant" and (text or calls):
            d = {"role": "assistant", "content": text or None}
            if calls:
                d["tool_calls"] = [{"id": c.get("id", ""), "type": "function", "function": {
                    "name": c.get("name", ""), "arguments": json.dumps(c.get("input") or {})}} for c in calls]
        else:
            continue
        w(sep)
        w(json.dumps(d))
        sep = ","
    w("]")
    if tools:
        sep = ',"tools":['
        for t in tools:
            w(sep)
            w(json.dumps({"type": "function", "function": {"name": t.name, "description": t.description,
                                                           "parameters": t.schema}}))
            sep = ","
        w("]")
    w("}")


def parse(d, name="openai", esc=True):
    """The API's reply dict -> the internal reply (text, tool_calls, stop, usage).

    ``esc``: the raw reply held UTF-16 surrogate escapes (see ``common.repair_utf16``)."""
    try:
        choice = d["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise common.LLMError("%s sent a reply without choices" % name, 200, True)
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or ()):
        f = c.get("function") or {}
        a = f.get("arguments")  # a JSON string (some servers send the object itself)
        call = {"id": c.get("id") or "call_%d" % i, "name": f.get("name") or "", "input": a}
        if not isinstance(a, dict):
            call["input"] = {}
            if a is not None and (not isinstance(a, str) or a.strip()):
                try:
                    a = json.loads(a)
                except (ValueError, TypeError) as e:
                    call["error"] = "arguments were not valid JSON: %s" % (str(e)[:80] or "syntax error")
                else:
                    if isinstance(a, dict):
                        call["input"] = a
                    else:
                        call["error"] = "arguments must be a JSON object"
        calls.append(call)
    text = ""
    for k in ("content", "reasoning_content", "reasoning"):  # reasoning only when there is nothing else
        t = msg.get(k)
        if t:
            text = common.strip_think(common.repair_utf16(t) if esc else t)
        if text or calls:
            break
    s = choice.get("finish_reason")
    stop = ("max_tokens" if s == "length" else "refusal" if s == "content_filter" else
            "tool_use" if calls or s in ("tool_calls", "function_call") else "end")
    u = d.get("usage") or {}
    return {"text": text, "tool_calls": calls, "stop": stop, "usage": (u.get("prompt_tokens") or 0,
                                                                       u.get("completion_tokens") or 0)}
