"""Local fake servers that speak real wire formats (CPython only, stdlib ``http.server``).

Every fake is a ``FakeServer``: threaded, on 127.0.0.1 with a free port, and the same
small API so tests and the simulator can drive any of them::

    fake = FakeAnthropic().start()   # or FakeOpenAI(), ...
    fake.url                         # "http://127.0.0.1:PORT"
    fake.script(Reply.text("hi"))    # what the next requests get, in order
    fake.requests                    # what arrived: method, path, headers, raw body, json
    fake.stop()

A fake is trusted only because a real client accepts it (tests/fakes/: the official
``anthropic`` and ``openai`` SDKs pointed at it with ``base_url``).
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    accepted = 0  # TCP connections accepted (tools/bench_connections.py)

    def process_request(self, request, client_address):
        self.accepted += 1
        ThreadingHTTPServer.process_request(self, request, client_address)


class FakeServer:
    """Base of the fakes: subclasses implement ``handle(req) -> Out``.

    ``accepted``: the TCP connections accepted so far. ``req`` is a dict ``{"method", "path", "query", "headers" (lower-case names), "body"
    (bytes), "json" (parsed body or None), "time"}``; it is appended to ``requests``
    before ``handle`` runs (except paths under ``/_fake/``, a fake's control API).
    """

    def __init__(self):
        self.requests = []
        self._httpd = None
        self._stop = threading.Event()
        self.lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------

    def start(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as real servers: the head and body writes go out at once

            def log_message(self, *a):  # quiet
                pass

            def _any(self):
                fake._dispatch(self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self):
        self._stop.set()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def accepted(self):
        """TCP connections accepted so far (each would be a TLS handshake on the board)."""
        return self._httpd.accepted if self._httpd else 0

    def sleep(self, seconds):
        """Wait ``seconds`` or until ``stop()`` (slow replies must not outlive the fake)."""
        self._stop.wait(seconds)

    # -- plumbing -------------------------------------------------------------------

    def _dispatch(self, h):
        path, _, query = h.path.partition("?")
        n = int(h.headers.get("Content-Length") or 0)
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = _read_chunked(h.rfile)
        else:
            body = h.rfile.read(n) if n else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        req = {"method": h.command, "path": path,
               "query": dict(p.split("=", 1) for p in query.split("&") if "=" in p),
               "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body, "json": parsed,
               "time": time.monotonic()}
        if not path.startswith("/_fake/"):  # the control API is not recorded
            with self.lock:
                self.requests.append(req)
        out = self.handle(req)
        out.send(h, self)

    def handle(self, req):  # pragma: no cover - subclasses
        raise NotImplementedError


class Out:
    """One HTTP response a fake sends: status, headers, body (bytes), and how.

    ``delay_s``: wait before answering (a slow server); ``chunked``: send the body with
    chunked transfer encoding, in pieces of ``chunk_bytes``; ``drop``: close the
    connection without answering.
    """

    def __init__(self, status=200, body=b"", headers=None, delay_s=0, chunked=False, chunk_bytes=7, drop=False):
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = dict(headers or {})
        self.delay_s = delay_s
        self.chunked = chunked
        self.chunk_bytes = chunk_bytes
        self.drop = drop

    def send(self, h, fake):
        if self.delay_s:
            fake.sleep(self.delay_s)
        if self.drop:
            h.close_connection = True
            return
        h.send_response(self.status)
        self.headers.setdefault("Content-Type", "application/json")
        for k, v in self.headers.items():
            h.send_header(k, str(v))
        if self.chunked:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            b = self.body
            for i in range(0, len(b), self.chunk_bytes):
                piece = b[i:i + self.chunk_bytes]
                h.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
        else:
            h.send_header("Content-Length", str(len(self.body)))
            h.end_headers()
            h.wfile.write(self.body)
        h.wfile.flush()


def _read_chunked(f):
    out = b""
    while True:
        size = int(f.readline().split(b";")[0].strip(), 16)
        if size == 0:
            while f.readline().strip():
                pass
            return out
        out += f.read(size)
        f.readline()
