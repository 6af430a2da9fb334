"""The web server on the LAN: microdot apps in an asyncio loop of their own thread (issue 16).

Two listening sockets, one loop:
- the web app on ``web_port`` (80 on the board): the pages (``mimi.web.pages``), the chat's
  WebSocket at ``/ws``, and the routes of every module in ``config.WEB_ROUTE_MODULES``
  (each has ``routes(app)``; ``add_routes`` plugs in one more before ``init``);
- the chat gateway on ``gateway_port`` (18789): MimiClaw's WebSocket at ``/``
  (``mimi.web.gateway``).
Nothing runs while ``web_password`` is unset (``auth.enabled``); ``init`` loads microdot
then, in the main thread (compiling needs its stack), and ``start`` starts the thread.

Why a third thread and not the I/O thread: microdot is asyncio code, the I/O loop is
not, and a request must not wait for a Telegram exchange (nor the other way round). The
thread costs ``config.WEB_THREAD_STACK_BYTES`` of internal RAM, each open connection a
socket (lwIP: about 1 KB of internal RAM with its buffers in flight); no TLS (docs/heap.md,
"Internal RAM"). Its loop wakes every ``_WEB_TICK_MS`` to pass the agent's messages to
the gateway's connections (``Gateway.pump``: the I/O thread cannot wake an asyncio loop
on MicroPython) and to see ``stop``.

Connections beyond ``_WEB_CONNS_MAX`` (HTTP and WebSocket, both ports) are closed at once;
one whose request line and headers take over ``_WEB_HEAD_TIMEOUT_S`` is closed (so idle
connections cannot hold every place); request bodies are capped at
``_WEB_BODY_MAX_BYTES`` (413 beyond: microdot).
"""
from micropython import const

from mimi import config, log, seam

_WEB_TICK_MS = const(50)
_WEB_CONNS_MAX = const(8)
_WEB_BODY_MAX_BYTES = const(40960)  # a saved file (tools write up to 32 KB) with its form encoding
_WEB_LOG_LINES = const(60)  # log lines kept for the log page once the web app runs
_WEB_STOP_WAIT_MS = const(3000)
_WEB_HEAD_TIMEOUT_S = const(10)  # a request's line and headers must all come within this
_WEB_HEAD_MAX_BYTES = const(8192)  # ... and be no longer (microdot caps neither: a hostile head filled the heap)
_WEB_BODY_IDLE_S = const(10)  # a body (a form, an upload) may pause this long between reads
_WEB_TRIES = const(3)  # loop failures (a port in use) before the web app gives up until restart

state = {"apps": None, "gateway": None, "running": False, "stop": False, "error": None, "conns": 0}
_extra = []  # route modules added by add_routes()


def add_routes(module_name):
    """Plug one more route module (``routes(app)``) into the web app; before ``init``."""
    if module_name not in _extra:
        _extra.append(module_name)


def init(bus):
    """Build the apps and the gateway channel when a web password is set (the main
    thread, while the heap is whole); returns the gateway, or None (web app off). (At a
    board's first start /main.py has made one: ``auth.first_start``.)"""
    from mimi.web import auth

    if not auth.enabled():
        return None
    if state["gateway"] is not None:
        state["gateway"].bus = bus  # built before, for an app since forgotten (mimi.app.forget)
    if state["apps"] is None:
        from microdot import Microdot, Request

        from mimi.web.gateway import Gateway

        Request.max_content_length = Request.max_body_length = _WEB_BODY_MAX_BYTES
        gw = state["gateway"] = Gateway(bus)
        web = Microdot()
        web.route("/ws")(gw.route)
        for name in config.WEB_ROUTE_MODULES + tuple(_extra):
            try:
                __import__(name, None, None, ("routes",)).routes(web)
            except Exception as e:  # noqa: BLE001 - includes MemoryError: the others still work
                seam.collect()
                log.exc("web", "routes " + name, e)
        _bounded(web)
        chat = Microdot()
        chat.route("/")(gw.route)
        state["apps"] = (web, chat)
        log.keep[0] = _WEB_LOG_LINES
        seam.collect()
    return state["gateway"]


# Routes that stream a large body (updates over WiFi, mimi.web.update_route): they raise
# microdot's cap for the whole app, so every other route keeps ours here.
_WEB_STREAMED = ("/api/update", "/api/firmware")


def _bounded(app):
    """The limits every route of the web app shares: a body over ``_WEB_BODY_MAX_BYTES``
    is refused (413) before any route reads it, but on the upload routes; malformed input
    that microdot or a route raises ``ValueError`` for (a form's bad %-escape, bad UTF-8, a
    path the file layer refuses) is a 400, not a 500 with a traceback."""

    @app.before_request
    async def body_cap(request):
        if (request.content_length or 0) > _WEB_BODY_MAX_BYTES and request.path not in _WEB_STREAMED:
            return "request body too large", 413

    @app.errorhandler(ValueError)
    async def bad_request(request, e):
        log.warn("web", "%s %s: %r", request.method, request.path, e)
        return "bad request", 400


def deliver(msg):
    """An outbound bus message for a gateway chat (``mimi.app.route``): True when taken or
    dropped (no web app), False while the gateway's queue is full."""
    gw = state["gateway"]
    if gw is None or not state["running"]:
        return True
    return gw.deliver(msg)


def start():
    """Start the web thread (after ``init`` returned a gateway). False when not set up or
    already running."""
    if state["apps"] is None or state["running"]:
        return False
    state["stop"] = False
    state["running"] = True
    state["error"] = None
    seam.start_thread(_thread, (), seam.thread_stack_bytes(config.WEB_THREAD_STACK_BYTES))
    return True


def stop(timeout_ms=_WEB_STOP_WAIT_MS):
    """Ask the web thread to end (its loop closes the listening sockets); wait up to
    ``timeout_ms``. True when it ended."""
    state["stop"] = True
    t0 = seam.ticks_ms()
    while state["running"] and seam.ticks_diff(seam.ticks_ms(), t0) < timeout_ms:
        seam.wait_ms(20)
    return not state["running"]


def ports():
    """(web port, gateway port) as numbers, from the settings."""
    return int(config.get("web_port")), int(config.get("gateway_port"))


def describe():
    """The web app in words, for the status page."""
    if state["apps"] is None:
        return "off (no web password)"
    w, g = ports()
    if not state["running"]:
        return "stopped (%s)" % (state["error"] or "not started")
    return "port %d, gateway port %d: %s" % (w, g, state["gateway"].describe())


def _thread():
    """The web thread: run the loop; a failing one is tried again a few times."""
    import asyncio

    try:
        for _ in range(_WEB_TRIES):
            try:
                asyncio.run(_main())
            except Exception as e:  # noqa: BLE001 - OSError (a port in use), MemoryError
                state["error"] = "%s: %s" % (type(e).__name__, e)
                log.exc("web", "loop", e)
            if state["stop"]:
                break
            seam.collect()
            seam.wait_ms(2000)
    finally:
        state["running"] = False
        log.info("web", "stopped")


class _Reader:
    """A stream reader that bounds what a client can hold: the request's line and headers
    must all come within ``_WEB_HEAD_TIMEOUT_S`` (in all, not per line) and
    ``_WEB_HEAD_MAX_BYTES``; after them, a body's reads time out after
    ``_WEB_BODY_IDLE_S`` of silence. A WebSocket (its handshake asked for the upgrade) may
    then wait for messages as long as it likes. A breach raises ``OSError(104)``: microdot
    takes it for a reset and closes quietly (microdot itself caps neither)."""

    def __init__(self, r):
        self.r = r
        self.head = True
        self.ws = False
        self.head_bytes = 0
        self.t0 = seam.ticks_ms()

    async def _timed(self, coro):
        import asyncio

        if self.head:
            left_ms = _WEB_HEAD_TIMEOUT_S * 1000 - seam.ticks_diff(seam.ticks_ms(), self.t0)
            why = "request head too slow"
        elif self.ws:
            return await coro
        else:
            left_ms = _WEB_BODY_IDLE_S * 1000
            why = "request body stalled"
        try:
            if left_ms <= 0:
                raise asyncio.TimeoutError
            return await asyncio.wait_for(coro, left_ms / 1000)
        except asyncio.TimeoutError:
            raise OSError(104, why)  # errno 104: microdot takes it for a reset, closes quietly

    async def readline(self):
        line = await self._timed(self.r.readline())
        if self.head:
            self.head_bytes += len(line)
            if self.head_bytes > _WEB_HEAD_MAX_BYTES:
                raise OSError(104, "request head too long")
            if line[:8].lower() == b"upgrade:" and b"websocket" in line.lower():
                self.ws = True
            if line in (b"\r\n", b"\n", b""):
                self.head = False
        return line

    async def read(self, n=-1):
        return await self._timed(self.r.read(n))

    async def readexactly(self, n):
        return await self._timed(self.r.readexactly(n))


class _Writer:
    """A stream writer with microdot's ``awrite``/``aclose`` on both runtimes (CPython's
    ``StreamWriter`` has ``write``/``drain``; MicroPython's ``Stream`` both)."""

    def __init__(self, w):
        self.w = w

    async def awrite(self, data):
        self.w.write(data)
        await self.w.drain()

    async def aclose(self):
        self.close()
        try:
            await self.w.wait_closed()
        except Exception:  # noqa: BLE001 - closed by the peer already
            pass

    def close(self):
        try:
            self.w.close()
        except Exception:  # noqa: BLE001
            pass

    def get_extra_info(self, name):
        return self.w.get_extra_info(name)


def _serve(app):
    """The connection handler of ``app``: counts connections, refuses those past the cap."""
    async def serve(reader, writer):
        w = _Writer(writer)
        if state["conns"] >= _WEB_CONNS_MAX:
            log.warn("web", "too many connections")
            await w.aclose()
            return
        state["conns"] += 1
        try:
            await app.handle_request(_Reader(reader), w)
        except Exception as e:  # noqa: BLE001 - one connection's failure is not the server's
            log.warn("web", "request: %r", e)
            await w.aclose()
        finally:
            state["conns"] -= 1
    return serve


async def _main():
    import asyncio

    web, chat = state["apps"]
    wport, gport = ports()
    host = seam.listen_host()
    servers = [await asyncio.start_server(_serve(web), host, wport)]
    try:
        servers.append(await asyncio.start_server(_serve(chat), host, gport))
        log.info("web", "web app on %s:%d, gateway on port %d", host, wport, gport)
    except OSError as e:  # the gateway's port taken: the web app (and its /ws chat) still serves
        log.error("web", "gateway port %d: %s; the web app on %s:%d serves without it", gport, e, host, wport)
    gw = state["gateway"]
    try:
        while not state["stop"]:
            await gw.pump()
            await asyncio.sleep(_WEB_TICK_MS / 1000)
    finally:
        for s in servers:
            s.close()
        for c in gw.clients[:]:
            gw._drop(c)
        for s in servers:
            await s.wait_closed()
