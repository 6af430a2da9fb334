"""What both wire protocols share: JSON streaming, the reply buffer, retries, error texts.

Request bodies are written piece by piece through ``http``'s writer (never built as one
string): ``json_text`` escapes a large UTF-8 buffer (the 16 KB system prompt) a slice at
a time. Replies are read into one ``bytearray`` allocated once (``init``) and parsed in
place. Retry policy, from the official SDKs (anthropic-sdk-python and openai-python,
``_base_client.py``: ``DEFAULT_MAX_RETRIES = 2``, ``_should_retry``,
``_calculate_retry_timeout``): at most 3 attempts; retry connection errors, 408, 409,
429, 5xx (529 included) unless ``x-should-retry: false``; wait ``retry-after-ms`` /
``retry-after`` when given, else 0.5 s * 2^n capped at 8 s with up to 25 % jitter. Here a
``retry-after`` over 60 s is not waited for: the user is told to try later instead.
Not retried: 400, 401, 403, 404, 413 and 429 ``insufficient_quota``.
"""
import json
import os

from micropython import const

from mimi import config, log, seam
from mimi.llm import LLMError, init  # noqa: F401 - providers use them as common.*
from mimi.net import http

TAG = "llm"
_SLICE = const(1024)  # bytes of the system prompt escaped per json.dumps call
_ERR_MSG_MAX = const(160)  # characters of the API's own error message shown to the user
_COLLECT_OVER = const(8192)  # reply bytes above which the heap is collected before parsing


# -- writing JSON --------------------------------------------------------------------


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
        s = json.dumps(str(mv[i:j], "utf-8"))
        b = seam.as_bytes(s)
        write(b[1:len(b) - 1])
        i = j
    write('"')


def dump(write, obj):
    """Write a small object as JSON (tool schemas, one content block)."""
    write(json.dumps(obj))


# -- reading replies -----------------------------------------------------------------


def strip_think(text):
    """Remove ``<think>...</think>`` (reasoning some models put in the content).

    An unclosed ``<think>`` drops the rest; a stray ``</think>`` drops what precedes it
    (servers that strip the opening tag). Returns the text stripped of outer whitespace.
    """
    if not text or "think>" not in text:
        return text.strip() if text else ""
    out = []
    i = 0
    while True:
        a = text.find("<think>", i)
        if a < 0:
            out.append(text[i:])
            break
        out.append(text[i:a])
        b = text.find("</think>", a)
        if b < 0:
            break
        i = b + 8
    text = "".join(out)
    k = text.rfind("</think>")
    if k >= 0:
        text = text[k + 8:]
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
    if b.find(b"\xed") < 0:
        return s
    out = bytearray()
    i = 0
    n = len(b)
    while i < n:
        c = b[i]
        if c == 0xED and i + 2 < n and 0xA0 <= b[i + 1] <= 0xBF:
            hi = 0xD000 | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F)
            if 0xD800 <= hi <= 0xDBFF and i + 5 < n and b[i + 3] == 0xED and 0xB0 <= b[i + 4] <= 0xBF:
                lo = 0xD000 | ((b[i + 4] & 0x3F) << 6) | (b[i + 5] & 0x3F)
                cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                out.extend(bytes((0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F),
                                  0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))))
                i += 6
                continue
            out.extend(b"\xef\xbf\xbd")
            i += 3
            continue
        out.append(c)
        i += 1
    return bytes(out).decode()


def parse_args(raw):
    """Tool-call arguments (OpenAI sends a JSON string) -> ``(dict, error or None)``."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    try:
        v = json.loads(raw)
    except (ValueError, TypeError) as e:
        return {}, "arguments were not valid JSON: %s" % (str(e)[:80] or "syntax error")
    if not isinstance(v, dict):
        return {}, "arguments must be a JSON object"
    return v, None


# -- the call, with retries -------------------------------------------------------------

_RETRY_STATUS = (408, 409, 429)


def _sleep_ms(ms):  # tests patch this
    seam.sleep_ms(ms)


def backoff_ms(attempt):
    """The SDKs' wait before retry ``attempt`` (0-based): 0.5 s * 2^n, at most 8 s, 0-25 % jitter."""
    ms = min(config.LLM_RETRY_BASE_MS * (1 << attempt), config.LLM_RETRY_MAX_MS)
    return ms - ms * os.urandom(1)[0] // 1024


def retry_after_ms(headers):
    """``retry-after-ms`` or ``retry-after`` (seconds) as ms, or None when absent or a date."""
    v = headers.get("retry-after-ms")
    if v is not None:
        try:
            return int(float(v))
        except ValueError:
            pass
    v = headers.get("retry-after")
    if v is not None:
        try:
            return int(float(v) * 1000)
        except ValueError:
            pass
    return None


def _host(url):
    try:
        return http.parse_url(url)[1]
    except ValueError:
        return url


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


def call(url, headers, writer, name):
    """POST the JSON that ``writer`` streams to ``url``; return ``(reply dict, escapes)``,
    ``escapes`` True when the reply may hold split surrogate pairs (``repair_utf16``).

    ``name``: the provider's name for messages ("anthropic"). Retries as the module says;
    raises ``LLMError`` at the end. The reply is parsed from the shared buffer, which the
    next call reuses (keep only what was extracted from the returned dict).
    """
    buf = init()
    err = None
    for attempt in range(config.LLM_MAX_ATTEMPTS):
        wait = None
        try:
            r = http.request("POST", url, headers, writer, timeout_ms=config.LLM_TIMEOUT_MS, buf=buf,
                             deadline_ms=config.LLM_DEADLINE_MS)
        except seam.TLSError as e:
            raise LLMError("could not open a secure connection to %s: %s" % (_host(url), e))
        except OSError as e:
            err = LLMError("could not reach %s (%s)" % (_host(url), _oserror_text(e)), None, True)
            log.warn(TAG, "%s attempt %d: %s", name, attempt + 1, err.user_message)
        else:
            if r.status == 200:
                if r.truncated:
                    raise LLMError("the reply was larger than the %d KB the device can hold; ask for a shorter "
                                   "answer" % (len(buf) // 1024), 200)
                n = len(r.body)
                if n > _COLLECT_OVER:  # free garbage first: parsing needs a run as long as the text
                    r = None
                    seam.collect()
                try:
                    return seam.loads_view(memoryview(buf)[:n]), _utf16_escapes(buf, n)
                except ValueError:
                    err = LLMError("%s sent a reply that is not valid JSON" % name, 200, True)
            else:
                err = _status_error(r, name)
                if not err.retryable:
                    raise err
                wait = retry_after_ms(r.headers)
                if wait is not None and wait > config.LLM_RETRY_AFTER_MAX_S * 1000:
                    raise LLMError("%s; it asks to wait %d s, try again later" % (err.user_message, wait // 1000),
                                   r.status, True)
            log.warn(TAG, "%s attempt %d: %s", name, attempt + 1, err.user_message)
        if attempt + 1 < config.LLM_MAX_ATTEMPTS:
            _sleep_ms(wait if wait is not None else backoff_ms(attempt))
    raise err


def _oserror_text(e):
    s = str(e)
    if "timed out" in s or (e.args and e.args[0] == 110):
        return "timed out"
    if e.args and e.args[0] in (111, 104):
        return "connection refused" if e.args[0] == 111 else "connection reset"
    return s[:60] or "network error"


def _status_error(r, name):
    """Map an error response to an ``LLMError`` (reads the error body from the buffer)."""
    status = r.status
    kind = code = msg = None
    try:
        d = r.json()
        e = d.get("error") if isinstance(d, dict) else None
        if isinstance(e, dict):
            kind, code, msg = e.get("type"), e.get("code"), e.get("message")
        elif isinstance(e, str):
            msg = e
    except (ValueError, AttributeError):
        pass
    msg = (msg if isinstance(msg, str) else "")[:_ERR_MSG_MAX]
    quota = "insufficient_quota" in (kind, code)
    retryable = (status in _RETRY_STATUS or status >= 500) and not quota
    hint = r.headers.get("x-should-retry")
    if hint == "true":
        retryable = True
    elif hint == "false":
        retryable = False
    if quota:
        text = "the %s account has no credit left (429 insufficient_quota)" % name
    elif status == 401:
        text = "the API key was rejected (401)"
    elif status == 403:
        text = "the API key is not allowed to do this (403)"
    elif status == 404:
        text = "not found (404): check the model name and base URL"
    elif status == 400:
        text = "the request was refused (400)" + (": " + msg if msg else "")
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
    return LLMError(text, status, retryable)
