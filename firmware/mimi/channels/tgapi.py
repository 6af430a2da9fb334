"""Telegram Bot API calls over ``mimi.net.http``: one request per call, JSON bodies.

``call(method, params)`` for everything but the long poll; ``start_poll(...)`` returns
the ``http.Pending`` of a ``getUpdates`` so the I/O thread can keep sending while it
waits, and ``updates(pending)`` reads its answer into the poll buffer.

URL: ``<tg_api_base>/bot<token>/<method>`` (https://core.telegram.org/bots/api#making-
requests); the base is a setting, so a self-hosted Bot API server or a test fake works.
The token is part of the path: nothing here logs a URL.
Errors: ``TgError(code, description, retry_after)`` for an answer with ``"ok": false``;
``OSError`` for network trouble (``http`` raises it); ``Truncated`` when a getUpdates
answer did not fit the poll buffer.
"""
import json

from mimi import config

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")


class TgError(Exception):
    """The Bot API said no: ``code`` (HTTP status / error_code), ``description``,
    ``retry_after`` (seconds, for 429) or None."""

    def __init__(self, code, description, retry_after=None):
        super().__init__("%d %s" % (code, description))
        self.code = code
        self.description = description
        self.retry_after = retry_after


class Truncated(OSError):
    """A getUpdates answer was larger than the poll buffer; ``raw`` holds its start."""

    def __init__(self, raw):
        super().__init__("getUpdates answer over the poll buffer")
        self.raw = raw


def _error(r):
    d = {}
    if not r.truncated:
        try:
            d = r.json()
        except ValueError:
            d = {}
    if not isinstance(d, dict):
        d = {}
    params = d.get("parameters") or {}
    return TgError(d.get("error_code") or r.status, d.get("description") or ("HTTP %d" % r.status),
                   params.get("retry_after") if isinstance(params, dict) else None)


class BotApi:
    """The Bot API for the token and base URL in the settings (read at every call, so a
    new token applies at once). ``poll_buf``/``send_buf``: bytearrays allocated once."""

    def __init__(self, poll_buf, send_buf):
        self.poll_buf = poll_buf
        self.send_buf = send_buf

    def token(self):
        return config.get("tg_token")

    def _url(self, method):
        return "%s/bot%s/%s" % (config.get("tg_api_base").rstrip("/"), self.token(), method)

    def call(self, method, params=None, want_result=False, timeout_ms=None):
        """POST ``method`` with ``params`` (dict) as JSON.

        Returns the ``result`` when ``want_result`` (it must fit ``send_buf``), else True.
        A 200 answer is success whatever its size: sendMessage echoes the whole message,
        which need not be read.
        """
        from mimi.net import http

        body = json.dumps(params or {}).encode()
        r = http.request("POST", self._url(method), {"Content-Type": "application/json"}, body,
                         timeout_ms=timeout_ms or config.TG_SEND_TIMEOUT_MS, buf=self.send_buf)
        if r.status != 200:
            raise _error(r)
        if not want_result:
            return True
        if r.truncated:
            raise OSError("%s answer over %d bytes" % (method, len(self.send_buf)))
        return r.json().get("result")

    def start_poll(self, offset, timeout_s, limit):
        """Send a getUpdates long poll; return its ``Pending`` (``ready``/``finish``/``close``).

        Sending it confirms every update below ``offset`` to Telegram.
        """
        from mimi.net import http

        body = json.dumps({"offset": offset, "timeout": timeout_s, "limit": limit,
                           "allowed_updates": ALLOWED_UPDATES}).encode()
        return http.start("POST", self._url("getUpdates"), {"Content-Type": "application/json"}, body,
                          timeout_ms=config.TG_POLL_SOCKET_MS, buf=self.poll_buf,
                          deadline_ms=config.TG_POLL_SOCKET_MS + config.TG_SEND_TIMEOUT_MS)

    def updates(self, pending):
        """Read a poll's answer: the list of updates. Raises ``TgError``, ``Truncated``, ``OSError``."""
        r = pending.finish()
        if r.status != 200:
            raise _error(r)
        if r.truncated:
            raise Truncated(bytes(r.body[:512]))
        res = r.json().get("result")
        return res if isinstance(res, list) else []
