"""Fake Anthropic Messages and OpenAI Chat Completions servers (the real wire formats).

    from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply
    fake = FakeAnthropic().start()        # base URL for clients: fake.base_url
    fake.script(Reply.tools([("read_file", {"path": "/data/x"})]), Reply.text("done"))
    ... fake.requests[-1]["json"]["messages"] ...
    fake.stop()

``Reply`` describes one answer independent of the protocol; each fake renders it in its
own format:
- ``Reply.text(s, stop="end")``; ``stop`` one of end, max_tokens, refusal, pause_turn,
  tool_use (the protocol's own value also works: ``end_turn``, ``length``, ...);
- ``Reply.tools([(name, input), ...], text="")``: several tool calls in one reply;
  ``input`` a dict, or a str sent as-is as OpenAI's ``arguments`` (malformed JSON);
- ``Reply.error(status, kind=None, message=None, retry_after=None, retry_after_ms=None,
  code=None)``: the API's error body (kind defaults from the status:
  429 rate_limit_error / rate_limit_exceeded, 529 overloaded_error, ...);
- ``Reply.malformed()``: a 200 whose body is not JSON;
- ``Reply.body_error(code, message, on_choice=False)``: a 200 whose body is an error
  object (OpenRouter's shape: ``{"error": {"code", "message", "metadata"}}``, or on the
  choice with ``finish_reason`` "error");
- ``Reply.tools(..., stop="max_tokens")``: the calls cut off by the length limit
  (Anthropic ``stop_reason`` max_tokens, OpenAI ``finish_reason`` length; give OpenAI
  arguments as a cut string);
- ``stop="refusal"``: Anthropic's ``stop_reason`` refusal; OpenAI's ``message.refusal``
  (the text, or a stock sentence) with ``finish_reason`` stop (``content_filter`` is
  there as its own stop);
- options on any reply: ``.slow(seconds)``, ``.chunked()``, ``.thinking(text)``
  (OpenAI: ``reasoning_content``; ``.think_tags()`` puts it in ``<think>`` tags in
  content instead), ``.drop()`` (close without answering), ``usage=(in, out)``.
A client that cannot hold the Python object (firmware under ``micropython``) drives the
fake over HTTP: ``POST /_fake/script`` with a JSON list of ``Reply.to_dict()`` forms,
``GET /_fake/requests`` (what arrived, as JSON), ``POST /_fake/reset``.
Images: Anthropic ``image`` blocks (``source.type`` base64, ``media_type`` one of
image/jpeg, png, gif, webp, ``data`` valid base64) and OpenAI ``image_url`` parts (a
``data:<type>;base64,`` URL) are checked as the APIs check them and kept, decoded, in
``images``; ``vision=False`` (a text-only model) refuses them with the API's 400.
``FakeOpenAI`` also serves ``POST /v1/audio/transcriptions`` (multipart ``file`` and
``model``; answers ``{"text": fake.transcript}``; the uploads are kept in ``audio``).
When the script is empty the fake answers ``Reply.text("ok")`` (or calls ``responder(req)``
if set). ``strict`` (default True) makes the fake refuse, with the API's 400 error, what
the real API refuses: a missing key or version header, a tool result without its tool
call, a tool call left unanswered, roles out of order.

What the real APIs do across a conversation (issue 13), each also settable over HTTP
(``POST /_fake/config`` with a JSON object of these; ``/_fake/reset`` clears them):
- a user message holding ``REFUSAL_TRIGGER`` (Anthropic's documented test string) is
  refused, in every request that still holds it: "attempting to continue without
  resetting will result in continued refusals" (Anthropic, "Streaming refusals");
- ``context_tokens``: a request over that many tokens (bytes / 4) gets the provider's
  context-window error: Anthropic 400 "prompt is too long: N tokens > M maximum",
  OpenAI 400 ``context_length_exceeded``;
- ``thinking`` (OpenAI fake: DeepSeek's thinking mode): every answer carries
  ``reasoning_content``, and a request whose assistant message with ``tool_calls`` lacks
  it gets DeepSeek's 400 ("The reasoning_content in the thinking mode must be passed
  back to the API.", https://api-docs.deepseek.com/guides/thinking_mode).

Sources: https://docs.anthropic.com/en/api/messages, https://docs.anthropic.com/en/api/errors,
https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals,
https://platform.openai.com/docs/api-reference/chat/create,
https://platform.openai.com/docs/guides/error-codes, https://openrouter.ai/docs/api-reference/errors.
"""
import json
import os
import time

from host_sim.fakes import FakeServer, Out


class Reply:
    def __init__(self, kind, **kw):
        self.kind = kind
        self.text_ = kw.get("text", "")
        self.stop = kw.get("stop")
        self.calls = kw.get("calls", [])
        self.status = kw.get("status", 200)
        self.err_kind = kw.get("err_kind")
        self.message = kw.get("message")
        self.code = kw.get("code")
        self.retry_after = kw.get("retry_after")
        self.retry_after_ms = kw.get("retry_after_ms")
        self.usage = kw.get("usage")
        self.delay_s = 0
        self.chunked_ = False
        self.drop_ = False
        self.reasoning = None
        self.reasoning_in_tags = False
        self.on_choice = kw.get("on_choice", False)

    # -- kinds --------------------------------------------------------------------------

    @classmethod
    def text(cls, text, stop="end", usage=None):
        return cls("text", text=text, stop=stop, usage=usage)

    @classmethod
    def tools(cls, calls, text="", usage=None, stop="tool_use"):
        return cls("tools", calls=list(calls), text=text, stop=stop, usage=usage)

    @classmethod
    def error(cls, status, kind=None, message=None, retry_after=None, retry_after_ms=None, code=None):
        return cls("error", status=status, err_kind=kind, message=message, retry_after=retry_after,
                   retry_after_ms=retry_after_ms, code=code)

    @classmethod
    def malformed(cls):
        return cls("malformed")

    @classmethod
    def body_error(cls, code, message, on_choice=False):
        return cls("body_error", code=code, message=message, on_choice=on_choice)

    # -- options --------------------------------------------------------------------------

    def slow(self, seconds):
        self.delay_s = seconds
        return self

    def chunked(self):
        self.chunked_ = True
        return self

    def drop(self):
        self.drop_ = True
        return self

    def thinking(self, text):
        self.reasoning = text
        return self

    def think_tags(self, text):
        self.reasoning = text
        self.reasoning_in_tags = True
        return self

    # -- as JSON (the control API) ----------------------------------------------------------

    _FIELDS = ("kind", "text_", "stop", "calls", "status", "err_kind", "message", "code", "retry_after",
               "retry_after_ms", "usage", "delay_s", "chunked_", "drop_", "reasoning", "reasoning_in_tags", "on_choice")

    def to_dict(self):
        return {k.rstrip("_"): getattr(self, k) for k in self._FIELDS}

    @classmethod
    def from_dict(cls, d):
        r = cls(d.get("kind", "text"))
        for k in cls._FIELDS:
            if k.rstrip("_") in d:
                setattr(r, k, d[k.rstrip("_")])
        r.calls = [tuple(c) for c in (r.calls or [])]
        if r.usage:
            r.usage = tuple(r.usage)
        return r


def _rid(prefix):
    return prefix + os.urandom(12).hex()


def _approx_tokens(b):
    return max(1, len(b) // 4)


# Anthropic's documented test prompt that makes the API refuse ("Streaming refusals").
REFUSAL_TRIGGER = "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL_1FAEFB6177B4672DEE07F9D3AFC62588CCD2631EDCF22E8CCC1FB35B501C9C86"
_SETTABLE = ("context_tokens", "thinking")


def _user_texts(msgs):
    """Every text a user message of the request holds (string content or text blocks)."""
    for m in msgs if isinstance(msgs, list) else ():
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            for b in [c] if isinstance(c, str) else c if isinstance(c, list) else ():
                if isinstance(b, str):
                    yield b
                elif isinstance(b, dict) and isinstance(b.get("text"), str):
                    yield b["text"]


class _FakeLLM(FakeServer):
    def __init__(self, api_key=None, strict=True, model=None, vision=True):
        super().__init__()
        self.api_key = api_key  # when set, other keys get 401
        self.strict = strict
        self.model = model
        self.vision = vision
        self.images = []  # (media type, decoded bytes) of every image that arrived
        self.audio = []  # (model, filename, content type, bytes) of every transcription upload
        self.transcript = "this is the fake transcript"
        self._script = []
        self.responder = None
        self.context_tokens = None  # see the module doc
        self.thinking = False

    def script(self, *replies):
        """Queue replies for the next requests (in order); returns self."""
        with self.lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self):
        """Replies still queued."""
        return len(self._script)

    def _next(self, req):
        with self.lock:
            if self._script:
                return self._script.pop(0)
        if self.responder:
            return self.responder(req)
        return Reply.text("ok")

    def reset(self):
        with self.lock:
            self._script = []
            self.requests = []
            self.context_tokens = None
            self.thinking = False

    def _control(self, req):
        if req["path"] == "/_fake/script":
            self.script(*[Reply.from_dict(d) for d in (req["json"] or [])])
            return Out(200, {"queued": self.pending})
        if req["path"] == "/_fake/requests":
            keep = ("method", "path", "headers", "json", "time")
            # Raw UTF-8, not \u escapes: MicroPython's json.loads splits escaped emoji
            # into lone surrogates, and the firmware-side tests compare text exactly.
            data = [{k: r[k] for k in keep} for r in self.requests]
            return Out(200, json.dumps(data, ensure_ascii=False).encode())
        if req["path"] == "/_fake/reset":
            self.reset()
            return Out(200, {"ok": True})
        if req["path"] == "/_fake/config":
            for k, v in (req["json"] or {}).items():
                if k not in _SETTABLE:
                    return Out(400, {"error": "not settable: %s" % k})
                setattr(self, k, v)
            return Out(200, {"ok": True})
        return Out(404, {"error": "no such control path"})

    def handle(self, req):
        if req["path"].startswith("/_fake/"):
            return self._control(req)
        if req["method"] != "POST" or req["path"] != self.PATH:
            return self._error_out(Reply.error(404, message="Not found: %s %s" % (req["method"], req["path"])))
        problem = self.check(req)
        if not problem and self.strict and self.context_tokens and _approx_tokens(req["body"]) > self.context_tokens:
            problem = self.too_long(_approx_tokens(req["body"]), self.context_tokens)
        if problem:
            status, msg = problem[:2]
            return self._error_out(Reply.error(status, message=msg, code=problem[2] if len(problem) > 2 else None))
        if self.strict and any(REFUSAL_TRIGGER in t for t in _user_texts((req["json"] or {}).get("messages"))):
            r = Reply.text("", stop="refusal")  # the script waits: this request is refused whatever it says
        else:
            r = self._next(req)
        if r.kind == "error":
            out = self._error_out(r)
        elif r.kind == "malformed":
            out = Out(200, b'{"id": "x", "content": [ {"type": "text", "text": "unterminated')
        elif r.kind == "body_error":
            e = {"code": r.code, "message": r.message, "metadata": {"provider_name": "FakeProvider"}}
            out = Out(200, {"id": _rid("gen-"), "object": "chat.completion", "model": "fake/model", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "error",
                 "error": e}]} if r.on_choice else {"error": e, "user_id": "user_fake"})
        else:
            out = Out(200, self.render(r, req))
        out.delay_s = r.delay_s
        out.chunked = r.chunked_
        out.drop = r.drop_
        out.headers.setdefault("request-id", _rid("req_"))
        return out

    def _error_out(self, r):
        headers = {}
        if r.retry_after is not None:
            headers["retry-after"] = str(r.retry_after)
        if r.retry_after_ms is not None:
            headers["retry-after-ms"] = str(r.retry_after_ms)
        return Out(r.status, self.error_body(r), headers)

    def _usage(self, r, req):
        if r.usage:
            return r.usage
        n_out = _approx_tokens((r.text_ or "").encode()) + 20 * len(r.calls)
        return (_approx_tokens(req["body"]), n_out)


# -- Anthropic Messages ----------------------------------------------------------------

_A_STOP = {"end": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens",
           "refusal": "refusal", "pause_turn": "pause_turn"}
_A_ERR = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 408: "timeout_error", 413: "request_too_large",
          429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


class FakeAnthropic(_FakeLLM):
    """``POST /v1/messages``; clients use ``base_url`` = ``fake.base_url`` (no ``/v1``)."""

    PATH = "/v1/messages"

    @property
    def base_url(self):
        return self.url

    def check(self, req):
        h = req["headers"]
        # The documented header is x-api-key; the SDK (2.x) sends "Authorization: Bearer".
        key = h.get("x-api-key")
        if key is None and h.get("authorization", "").startswith("Bearer "):
            key = h["authorization"][7:]
        if not key:
            return 401, "x-api-key header is required"
        if self.api_key and key != self.api_key:
            return 401, "invalid x-api-key"
        if not self.strict:
            return None
        if "anthropic-version" not in h:
            return 400, "anthropic-version: header is required"
        b = req["json"]
        if not isinstance(b, dict):
            return 400, "request body is not valid JSON"
        for k in ("model", "max_tokens", "messages"):
            if k not in b:
                return 400, "%s: Field required" % k
        if not isinstance(b["max_tokens"], int) or b["max_tokens"] < 1:
            return 400, "max_tokens: must be a positive integer"
        sys_ = b.get("system")
        if sys_ is not None and not isinstance(sys_, (str, list)):
            return 400, "system: Input should be a valid string or list"
        for t in b.get("tools") or ():
            if not isinstance(t, dict) or "name" not in t or "input_schema" not in t:
                return 400, "tools: each tool needs name and input_schema"
        images = []
        problem = _check_anthropic_messages(b["messages"], images)
        if not problem and images and not self.vision:
            problem = 400, "This model does not support image input."
        if not problem:
            with self.lock:
                self.images.extend(images)
        return problem

    def too_long(self, n, limit):
        return 400, "prompt is too long: %d tokens > %d maximum" % (n, limit)

    def render(self, r, req):
        content = []
        if r.text_:
            content.append({"type": "text", "text": r.text_})
        for name, inp in r.calls:
            content.append({"type": "tool_use", "id": _rid("toolu_01"), "name": name,
                            "input": inp if isinstance(inp, dict) else {}})
        stop = _A_STOP.get(r.stop, r.stop)
        u = self._usage(r, req)
        model = (req["json"] or {}).get("model") or self.model or "claude-fake"
        return {"id": _rid("msg_01"), "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": u[0], "output_tokens": u[1]}}

    def error_body(self, r):
        kind = r.err_kind or _A_ERR.get(r.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": r.message or kind.replace("_", " ")},
                "request_id": _rid("req_")}


def _combine(msgs):
    """The API combines consecutive turns of one role into one (Messages API docs)."""
    out = []
    for m in msgs:
        if not isinstance(m, dict):
            return None
        c = m.get("content")
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else c
        if out and out[-1]["role"] == m.get("role") and isinstance(blocks, list):
            out[-1]["content"] = out[-1]["content"] + blocks
        else:
            out.append({"role": m.get("role"), "content": blocks})
    return out


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _image(images, src, where):
    """Check one image source as the APIs do ({"type": "base64", "media_type", "data"});
    keep it, decoded, in ``images``; return the problem or None."""
    import base64
    import binascii

    if not isinstance(src, dict) or src.get("type") not in ("base64", "url"):
        return "%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', " \
               "'url'" % (where, (src or {}).get("type") if isinstance(src, dict) else None)
    if src.get("type") == "url":
        return "%s.url: the fake cannot fetch URLs" % where
    if src.get("media_type") not in _IMAGE_TYPES:
        return "%s.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'" % where
    try:
        data = base64.b64decode(src.get("data") or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        return "%s.data: The image data is not valid base64" % where
    if not data:
        return "%s.data: The image data is empty" % where
    images.append((src["media_type"], data))
    return None


def _check_anthropic_messages(msgs, images=None):
    images = [] if images is None else images
    if not isinstance(msgs, list) or not msgs:
        return 400, "messages: at least one message is required"
    msgs = _combine(msgs)
    if msgs is None:
        return 400, "messages: each message must be an object"
    if msgs[0].get("role") != "user":
        return 400, "messages: first message must use the \"user\" role"
    open_ids = []
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("user", "assistant"):
            return 400, "messages.%d.role: must be user or assistant" % i
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return 400, "messages.%d.content: must be a string or a list of blocks" % i
        if role == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            for tid in results:
                if tid not in open_ids:
                    return 400, ("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. "
                                 "Each `tool_result` block must have a corresponding `tool_use` block in the "
                                 "previous message." % (i, tid))
            missing = [t for t in open_ids if t not in results]
            if missing:
                return 400, ("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately "
                             "after: %s" % (i - 1, ", ".join(missing)))
            open_ids = []
        else:
            if open_ids:
                return 400, "messages.%d: tool_use without tool_result" % (i - 1)
            ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if len(set(ids)) != len(ids):
                return 400, "messages.%d: `tool_use` ids must be unique" % i
            for b in blocks:
                if b.get("type") == "tool_use" and not isinstance(b.get("input"), dict):
                    return 400, "messages.%d: tool_use.input must be an object" % i
            open_ids = ids
        for j, b in enumerate(blocks):
            if b.get("type") == "text" and not b.get("text"):
                if not (role == "assistant" and i == len(msgs) - 1):
                    return 400, "messages.%d: text content blocks must be non-empty" % i
            if b.get("type") == "image":
                problem = _image(images, b.get("source"), "messages.%d.content.%d.image.source" % (i, j))
                if problem:
                    return 400, problem
    if open_ids:
        return 400, "messages: the last assistant message has tool_use blocks without results"
    return None


# -- OpenAI Chat Completions -----------------------------------------------------------

_O_STOP = {"end": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "stop",
           "pause_turn": "stop"}
_O_ERR = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
          404: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


class FakeOpenAI(_FakeLLM):
    """``POST /v1/chat/completions``; clients use ``base_url`` = ``fake.base_url`` (with ``/v1``)."""

    PATH = "/v1/chat/completions"

    @property
    def base_url(self):
        return self.url + "/v1"

    def check(self, req):
        auth = req["headers"].get("authorization", "")
        if not auth.startswith("Bearer ") or len(auth) < 8:
            return 401, "You didn't provide an API key."
        if self.api_key and auth[7:] != self.api_key:
            return 401, "Incorrect API key provided."
        if not self.strict:
            return None
        b = req["json"]
        if not isinstance(b, dict):
            return 400, "We could not parse the JSON body of your request."
        for k in ("model", "messages"):
            if k not in b:
                return 400, "Missing required parameter: '%s'." % k
        for t in b.get("tools") or ():
            f = t.get("function") if isinstance(t, dict) else None
            if t.get("type") != "function" or not isinstance(f, dict) or "name" not in f:
                return 400, "Invalid 'tools': each needs type 'function' and function.name."
        images = []
        problem = _check_openai_messages(b["messages"], images)
        if not problem and images and not self.vision:  # what OpenAI says for a text-only model
            problem = 400, "Invalid content type. image_url is only supported by certain models."
        if not problem and self.thinking:
            for m in b["messages"]:
                if m.get("role") == "assistant" and m.get("tool_calls") and "reasoning_content" not in m:
                    return 400, "The reasoning_content in the thinking mode must be passed back to the API.", \
                        "invalid_request_error"
        if not problem:
            with self.lock:
                self.images.extend(images)
        return problem

    def too_long(self, n, limit):
        return 400, ("This model's maximum context length is %d tokens. However, your messages resulted in %d "
                     "tokens. Please reduce the length of the messages." % (limit, n)), "context_length_exceeded"
    TRANSCRIBE = "/v1/audio/transcriptions"

    def handle(self, req):
        if req["path"] != self.TRANSCRIBE:
            return super().handle(req)
        auth = req["headers"].get("authorization", "")
        if not auth.startswith("Bearer ") or self.api_key and auth[7:] != self.api_key:
            return self._error_out(Reply.error(401, message="Incorrect API key provided."))
        ctype = req["headers"].get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            return self._error_out(Reply.error(400, message="Invalid Content-Type header (%s), expected "
                                                            "multipart/form-data." % ctype))
        from email.parser import BytesParser
        from email.policy import HTTP

        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + req["body"])
        fields = {}
        upload = None
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if part.get_filename() is not None:
                upload = (part.get_filename(), part.get_content_type(), part.get_payload(decode=True))
            elif name:
                fields[name] = part.get_payload(decode=True).decode()
        if upload is None:
            return self._error_out(Reply.error(400, message="Missing required parameter: 'file'."))
        if not fields.get("model"):
            return self._error_out(Reply.error(400, message="Missing required parameter: 'model'."))
        with self.lock:
            self.audio.append((fields["model"], upload[0], upload[1], upload[2]))
        return Out(200, {"text": self.transcript, "usage": {"type": "duration", "seconds": 3}})

    def render(self, r, req):
        msg = {"role": "assistant", "content": r.text_ or None, "refusal": None}
        if r.stop == "refusal":  # how OpenAI says it: the refusal field, finish_reason "stop"
            msg["content"] = None
            msg["refusal"] = r.text_ or "I'm sorry, but I can't help with that."
        reasoning = r.reasoning if r.reasoning is not None else "Let me think." if self.thinking else None
        if reasoning is not None:
            if r.reasoning_in_tags:
                msg["content"] = "<think>%s</think>%s" % (reasoning, r.text_ or "")
            else:
                msg["reasoning_content"] = reasoning
        if r.calls:
            msg["tool_calls"] = [{"id": _rid("call_"), "type": "function",
                                  "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
                                 for n, a in r.calls]
        u = self._usage(r, req)
        model = (req["json"] or {}).get("model") or self.model or "gpt-fake"
        return {"id": _rid("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                "model": model, "system_fingerprint": None,
                "choices": [{"index": 0, "message": msg, "logprobs": None,
                             "finish_reason": _O_STOP.get(r.stop, r.stop)}],
                "usage": {"prompt_tokens": u[0], "completion_tokens": u[1], "total_tokens": u[0] + u[1]}}

    def error_body(self, r):
        kind = r.err_kind or _O_ERR.get(r.status, "server_error")
        return {"error": {"message": r.message or kind.replace("_", " "), "type": kind, "param": None,
                          "code": r.code if r.code is not None else (kind if r.status == 429 else None)}}


def _check_openai_messages(msgs, images=None):
    images = [] if images is None else images
    if not isinstance(msgs, list) or not msgs:
        return 400, "Invalid 'messages': empty array."
    open_ids = []
    for i, m in enumerate(msgs):
        role = m.get("role")
        parts = m.get("content") if isinstance(m.get("content"), list) else ()
        for j, part in enumerate(parts):
            t = part.get("type") if isinstance(part, dict) else None
            if t == "image_url" and role == "user":
                url = (part.get("image_url") or {}).get("url") or ""
                head, _, data = url.partition(",")
                if not head.startswith("data:") or not head.endswith(";base64"):
                    return 400, ("Invalid 'messages[%d].content[%d].image_url.url': the fake takes data URLs only."
                                 % (i, j))
                problem = _image(images, {"type": "base64", "media_type": head[5:-7], "data": data},
                                 "messages[%d].content[%d].image_url" % (i, j))
                if problem:
                    return 400, "Invalid image: " + problem
            elif t != "text":
                return 400, ("Invalid value: '%s'. Supported values are: 'text', 'image_url', 'input_audio', "
                             "'refusal', 'audio', and 'file'." % t)
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return 400, "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool'." % role
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in open_ids:
                return 400, ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                             "message with 'tool_calls'.")
            open_ids.remove(tid)
            continue
        if open_ids:
            return 400, ("An assistant message with 'tool_calls' must be followed by tool messages responding "
                         "to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s"
                         % ", ".join(open_ids))
        if role == "assistant":
            calls = m.get("tool_calls") or []
            for c in calls:
                f = c.get("function") or {}
                if c.get("type") != "function" or not isinstance(f.get("arguments"), str):
                    return 400, "Invalid 'messages[%d].tool_calls': arguments must be a string." % i
            open_ids = [c.get("id") for c in calls]
            if len(set(open_ids)) != len(open_ids):
                return 400, "Duplicate tool_call ids in messages[%d]." % i
            if not calls and m.get("content") is None:
                return 400, "Invalid 'messages[%d]': assistant content or tool_calls required." % i
        elif m.get("content") is None:
            return 400, "Invalid 'messages[%d].content': expected a string, got null." % i
    if open_ids:
        return 400, "The following tool_call_ids did not have response messages: %s" % ", ".join(open_ids)
    return None
