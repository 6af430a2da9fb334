"""The two wire formats, converted at the edge: ``body`` writes a request, ``parse`` reads
a reply (one module for both: they share most of their shape, and code costs RAM).

Anthropic Messages (``protocol == "anthropic"``): ``POST {base}/v1/messages``
(https://docs.anthropic.com/en/api/messages); body ``model``, ``max_tokens``, ``system``,
``tools`` (``name``, ``description``, ``input_schema``), ``messages``. An assistant's
tool calls become ``tool_use`` blocks; consecutive ``tool`` messages become one ``user``
message of ``tool_result`` blocks (a user text right after them joins that message as a
text block, since roles must alternate). Stop reasons
(https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons):
end_turn/stop_sequence -> end, tool_use, max_tokens/model_context_window_exceeded ->
max_tokens, refusal, pause_turn.

OpenAI Chat Completions (``"openai"``): ``POST {base}/chat/completions``, ``base``
including ``/v1`` as in the official SDK
(https://platform.openai.com/docs/api-reference/chat/create), for OpenAI and the
compatible servers (OpenRouter, DeepSeek, Ollama, LM Studio, a custom base URL). The
system prompt is the first message; tools are ``{"type": "function", "function": {name,
description, parameters}}``; an assistant's tool calls carry ``arguments`` as a JSON
string; results are ``role: tool`` messages with ``tool_call_id``. OpenAI itself wants
``max_completion_tokens`` (its reasoning models refuse ``max_tokens``); compatible servers
know only ``max_tokens``. Replies: ``content`` (a string, or a list of content parts whose
``text`` parts are joined), or ``reasoning_content`` / ``reasoning`` when there is nothing
else (reasoning models behind some servers). finish_reason: stop ->
end, tool_calls -> tool_use, length -> max_tokens, content_filter -> refusal.

Images (a user message's ``images``: files on flash, ``[{"path", "mime"}]``) make that
message's content a list of blocks, the images first, each streamed as base64
(``user_blocks``); the history on flash never holds them.

Both: ``<think>...</think>`` is stripped so thinking never reaches the chat; tool-call
arguments that are not a JSON object become a call with ``"error"``, which the agent
answers with an error result the model reads.

What real servers also send (issue 13):
- OpenAI's ``message.refusal`` (a string when the model refused): stop ``refusal``, its
  text the reply's.
- A 200 that carries an error object instead of an answer (OpenRouter: ``{"error": {"code",
  "message", "metadata"}}``, or the same on a choice whose ``finish_reason`` is "error";
  https://openrouter.ai/docs/api-reference/errors): an ``LLMError`` with that message,
  capped; retried when its code is 408, 429 or 5xx.
- DeepSeek's thinking mode: an answer's ``reasoning_content`` comes back as the reply's
  ``reasoning_content`` (also when empty) and goes out again on an assistant message that
  holds one: its API answers 400 when an assistant message of a turn with tool calls
  lacks it (https://api-docs.deepseek.com/guides/thinking_mode).
- Tool calls written in the text by local models (``mimi.llm.textcalls``): when a reply
  has no native calls, offered tools are given, and the text holds such markup, the calls
  are read from it and the markup is removed.
"""
import json

from micropython import const

from mimi import seam
from mimi.llm import LLMError
from mimi.tools import registry

_SLICE = const(512)  # bytes of a long text escaped per json.dumps call
_ERR_MSG_MAX = const(160)  # characters of a server's own error message shown to the user
# stop reasons of both APIs -> ours; any other is "end" ("tool_use" when the reply has calls)
# the usage fields that count as input (Anthropic's cached ones included) and as output
_IN = const(" input_tokens cache_read_input_tokens cache_creation_input_tokens prompt_tokens ")
_OUT = const(" output_tokens completion_tokens ")
_STOP = const(" max_tokens=max_tokens model_context_window_exceeded=max_tokens length=max_tokens refusal=refusal"
              " content_filter=refusal pause_turn=pause_turn tool_use=tool_use tool_calls=tool_use"
              " function_call=tool_use ")


def body(w, p, system, messages, tools, max_tokens, fill=None):
    """Write the request body for provider ``p`` through ``w``, one message at a time
    (``into`` writes it into a buffer; ``http`` calls a streaming writer twice: count, then
    send). ``fill``: see ``tools_json``."""
    a = head(w, p, tools, max_tokens, fill)
    messages_json(w, a, messages, system_json(w, p, system))


class _Full(Exception):
    pass


def into(buf, p, system, messages, tools, max_tokens):
    """Write the request body into ``buf`` (bytearray) and return its length in bytes, or
    None when it does not fit (then stream it with ``body``, which encodes it twice).

    The buffer is the shared reply buffer (``mimi.llm.init``): free while a request is
    written, and overwritten by the answer once the request is sent. So the body is
    encoded once, sent in a few large writes, and holds no heap of its own. Issue 17: the
    request body, encoded twice and written in small pieces, was half of a turn's CPU."""
    at = [0]
    cap = len(buf)
    mv = memoryview(buf)

    def w(x):
        b = seam.as_bytes(x)
        i = at[0]
        k = i + len(b)
        if k > cap:
            raise _Full()
        buf[i:k] = b
        at[0] = k

    def fill(f, n):  # file bytes straight into the buffer: no copy in the heap
        i = at[0]
        k = i + n
        if k > cap:
            raise _Full()
        while i < k:
            got = f.readinto(mv[i:k])
            if not got:
                raise OSError(5)  # tools.jsonl shorter than its index: changed under us
            i += got
        at[0] = k

    try:
        body(w, p, system, messages, tools, max_tokens, fill)
    except _Full:
        return None
    return at[0]


def tools_json(w, protocol, tools, fill=None):
    """Write the items of a request's ``tools`` array for ``tools`` (``registry.Tool``
    list) in ``protocol``'s form, comma-separated.

    A tool registered from ``tools.jsonl`` has its line's own bytes copied: the part
    before ``"group"`` is Anthropic's object as it is, and OpenAI's is that part with
    ``input_schema`` named ``parameters``, inside ``{"type":"function","function":...}``.
    Nothing is parsed or encoded, and nothing is kept between requests (issue 17: the
    tools, read, parsed and encoded again for each request, were a third of its CPU).
    ``fill(f, n)``: copy the next ``n`` bytes of file ``f`` to the output (``into``'s reads
    them straight into its buffer); None: ``w(f.read(n))``. Other tools are encoded as JSON."""
    a = protocol == "anthropic"
    if fill is None:
        fill = lambda f, n: w(f.read(n))  # noqa: E731
    f = None
    sep = ""
    try:
        for t in tools:
            w(sep)
            sep = ","
            cut = t.cut
            if cut is None:
                w(json.dumps({"name": t.name, "description": t.description, "input_schema": t.schema} if a else
                             {"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.schema}}))
                continue
            if f is None:
                f = open(registry.SPECS, "rb")
            at = t.at[0]
            if a:
                f.seek(at)
                fill(f, cut[1])
                w("}")
            else:
                w('{"type":"function","function":')
                f.seek(at)
                fill(f, cut[0])
                w(',"parameters":')
                f.seek(at + cut[0] + 16)  # after ,"input_schema":
                fill(f, cut[1] - cut[0] - 16)
                w("}}")
    finally:
        if f is not None:
            f.close()


def head(w, p, tools, max_tokens, fill=None):
    """Write the body's start (model, max tokens, tools); True for Anthropic's form.
    ``fill``: see ``tools_json``."""
    a = p.protocol == "anthropic"
    w('{"model":%s,"%s":%d' % (json.dumps(p.model), "max_completion_tokens" if p.name == "openai" else "max_tokens",
                               max_tokens))
    if tools:
        w(',"tools":[')
        tools_json(w, p.protocol, tools, fill)
        w("]")
    return a


def system_json(w, p, system):
    """Write the system prompt (Anthropic's ``system`` field, or OpenAI's first message)
    and open the ``messages`` array; returns the separator the next message needs."""
    a = p.protocol == "anthropic"
    if system is not None and len(system):
        w(',"system":' if a else ',"messages":[{"role":"system","content":')
        json_text(w, system)
        if not a:
            w("}")
            return ","
    w(',"messages":[')
    return ""


def messages_json(w, a, messages, sep):
    """Write the messages (internal form) in Anthropic's form (``a``) or OpenAI's, and close
    the body; ``sep``: what ``system_json`` returned."""
    results = False  # Anthropic: inside a user message of tool_result blocks
    for m in messages:
        role = m.get("role")
        text = m.get("content") or ""
        calls = m.get("tool_calls") or ()
        if role == "assistant":
            if not text and not calls:
                continue  # an empty turn (Anthropic refuses empty text blocks)
            tc = [{"type": "text", "text": text}] if a and text else []
            for c in calls:
                i, n, inp = c.get("id", ""), c.get("name", ""), c.get("input") or {}
                tc.append({"type": "tool_use", "id": i, "name": n, "input": inp} if a else
                          {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(inp)}})
            d = {"role": role, "content": tc if a else text or None}
            if tc and not a:
                d["tool_calls"] = tc
            if not a and "reasoning_content" in m:  # DeepSeek's thinking mode (module doc)
                d["reasoning_content"] = m["reasoning_content"] or ""
        elif role == "tool":
            if a:
                w("," if results else sep + '{"role":"user","content":[')
                w('{"type":"tool_result","tool_use_id":%s,"content":' % json.dumps(m.get("tool_call_id", "")))
                json_text(w, text or "(empty)")
                w(',"is_error":true}' if m.get("is_error") else "}")
                results = True
                sep = ","
                continue
            w("]}," if results else sep)
            results = False
            w('{"role":"tool","tool_call_id":%s,"content":' % json.dumps(m.get("tool_call_id", "")))
            json_text(w, text)  # a long result in slices, not copied whole
            w("}")
            sep = ","
            continue
        elif role == "user":
            if results:  # join the results' user message
                w(",")
                user_blocks(w, m, a)
                w("]}")
                results = False
                continue
            if m.get("images"):  # content blocks, not a string
                w(sep + '{"role":"user","content":[')
                user_blocks(w, m, a)
                w("]}")
                sep = ","
                continue
            w(sep + '{"role":"user","content":')
            json_text(w, text or "(empty)" if a else text)  # a long text in slices, not copied whole
            w("}")
            sep = ","
            continue
        else:
            continue
        w("]}," if results else sep)
        results = False
        w(json.dumps(d))
        sep = ","
    w("]}]}" if results else "]}")


def user_blocks(w, m, a):
    """Write user message ``m``'s content blocks (no brackets; ``a``: Anthropic): its
    ``images`` (``{"path", "mime"}``, files on flash), then its text. An image block is
    Anthropic's ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``
    (https://docs.anthropic.com/en/docs/build-with-claude/vision) or OpenAI's ``{"type":
    "image_url", "image_url": {"url": "data:<mime>;base64,..."}}``
    (https://platform.openai.com/docs/guides/images-vision); the file is read 768 bytes at
    a time and each piece encoded as it goes (1 KB of base64): never whole in RAM. Raises
    ``OSError`` when a file is gone."""
    import binascii

    from mimi.storage import fs

    for img in m.get("images") or ():
        w('{"type":"image","source":{"type":"base64","media_type":"%s","data":"' % img["mime"] if a else
          '{"type":"image_url","image_url":{"url":"data:%s;base64,' % img["mime"])
        f, _ = fs.open_read(img["path"])
        try:
            buf = bytearray(768)  # a multiple of 3: no padding until the end
            mv = memoryview(buf)
            while True:
                n = 0
                while n < len(buf):  # whole pieces: padding only at the very end
                    k = f.readinto(mv[n:])
                    if not k:
                        break
                    n += k
                if not n:
                    break
                w(binascii.b2a_base64(mv[:n], newline=False))
        finally:
            f.close()
        w('"}},')
    w(json.dumps({"type": "text", "text": m.get("content") or "(empty)"}))


def parse(d, protocol, name, esc=True, tools=None):
    """The API's reply dict -> the internal reply (text, tool_calls, stop, usage; and
    ``reasoning_content`` when the server sent that field).

    ``esc``: the raw reply held UTF-16 surrogate escapes (see ``repair_utf16``).
    ``tools``: the names of the offered tools, for calls written in the text (module doc).
    Raises ``LLMError``: the server's own error in a 200 (retryable by its code), or a
    reply with no content or a text of the wrong type (worth a retry)."""
    err = _body_error(d, name)
    if err:
        raise err
    reasoning = None
    try:
        n_in = n_out = 0  # tokens
        u = d.get("usage")
        for k in u if isinstance(u, dict) else ():
            if isinstance(u[k], int):
                if " %s " % k in _IN:
                    n_in += u[k]
                elif " %s " % k in _OUT:
                    n_out += u[k]
        alt = None
        if protocol == "anthropic":
            texts = []
            calls = []
            for b in d["content"]:
                t = b.get("type")
                if t == "text":
                    texts.append(b.get("text") or "")
                elif t == "tool_use":
                    calls.append({"id": b.get("id") or "toolu_%d" % len(calls), "name": str(b.get("name") or ""),
                                  "input": b.get("input")})
            s = d.get("stop_reason")
        else:
            d = d["choices"][0]
            s = d.get("finish_reason")
            d = d["message"]
            calls = []
            for c in d.get("tool_calls") or ():
                f = c.get("function") or {}
                calls.append({"id": c.get("id") or "call_%d" % len(calls), "name": str(f.get("name") or ""),
                              "input": f.get("arguments")})  # a JSON string (or the object itself)
            t = d.get("content") or ""
            if isinstance(t, list):  # content parts (some compatible servers): their text, joined
                t = "".join([b["text"] for b in t if b.get("type") == "text"])
            r = d.get("refusal")
            if r and isinstance(r, str):  # OpenAI: the model refused; its words are the reply
                t = t or r
                s = "refusal"
            texts = [t]
            reasoning = d.get("reasoning_content")
            alt = reasoning or d.get("reasoning")  # used when there is nothing else
        for t in texts + [alt or "", reasoning or ""]:
            if not isinstance(t, str):
                raise TypeError
    except (AttributeError, IndexError, KeyError, TypeError):
        raise LLMError("%s sent a reply without content" % name, 200, True)
    text = ""
    for t in (texts[0] if len(texts) == 1 else "".join(texts), alt):  # no copy of a long single text
        if t:
            text = strip_think(repair_utf16(t) if esc else t)
        if text or calls:
            break
    if tools and not calls and protocol != "anthropic" and text and _may_hold_calls(text):
        textcalls = _textcalls()
        if textcalls.has_markup(text):
            text, calls = textcalls.extract(text, tools)
            if calls:
                s = "tool_use"
    for c in calls:  # arguments as an object: a JSON string is parsed; what is not an object leaves an error
        a = c["input"]
        if not isinstance(a, dict):
            c["input"] = {}
            if a is not None and (not isinstance(a, str) or a.strip()):
                try:
                    a = json.loads(a)
                except (ValueError, TypeError) as e:
                    c["error"] = "arguments were not valid JSON: %s" % str(e)[:80]
                    continue
                if isinstance(a, dict):
                    c["input"] = a
                else:
                    c["error"] = "arguments must be a JSON object"
        if esc:  # an emoji in an argument (a message to send, a line to write) stays one character
            repair_utf16(c["input"])
    texts = d = t = None
    i = _STOP.find(" %s=" % s)
    out = {"text": text, "tool_calls": calls, "usage": (n_in, n_out),
           "stop": _STOP[_STOP.find("=", i) + 1:_STOP.find(" ", i + 1)] if i >= 0 else "tool_use" if calls else "end"}
    if reasoning is not None:
        out["reasoning_content"] = repair_utf16(reasoning) if esc else reasoning
    return out


def _body_error(d, name):
    """The ``LLMError`` for a 200 whose body is an error object (OpenRouter, on the body or
    on its choice; see the module doc), or None. Its message goes to the console (capped,
    valid UTF-8, redacted); the chat gets the code and a known reason; retryable when the error's code is 408, 429 or 5xx."""
    if not isinstance(d, dict):
        return None
    e = d.get("error")
    if e is None:
        c = d.get("choices")
        e = c[0].get("error") if isinstance(c, list) and c and isinstance(c[0], dict) else None
        if e is None:
            return None
    elif d.get("choices") or d.get("content"):
        return None  # an answer after all (a server that adds a null-ish error field)
    code = None
    msg = e
    if isinstance(e, dict):
        code, msg = e.get("code"), e.get("message")
    msg = repair_utf16(msg[:_ERR_MSG_MAX]) if isinstance(msg, str) and msg else "no message"
    try:
        code = int(code)
    except (TypeError, ValueError):
        code = None
    # The server's own words reach the console, redacted, never the chat (issue 14): a known
    # reason does (mimi.guard, loaded for errors only).
    from mimi import guard, log

    log.warn("llm", "%s: %s", name, guard.redact(msg))
    return LLMError("%s reported an error%s%s" % (name, " (%d)" % code if code else "", guard.reason(msg)), code or 200,
                    code in (408, 429) or (code or 0) >= 500)


def _may_hold_calls(text):
    """A coarser look than ``textcalls.has_markup``, without loading it: every form it
    reads opens with ``<`` or ``[``, or the reply starts with ``{``, ``[`` or a fence."""
    return "<" in text or "[" in text or text.lstrip()[:1] in "{`"


def _textcalls():
    """``mimi.llm.textcalls``, imported at the first text reply that may hold calls
    (``_may_hold_calls``) and kept (an import in every such reply cost a search of the
    name pool: issue 17)."""
    if not _tc:
        from mimi.llm import textcalls

        _tc.append(textcalls)
    return _tc[0]


_tc = []


def json_text(write, data):
    """Write ``data`` (str, or bytes-like UTF-8 such as the context's memoryview) as one
    JSON string, escaping ``_SLICE`` bytes at a time so no full copy is made."""
    if isinstance(data, str):
        try:
            if len(data) > _SLICE:  # a long text (a tool result, compaction's transcript): in slices too
                data = seam.as_bytes(data)
        except UnicodeError:  # CPython: a lone surrogate, which json.dumps escapes
            pass
        if isinstance(data, str):
            write(json.dumps(data))
            return
    mv = memoryview(data)
    n = len(mv)
    write('"')
    i = 0
    while i < n:
        j = min(n, i + _SLICE)
        while j < n and (mv[j] & 0xC0) == 0x80:  # do not cut a UTF-8 character
            j -= 1
        b = seam.as_bytes(json.dumps(str(mv[i:j], "utf-8")))
        write(b[1:len(b) - 1])
        i = j
    write('"')


def strip_think(text):
    """Remove ``<think>...</think>`` (reasoning some models put in the content).

    An unclosed ``<think>`` drops the rest; a stray ``</think>`` drops what precedes it
    (servers that strip the opening tag). Returns the text stripped of outer whitespace.
    """
    if "think>" in text:
        out = []
        i = 0
        while True:
            a = text.find("<think>", i)
            out.append(text[i:] if a < 0 else text[i:a])
            b = text.find("</think>", a) if a >= 0 else -1
            if b < 0:
                break
            i = b + 8
        text = "".join(out)
        text = text[text.rfind("</think>") + 8:] if "</think>" in text else text
    return text.strip()


def repair_utf16(s):
    """Join UTF-16 surrogate pairs that MicroPython's ``json.loads`` left as two lone
    surrogates (``\\ud83d\\ude00`` escapes: 3-byte sequences ED A0-AF / ED B0-BF) into
    one 4-byte UTF-8 character; lone ones become U+FFFD. Other text is returned as is.
    A dict or list (tool arguments) is repaired in place, every string value at any depth,
    and returned; other values are returned as they are."""
    if not isinstance(s, str):
        if isinstance(s, (dict, list)):
            for k in s if isinstance(s, dict) else range(len(s)):
                s[k] = repair_utf16(s[k])
        return s
    try:
        b = s.encode()
    except UnicodeError:  # CPython: a lone surrogate; it cannot be sent anyway
        return s.encode("utf-8", "replace").decode()
    i = b.find(b"\xed")
    if i < 0:
        return s
    mv = memoryview(b)
    out = bytearray(mv[:i])
    while i >= 0:
        if b[i + 1] < 0xA0:  # an ordinary character U+D000-U+D7FF
            out.extend(mv[i:i + 3])
        elif b[i + 1] < 0xB0 and i + 5 < len(b) and b[i + 3] == 0xED and b[i + 4] >= 0xB0:  # high, then low
            cp = 0x10000 + ((((b[i + 1] & 0xF) << 6) | (b[i + 2] & 0x3F)) << 10) + (
                ((b[i + 4] & 0xF) << 6) | (b[i + 5] & 0x3F))
            out.extend(bytes((0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F), 0x80 | ((cp >> 6) & 0x3F),
                              0x80 | (cp & 0x3F))))
            i += 3
        else:  # a lone surrogate
            out.extend(b"\xef\xbf\xbd")
        j = b.find(b"\xed", i + 3)
        out.extend(mv[i + 3:] if j < 0 else mv[i + 3:j])
        i = j
    return str(out, "utf-8")
