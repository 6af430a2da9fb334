"""What both wire protocols share: the provider, JSON streaming, retries, error texts.

``Provider(protocol, name, base_url, api_key, model, needs_key)``: ``protocol`` names the
module that knows the wire format (``mimi.llm.anthropic`` or ``mimi.llm.openai``: each has
``body(write, provider, system, messages, tools, max_tokens)`` and ``parse(reply, name,
escapes)``); the rest is here. Request bodies are written piece by piece through
``http``'s writer (never built as one string): ``json_text`` escapes a large UTF-8
buffer (the 16 KB system prompt) a slice at a time. Replies are read into the one
``bytearray`` of ``mimi.llm.init`` and parsed in place. Retry policy, from the official
SDKs (anthropic-sdk-python and openai-python, ``_base_client.py``:
``DEFAULT_MAX_RETRIES = 2``, ``_should_retry``, ``_calculate_retry_timeout``): at most 3
attempts; retry connection errors, 408, 409, 429, 5xx (529 included) unless
``x-should-retry: false``; wait ``retry-after-ms`` / ``retry-after`` when given, else
0.5 s * 2^n capped at 8 s with up to 25 % jitter. Here a ``retry-after`` over 60 s is not
waited for: the user is told to try later instead. Not retried: 400, 401, 403, 404, 413
and 429 ``insufficient_quota``.
"""
import json
import os

from micropython import const

from mimi import config, log, seam
from mimi.llm import LLMError, init  # noqa: F401 - LLMError is also used as common.LLMError
from mimi.net import http

TAG = "llm"
_SLICE = const(1024)  # bytes of the system prompt escaped per json.dumps call
_ERR_MSG_MAX = const(160)  # characters of the API's own error message shown to the user
_COLLECT_OVER = const(8192)  # reply bytes above which the heap is collected before parsing
_sleep_ms = seam.sleep_ms  # tests patch this


class Provider:
    """``chat(system, messages, tools, max_tokens) -> reply`` over one wire protocol;
    ``name``, ``model``, ``base_url``, ``protocol`` ("anthropic" or "openai")."""

    def __init__(self, protocol, name, base_url, api_key, model, needs_key=True):
        self.protocol = protocol
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._key = api_key
        self._needs_key = needs_key
        self._wire = __import__("mimi.llm." + protocol, None, None, ("body",))

    def url(self):
        return self.base_url + ("/v1/messages" if self.protocol == "anthropic" else "/chat/completions")

    def headers(self):
        h = {"content-type": "application/json"}
        if self.protocol == "anthropic":
            h["x-api-key"] = self._key
            h["anthropic-version"] = config.LLM_ANTHROPIC_VERSION
        elif self._key:
            h["authorization"] = "Bearer " + self._key
        return h

    def writer(self, system, messages, tools, max_tokens):
        """The body writer (``http`` calls it twice: count, then send)."""
        return lambda w: self._wire.body(w, self, system, messages, tools, max_tokens)

    def chat(self, system, messages, tools=None, max_tokens=None):
        """One request, retried as the module says; returns the reply dict (docs/internals.md,
        "LLM"). ``system``: str or bytes-like (the context's memoryview); ``messages``:
        internal form; ``tools``: ``registry.Tool`` list. Raises ``LLMError``. The reply is
        parsed from the shared buffer, which the next call reuses.
        """
        name = self.name
        if self._needs_key and not self._key:
            raise LLMError("no API key is set for %s" % name)
        url = self.url()
        writer = self.writer(system, messages, tools, max_tokens or config.LLM_MAX_TOKENS)
        buf = init()
        for attempt in range(config.LLM_MAX_ATTEMPTS):
            try:
                r = http.request("POST", url, self.headers(), writer, config.LLM_TIMEOUT_MS, buf,
                                 deadline_ms=config.LLM_DEADLINE_MS)
            except seam.TLSError as e:
                raise LLMError("could not open a secure connection to %s: %s" % (http.parse_url(url)[1], e))
            except OSError as e:
                c = e.args[0] if e.args else None
                s = str(e)
                err = LLMError("could not reach %s (%s)" % (http.parse_url(url)[1], (
                    "timed out" if c == 110 or "timed out" in s else "connection refused" if c == 111 else
                    "connection reset" if c == 104 else s[:60] or "network error")), None, True)
                wait = _wait_ms(attempt)
            else:
                if r.status == 200:
                    if r.truncated:
                        raise LLMError("the reply was larger than the %d KB the device can hold; ask for a shorter "
                                       "answer" % (len(buf) // 1024), 200)
                    n = len(r.body)
                    r = None
                    if n > _COLLECT_OVER:  # free garbage first: parsing needs a run as long as the text
                        seam.collect()
                    try:
                        d = seam.loads_view(memoryview(buf)[:n])
                    except ValueError:
                        d = None
                    if d is not None:
                        return self._wire.parse(d, name, _utf16_escapes(buf, n))
                    err = LLMError("%s sent a reply that is not valid JSON" % name, 200, True)
                    wait = _wait_ms(attempt)
                else:
                    err = _status_error(r, name)
                    if not err.retryable:
                        raise err
                    wait = _wait_ms(attempt, r.headers)
                    if wait > config.LLM_RETRY_AFTER_MAX_S * 1000:
                        raise LLMError("%s; it asks to wait %d s, try again later" % (err.user_message, wait // 1000),
                                       r.status, True)
            log.warn(TAG, "%s attempt %d: %s", name, attempt + 1, err.user_message)
            if attempt + 1 < config.LLM_MAX_ATTEMPTS:
                _sleep_ms(wait)
        raise err


def _wait_ms(attempt, headers=None):
    """The wait before retry ``attempt`` (0-based): the server's ``retry-after-ms`` or
    ``retry-after`` (seconds) when it gave one, else the SDKs' backoff: 0.5 s * 2^n, at
    most 8 s, less 0-25 % jitter."""
    for k, scale in (("retry-after-ms", 1), ("retry-after", 1000)):
        v = headers.get(k) if headers else None
        if v is not None:
            try:
                return int(float(v) * scale)
            except ValueError:  # an HTTP date: use the backoff
                pass
    ms = min(config.LLM_RETRY_BASE_MS << attempt, config.LLM_RETRY_MAX_MS)
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
    if hint in ("true", "false"):
        retry = hint == "true"
    else:
        retry = (status in (408, 409, 429) or status >= 500) and not quota
    if quota:
        text = "the %s account has no credit left (429 insufficient_quota)" % name
    elif status == 401:
        text = "the API key was rejected (401)"
    elif status == 403:
        text = "the API key is not allowed to do this (403)"
    elif status == 404:
        text = "not found (404): check the model name and base URL"
    elif status == 400:
        text = "the request was refused (400)" + (": " + msg[:_ERR_MSG_MAX] if isinstance(msg, str) and msg else "")
    elif status == 413:
        text = "the request was too large (413)"
    elif status == 429:
        text = "rate limited by %s (429)" % name
    elif status == 529 or kind == "overloaded_error":
        text = "%s is overloaded (%d); try again later" % (name, status)
    elif status >= 500:
        text = "%s had a server error (%d)" % (name, status)
    else:
        text = "unexpected answer from %s (%d)" % (name, status)
    return LLMError(text, status, retry)


def json_text(write, data):
    """Write ``data`` (str, or bytes-like UTF-8 such as the context's memoryview) as one
    JSON string, escaping ``_SLICE`` bytes at a time so no full copy is made."""
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
    one 4-byte UTF-8 character; lone ones become U+FFFD. Other text is returned as is."""
    if not isinstance(s, str):
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


def _utf16_escapes(buf, n):
    """True when the raw reply holds a ``\\uD800``-``\\uDBFF`` escape (a surrogate pair,
    which MicroPython's ``json.loads`` splits); only then is ``repair_utf16`` needed."""
    for pat in (b"\\ud", b"\\uD"):
        i = buf.find(pat, 0, n)
        while 0 <= i < n - 3:
            if buf[i + 3] in b"89abAB":
                return True
            i = buf.find(pat, i + 3, n)
    return False
