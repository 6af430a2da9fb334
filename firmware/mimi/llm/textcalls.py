"""Tool calls written in the reply's text, read as tool calls (issue 13, item 11).

Local models behind servers that do not parse their tool calls (Ollama, LM Studio,
llama.cpp with a template that does not match) send the call as text. The forms read
here, from the models' own chat templates:
- Hermes, Qwen 2.5 / 3: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (one block per call); ``<function_call>...</function_call>`` likewise.
- Qwen3-Coder: ``<tool_call><function=NAME><parameter=KEY>value</parameter>...</function>
  </tool_call>``; Llama 3.1's own format: ``<function=NAME>{...}</function>``.
- Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` and the newer
  ``[TOOL_CALLS]NAME[ARGS]{...}``.
- Llama 3.1 / 3.2: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (``;`` between calls),
  and a reply that is nothing but that JSON object (or a list of them), bare or in a
  code fence: read only when its name is one of the offered tools (a model may well
  answer with JSON a person asked for).
``arguments`` may be an object or a JSON string; ``parameters`` and ``input`` are taken
too. The markup never reaches the user: what is left of the text is the reply's text.
A call the markup holds but that cannot be read becomes a call with an ``"error"`` (the
model reads it and tries again); a call to a tool not offered is still a call (the agent
answers that the tool is not available).
"""
import json

from micropython import const

_TEXTCALLS_MAX = const(8)  # calls read from one reply
_OPENERS = ("<tool_call>", "<function_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=")
_TAIL_TOKENS = ("<|eom_id|>", "<|eot_id|>", "</s>")


def has_markup(text):
    """True when ``text`` may hold a call written as text (a cheap first look)."""
    for m in _OPENERS:
        if m in text:
            return True
    t = text.lstrip()
    return t[:1] in ("{", "[") or t[:3] == "```"


def extract(text, names):
    """``(text without the markup, calls)``; calls are ``{"id": "", "name", "input"}``
    (``input`` an object or a JSON string, as a server's arguments; ``"error"`` when it
    could not be read). ``names``: the offered tools' names (for the bare JSON form)."""
    calls = []
    keep = []
    i = 0
    n = len(text)
    while i < n:
        j, tag = _first_opener(text, i)
        if j < 0:
            keep.append(text[i:])
            break
        keep.append(text[i:j])
        if tag == "<function=":
            k = text.find("</function>", j)
            i = n if k < 0 else k + 11
            _function(text[j:k if k >= 0 else n], calls)
            continue
        start = j + len(tag)
        if tag in ("<tool_call>", "<function_call>"):
            close = "</" + tag[1:]
            k = text.find(close, start)
            i = n if k < 0 else k + len(close)  # an unclosed block (a cut reply) runs to the end
        elif tag == "[TOOL_CALLS]":
            k = text.find("[TOOL_CALLS]", start)
            i = k = n if k < 0 else k
        else:  # <|python_tag|>: the rest of the reply
            i = k = n
        body = text[start:k if k >= 0 else n]
        for t in _TAIL_TOKENS:
            body = body.replace(t, "")
        if not _body(body, calls) and tag == "<|python_tag|>":
            keep.append(body)  # code for an interpreter, not a call: the text without the tag
    if not calls:
        v = _json(_unfence(text))
        found = []
        for o in v if isinstance(v, list) else (v,):
            if not isinstance(o, dict) or _name(o) not in names:
                return text, []
            found.append(o)
        for o in found:
            _add(calls, o)
        return ("", calls) if calls else (text, [])
    return "".join(keep).strip(), calls


def _first_opener(text, i):
    best, tag = -1, None
    for m in _OPENERS:
        j = text.find(m, i)
        if j >= 0 and (best < 0 or j < best):
            best, tag = j, m
    return best, tag


def _body(body, calls):
    """Read the calls of one block into ``calls``; False when it held nothing readable."""
    b = _unfence(body)
    if not b:
        return False
    if b.startswith("<function="):
        return _function(b, calls)
    if "[ARGS]" in b:  # Mistral's newer form: NAME[ARGS]{...}
        name, _, args = b.partition("[ARGS]")
        return _add(calls, {"name": name.strip(), "arguments": args.strip()})
    v = _json(b)
    if v is None:  # several objects, one a line or ";" between them (Llama 3.1)
        parts = [_json(p) for p in b.replace(";\n", "\n").replace("};", "}\n").split("\n") if p.strip()]
        if parts and None not in parts:
            v = parts
    if v is None:
        return _add(calls, {"name": "", "error": "the tool call written in your text is not valid JSON"})
    ok = False
    for o in v if isinstance(v, list) else (v,):
        ok = _add(calls, o) or ok
    return ok


def _function(b, calls):
    """``<function=NAME>`` then a JSON object or ``<parameter=KEY>value</parameter>`` tags."""
    e = b.find(">")
    if e < 0:
        return _add(calls, {"name": "", "error": "the tool call written in your text has no name"})
    name = b[10:e].strip()
    rest = b[e + 1:].replace("</function>", "").strip()
    if "<parameter=" not in rest:
        return _add(calls, {"name": name, "arguments": rest or {}})
    args = {}
    for part in rest.split("<parameter=")[1:]:
        e = part.find(">")
        if e < 0:
            continue
        v = part[e + 1:]
        k = v.find("</parameter>")
        v = v[:k] if k >= 0 else v
        if v[:1] == "\n":  # the template puts the value on lines of its own
            v = v[1:]
        if v[-1:] == "\n":
            v = v[:-1]
        if v[:1] in ("{", "["):  # an object or a list given as JSON
            j = _json(v)
            v = v if j is None else j
        args[part[:e].strip()] = v
    return _add(calls, {"name": name, "arguments": args})


def _name(o):
    f = o.get("function")
    n = o.get("name") or (f.get("name") if isinstance(f, dict) else None)
    return n if isinstance(n, str) else None


def _add(calls, o):
    """Append the call object ``o`` says (name and arguments), at most ``_TEXTCALLS_MAX``."""
    if len(calls) >= _TEXTCALLS_MAX or not isinstance(o, dict):
        return False
    f = o.get("function") if isinstance(o.get("function"), dict) else o
    args = None
    for k in ("arguments", "parameters", "input"):
        if k in f:
            args = f[k]
            break
    c = {"id": "", "name": _name(o) or "", "input": args}
    if o.get("error"):
        c["error"] = o["error"]
        c["input"] = {}
    elif not c["name"]:
        c["error"] = "the tool call written in your text has no name"
    calls.append(c)
    return True


def _unfence(text):
    """``text`` stripped, without a surrounding Markdown code fence (```json ... ```)."""
    t = text.strip()
    if t[:3] == "```" and t[-3:] == "```" and len(t) > 6:
        t = t[3:-3]
        nl = t.find("\n")
        if 0 <= nl < 12 and " " not in t[:nl]:  # the fence's language word
            t = t[nl + 1:]
        t = t.strip()
    return t


def _json(s):
    try:
        return json.loads(s) if s[:1] in ("{", "[") else None
    except ValueError:
        return None
