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
- Llama 3.1 / 3.2: ``<|python_tag|>{"name": ..., "parameters": {...}}``, and a reply that
  is nothing but that JSON object (or a list of them), bare or in a code fence: read
  only when its name is one of the offered tools (a person may well ask for JSON).
``arguments`` may be an object or a JSON string; ``parameters`` and ``input`` are taken
too. The markup never reaches the user: what is left of the text is the reply's text.
A block that cannot be read becomes a call with an ``"error"`` (the model reads it and
tries again); a call to a tool not offered is still a call (the agent answers that the
tool is not available). At most ``_TEXTCALLS_MAX`` calls are read from one reply.
(Kept small: on the board every name here costs RAM once the module is loaded, and
``mimi.llm.wire`` loads it only for a reply that holds such markup.)
"""
import json

from micropython import const

_TEXTCALLS_MAX = const(8)
# (opening, closing) of each form; a closing of None runs to the next opening or the end
_FORMS = (("<tool_call>", "</tool_call>"), ("<function_call>", "</function_call>"), ("<function=", "</function>"),
          ("[TOOL_CALLS]", None), ("<|python_tag|>", None))
_BAD = const("the tool call written in your text could not be read")


def has_markup(text):
    """True when ``text`` may hold a call written as text (a cheap first look)."""
    for o, _ in _FORMS:
        if o in text:
            return True
    t = text.lstrip()
    return t[:1] in "{[`" and t != ""


def extract(text, names):
    """``(text without the markup, calls)``; calls are ``{"id": "", "name", "input"}``
    (``input`` an object or a JSON string, as a server's arguments; ``"error"`` when it
    could not be read). ``names``: the offered tools' names (for the bare JSON form)."""
    calls = []
    keep = []
    i = 0
    while True:
        j = -1
        for o, c in _FORMS:  # the first opening from i
            k = text.find(o, i)
            if k >= 0 and (j < 0 or k < j):
                j, op, cl = k, o, c
        if j < 0:
            keep.append(text[i:])
            break
        keep.append(text[i:j])
        s = j if op == "<function=" else j + len(op)
        e = text.find(cl or op, s + 1)
        e = len(text) if e < 0 else e
        i = e + len(cl) if cl and e < len(text) else e
        body = text[s:e].replace("<|eom_id|>", "").replace("<|eot_id|>", "").strip()
        if not _block(body, calls, op != "<|python_tag|>"):
            keep.append(body)  # code for an interpreter after <|python_tag|>, not a call: the text without the tag
    if calls or len(keep) > 1:  # markup was there: the text without it
        return "".join(keep).strip(), calls
    v = _json(text)  # the bare form: only an offered tool's name makes it a call
    for o in v if isinstance(v, list) and v else (v,):
        if not isinstance(o, dict) or (o.get("name") or (o.get("function") or {}).get("name")) not in (names or ()):
            return text, []
    for o in v if isinstance(v, list) else (v,):
        _add(calls, o)
    return "", calls


def _block(b, calls, sure):
    """Read the calls one block holds into ``calls``; False when it held none. ``sure``:
    the markup says it is a call, so one that cannot be read is a call with an error."""
    if b[:10] == "<function=":  # NAME> then a JSON object or <parameter=KEY>value</parameter> tags
        n = b.find(">")
        rest = b[n + 1:].replace("</function>", "").strip()
        if n < 0 or "<parameter=" not in rest:
            return _add(calls, {"name": b[10:n].strip(), "arguments": rest or {}} if n > 10 else {})
        args = {}
        for part in rest.split("<parameter=")[1:]:
            k = part.find(">")
            v = part[k + 1:].split("</parameter>")[0]
            v = v[1:] if v[:1] == "\n" else v  # the template puts the value on lines of its own
            v = v[:-1] if v[-1:] == "\n" else v
            args[part[:k].strip()] = _json(v) or v  # an object or a list given as JSON
        return _add(calls, {"name": b[10:n].strip(), "arguments": args})
    if "[ARGS]" in b:  # Mistral's newer form: NAME[ARGS]{...}
        n, _, a = b.partition("[ARGS]")
        return _add(calls, {"name": n.strip(), "arguments": a.strip()})
    v = _json(b)
    if v is None and "}" in b:  # one object a line, or ";" between them (Llama 3.1)
        v = [_json(p) for p in b.replace("};", "}\n").split("\n") if p.strip()]
        v = None if None in v else v
    if v is None:
        return sure and _add(calls, {})
    ok = False
    for o in v if isinstance(v, list) else (v,):
        ok = _add(calls, o) or ok
    return ok


def _add(calls, o):
    """Append the call ``o`` names (a ``function`` object inside counts too)."""
    if len(calls) >= _TEXTCALLS_MAX or not isinstance(o, dict):
        return False
    f = o.get("function") if isinstance(o.get("function"), dict) else o
    c = {"id": "", "name": f.get("name") or o.get("name") or "", "input": None}
    for k in ("arguments", "parameters", "input"):
        if k in f:
            c["input"] = f[k]
            break
    if not isinstance(c["name"], str) or not c["name"]:
        c["name"], c["input"], c["error"] = "", {}, _BAD
    calls.append(c)
    return True


def _json(s):
    """``s`` (bare, or in a Markdown code fence) as JSON when it is an object or a list."""
    s = s.strip()
    if s[:3] == "```" and s[-3:] == "```":
        s = s[3:-3]
        n = s.find("\n")
        s = s[n + 1:] if 0 <= n < 12 and " " not in s[:n] else s  # the fence's language word
        s = s.strip()
    try:
        return json.loads(s) if s[:1] in "{[" and s else None
    except ValueError:
        return None
