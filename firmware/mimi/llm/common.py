"""What both wire protocols share: the provider, its retries, the error texts.

``Provider(protocol, name, base_url, api_key, model, needs_key)``: ``protocol`` is
"anthropic" or "openai"; ``mimi.llm.wire`` writes and reads their formats, the rest is
here. The request body is streamed through ``http``'s writer (never built as one string);
the reply is read into the one ``bytearray`` of ``mimi.llm.init`` and parsed in place.
Retry policy, from the official SDKs (anthropic-sdk-python and openai-python,
``_base_client.py``: ``DEFAULT_MAX_RETRIES = 2``, ``_should_retry``,
``_calculate_retry_timeout``): at most 3 attempts; retry connection errors, 408, 409,
429, 5xx (529 included) unless ``x-should-retry: false``; wait ``retry-after-ms`` /
``retry-after`` when given, else 0.5 s * 2^n capped at 8 s with up to 25 % jitter. Here a
``retry-after`` over 60 s is not waited for: the user is told to try later instead. Not
retried: 400, 401, 403, 404, 413 and 429 ``insufficient_quota``. A call's attempts and
waits share ``_LLM_ANSWER_MS``: a server that takes the request and never answers is
told to the user as silent within 2 minutes, not after three full read timeouts. The
requests go over one kept connection (``http.Keep``), across the rounds of a tool loop
and across turns while the server keeps it open.
"""
import os

from micropython import const

from mimi import config, log, seam
from mimi.llm import LLMError, init, pick, wire  # noqa: F401 - LLMError is also used as common.LLMError
from mimi.net import http

# Tunables (config.py holds those shared by several modules and the settings).
_LLM_ANSWER_MS = const(110000)  # one chat() call: every attempt and wait, so the user hears within 2 min
_LLM_TRY_MIN_MS = const(5000)  # the least time left worth another attempt
_LLM_MAX_ATTEMPTS = const(3)  # the SDKs' DEFAULT_MAX_RETRIES = 2, plus the first try
_LLM_RETRY_BASE_MS = const(500)  # SDKs' INITIAL_RETRY_DELAY
_LLM_RETRY_MAX_MS = const(8000)  # SDKs' MAX_RETRY_DELAY
_LLM_RETRY_AFTER_MAX_S = const(60)  # a longer retry-after is not waited for
_LLM_ANTHROPIC_VERSION = const("2023-06-01")

_TAG = const("llm")
_ERR_MSG_MAX = const(160)  # characters of the API's own error message the console gets
_COLLECT_OVER = const(8192)  # reply bytes above which the heap is collected before parsing
_WAIT_MAX_MS = const(86400000)  # a server's retry-after beyond a day is taken as a day
_MSG = const("|400 the request was refused|401 the API key was rejected|403 the API key lacks permission"
             "|404 not found|413 the request was too large|429 rate limited by %s|529 %s is overloaded"
             "|5xx %s had a server error|other unexpected answer from %s|quota the %s account has no credit left"
             "|json %s sent invalid JSON|nokey no API key is set for %s|tls no secure connection: %s"
             "|reach could not reach %s (%s)|wait %s; try again later (in %d s)"
             "|mute %s did not answer within %d s"
             "|big the reply was larger than the %d KB I can hold|")
_sleep_ms = seam.wait_ms  # tests patch this
_keep = None  # the LLM's kept connection (http.Keep), made on the first call


class Provider:
    """``chat(system, messages, tools, max_tokens) -> reply`` over one wire protocol;
    ``name``, ``model``, ``base_url``, ``protocol`` ("anthropic" or "openai"); ``url`` and
    ``headers`` (with the key) of its requests."""

    def __init__(self, protocol, name, base_url, api_key, model, needs_key=True):
        self.protocol = protocol
        self.name = name
        self.base_url = base_url = base_url.rstrip("/")
        self.model = model
        self._key = api_key if api_key or not needs_key else None  # None: chat() says it is missing
        h = self.headers = {"content-type": "application/json"}
        if protocol == "anthropic":
            # the SDK's convention is the host without /v1; one given with it is meant the same
            self.url = (base_url[:-3] if base_url[-3:] == "/v1" else base_url) + "/v1/messages"
            h["x-api-key"] = api_key
            h["anthropic-version"] = _LLM_ANTHROPIC_VERSION
        else:
            self.url = base_url + "/chat/completions"
            if api_key:
                h["authorization"] = "Bearer " + api_key

    def chat(self, system, messages, tools=None, max_tokens=None):
        """One request, retried as the module says; returns the reply dict (docs/internals.md,
        "LLM"). ``system``: str or bytes-like (the context's memoryview); ``messages``:
        internal form; ``tools``: ``registry.Tool`` list. Raises ``LLMError``. The reply is
        parsed from the shared buffer, which the next call reuses.
        """
        name = self.name
        if self._key is None:
            raise LLMError(pick(_MSG, "nokey") % name)
        global _keep
        if _keep is None:
            _keep = http.Keep()
        buf = init()
        t0 = seam.ticks_ms()
        for attempt in range(_LLM_MAX_ATTEMPTS):
            h = None
            left = _LLM_ANSWER_MS - seam.ticks_diff(seam.ticks_ms(), t0)
            args = self, system, messages, tools, max_tokens or config.LLM_MAX_TOKENS
            n = wire.into(buf, *args)  # the body in the reply buffer, which the answer then overwrites
            try:
                r = http.request("POST", self.url, self.headers, memoryview(buf)[:n] if n is not None else (
                    lambda w: wire.body(w, *args)), min(config.LLM_TIMEOUT_MS, left), buf,
                    deadline_ms=left, keep=_keep)
            except OSError as e:
                s = str(e)
                host = http.parse_url(self.url)[1]
                if isinstance(e, http.NoAnswer):  # connected and sent: the server is there, silent
                    raise LLMError(pick(_MSG, "mute") % (host, (seam.ticks_diff(seam.ticks_ms(), t0) + 999) // 1000),
                                   None, True)
                err = LLMError(s[:160] if s.startswith("proxy ") else  # it names the proxy and the cause
                               pick(_MSG, "reach") % (host, "timed out" if seam.timed_out(e) or
                                                      "timed out" in s else s[:80] or type(e).__name__), None, True)
                if isinstance(e, seam.TLSError):
                    raise LLMError(pick(_MSG, "tls") % s)
            else:
                if r.status == 200:
                    if r.truncated:
                        raise LLMError(pick(_MSG, "big") % (len(buf) // 1024), 200)
                    n = len(r.body)
                    r = None
                    if n > _COLLECT_OVER:  # free garbage first: parsing needs a run as long as the text
                        seam.collect()
                    try:
                        d = seam.loads_view(memoryview(buf)[:n])
                    except ValueError:
                        d = None
                    if d is None:
                        err = LLMError(pick(_MSG, "json") % name, 200, True)
                    else:
                        try:
                            return wire.parse(d, self.protocol, name, _utf16_escapes(buf, n),
                                              [t.name for t in tools] if tools else None)
                        except LLMError as e:  # an error object in a 200 (OpenRouter): retried by its code
                            if e.status == 200 or not e.retryable:
                                raise
                            err = e
                        d = None
                else:
                    err = _status_error(r, name)
                    if not err.retryable:
                        raise err
                    h = r.headers
            wait = _wait_ms(attempt, h)
            if wait > _LLM_RETRY_AFTER_MAX_S * 1000:
                raise LLMError(pick(_MSG, "wait") % (err.user_message, wait // 1000),
                               err.status, True)
            if attempt + 1 < _LLM_MAX_ATTEMPTS and \
                    seam.ticks_diff(seam.ticks_ms(), t0) + wait > _LLM_ANSWER_MS - _LLM_TRY_MIN_MS:
                raise err  # no time left for another try
            log.warn(_TAG, "%s #%d: %s", name, attempt + 1, err.user_message)
            if attempt + 1 < _LLM_MAX_ATTEMPTS:
                _sleep_ms(wait)
        raise err


def _wait_ms(attempt, headers=None):
    """The wait before retry ``attempt`` (0-based): the server's ``retry-after-ms`` or
    ``retry-after`` (seconds) when it gave one, else the SDKs' backoff: 0.5 s * 2^n, at
    most 8 s, less 0-25 % jitter. The server's value is kept within 0 and a day (the
    caller does not wait over ``_LLM_RETRY_AFTER_MAX_S``: it tells the user); ``inf`` or
    ``nan`` count as absent."""
    for k, scale in (("retry-after-ms", 1), ("retry-after", 1000)):
        try:
            v = float(headers[k]) * scale
        except (KeyError, TypeError, ValueError):  # absent, no headers, or an HTTP date: the backoff
            continue
        if v - v == 0:  # finite
            return int(min(max(v, 0), _WAIT_MAX_MS))
    ms = min(_LLM_RETRY_BASE_MS << attempt, _LLM_RETRY_MAX_MS)
    return ms - ms * os.urandom(1)[0] // 1024


def _status_error(r, name):
    """Map an error response to an ``LLMError`` (reads the error body from the buffer)."""
    status = r.status
    kind = code = msg = None
    try:
        e = r.json().get("error")
        if isinstance(e, dict):
            kind, code, msg = e.get("type"), e.get("code"), e.get("message")
        else:
            msg = e
    except (ValueError, AttributeError):
        pass
    quota = "insufficient_quota" in (kind, code)
    hint = r.headers.get("x-should-retry")
    what = pick(_MSG, "quota" if quota else 529 if kind == "overloaded_error" else status) or pick(
        _MSG, "5xx" if status >= 500 else "other")
    what = "%s (%d)" % (what.replace("%s", name), status)
    if status == 404:
        what += ": check the model and base URL"
    # The server's own words never reach a chat (a proxy may echo the key): a known reason
    # does (mimi.guard, loaded for errors only), and the console gets the words, redacted.
    from mimi import guard

    what += guard.reason("%s %s %s" % (kind, code, msg if isinstance(msg, str) else ""))
    if msg:
        log.warn(_TAG, "%s %d: %s", name, status, guard.redact(wire.repair_utf16(str(msg)[:_ERR_MSG_MAX])))
    err = LLMError(what, status, hint == "true" if hint in ("true", "false") else
                   (status in (408, 409, 429) or status >= 500) and not quota)
    # A request over the model's context window, by the words each server uses: OpenAI and
    # DeepSeek code context_length_exceeded ("maximum context length"), Anthropic "prompt is
    # too long" / "context limit", llama.cpp exceed_context_size_error, vLLM and others.
    m = msg.lower() if status == 400 and isinstance(msg, str) else ""
    err.too_long = status == 413 or "context_length_exceeded" in (kind, code) or kind == "exceed_context_size_error" \
        or "too long" in m or "context" in m and ("length" in m or "window" in m or "limit" in m or "size" in m) \
        or "too many tokens" in m
    return err


def _utf16_escapes(buf, n):
    """True when the raw reply holds a ``\\uD800``-``\\uDBFF`` escape (a surrogate pair,
    which MicroPython's ``json.loads`` splits); only then is ``wire.repair_utf16`` needed."""
    i = buf.find(b"\\u", 0, n)
    while 0 <= i < n - 3:
        if buf[i + 2] in b"dD" and buf[i + 3] in b"89abAB":
            return True
        i = buf.find(b"\\u", i + 2, n)
    return False
