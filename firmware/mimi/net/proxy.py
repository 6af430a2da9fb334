"""Every outbound TCP connection, direct or through the ``proxy`` setting: ``connect()``.

The one function every socket of mimi is opened with: the HTTP client's (Telegram, the
LLM, ``web_search``) and any channel's own (a WebSocket). With ``proxy`` empty, the usual
case, it is ``seam.Conn``; with a proxy it is ``mimi.net.tunnel`` (HTTP CONNECT or
SOCKS5, ``no_proxy``, the errors), loaded only then. docs/http-tls.md, "Proxy".
"""
from mimi import config, seam


def connect(host, port, ctx=None, timeout_ms=None):
    """A ``seam.Conn`` to ``host``:``port``, with TLS when ``ctx`` (``certs.context()``)
    is given: through the ``proxy`` setting unless it is empty or ``no_proxy`` covers
    ``host``; inside a tunnel the handshake uses ``host``'s name and checks its
    certificate. ``timeout_ms`` (default ``HTTP_CONNECT_TIMEOUT_MS``) bounds the TCP
    connect, each step of the tunnel and the handshake. ``conn.via`` is ``"proxy
    host:port"`` on a tunnel, else None. Raises ``OSError`` (one line naming the proxy,
    never its password; ``seam.TLSError`` for a refused certificate), ``ValueError`` for a
    malformed ``proxy`` setting.
    """
    timeout_ms = timeout_ms or config.HTTP_CONNECT_TIMEOUT_MS
    if not config.get("proxy"):
        return seam.Conn(host, port, timeout_ms, ctx)
    from mimi.net import tunnel

    return tunnel.connect(host, port, ctx, timeout_ms)
