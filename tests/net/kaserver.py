"""A keep-alive HTTP/1.1 server on 127.0.0.1 for the client's connection reuse tests (host only).

Serves many requests per connection until the client closes; every answer carries
``X-Conn: N``, the number of the connection it went out on (1, 2, ...), so a client
sees which requests shared one. Optional TLS (a ``certgen`` certificate). Paths:
``/ok``; ``/chunked``; ``/close`` (``Connection: close``, then closes); ``/http10`` (an
HTTP/1.0 answer); ``/hangup`` (answers, then closes as an idle server does); ``/arm``
(answers; the next request on that connection is read and the connection closed with
no answer, the race a kept connection meets); ``/big`` (100 bytes); ``/slow?ms=N``;
``/count?path=P`` (how many requests for P arrived). ``connections`` counts accepts.
"""
import socket
import ssl
import threading
import time


class KeepServer:
    def __init__(self, tls=None):
        self.tls = tls
        self.connections = 0
        self.log = []  # (connection number, path) of every request read
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def start(self):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        ls.settimeout(0.2)
        self._ls = ls
        self.port = ls.getsockname()[1]
        self.url = "%s://localhost:%d" % ("https" if self.tls else "http", self.port)
        self._ctx = None
        if self.tls:
            self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._ctx.load_cert_chain(self.tls["cert"], self.tls["key"])
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self._stop.set()
        self._ls.close()

    def _accept(self):
        while not self._stop.is_set():
            try:
                c, _ = self._ls.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                self.connections += 1
                n = self.connections
            threading.Thread(target=self._serve, args=(c, n), daemon=True).start()

    def _serve(self, c, n):
        try:
            c.settimeout(20)
            if self._ctx:
                c = self._ctx.wrap_socket(c, server_side=True)
            f = c.makefile("rb")
            armed = False
            while not self._stop.is_set():
                line = f.readline()
                if not line:
                    return
                target = line.split()[1].decode()
                length = 0
                while True:
                    h = f.readline().strip()
                    if not h:
                        break
                    k, _, v = h.decode().partition(":")
                    if k.strip().lower() == "content-length":
                        length = int(v)
                if length:
                    f.read(length)
                path, _, query = target.partition("?")
                with self._lock:
                    self.log.append((n, path))
                if armed:
                    return  # read, never answered
                q = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                if not self._answer(c, n, path, q):
                    return
                armed = path == "/arm"
        except (OSError, ssl.SSLError, ValueError, IndexError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _answer(self, c, n, path, q):
        """Send the answer for ``path``; False when the connection ends after it."""
        head = "HTTP/1.1 200 OK\r\nX-Conn: %d\r\n" % n
        if path == "/chunked":
            c.sendall((head + "Transfer-Encoding: chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\n\r\n").encode())
            return True
        if path == "/close":
            c.sendall((head + "Connection: close\r\nContent-Length: 2\r\n\r\nok").encode())
            return False
        if path == "/http10":
            c.sendall(("HTTP/1.0 200 OK\r\nX-Conn: %d\r\nContent-Length: 2\r\n\r\nok" % n).encode())
            return False
        if path == "/big":
            c.sendall((head + "Content-Length: 100\r\n\r\n" + "x" * 100).encode())
            return True
        if path == "/slow":
            self._stop.wait(int(q.get("ms", "500")) / 1000)
        body = b"ok"
        if path == "/count":
            with self._lock:
                body = str(sum(1 for _, p in self.log if p == q.get("path"))).encode()
        c.sendall((head + "Content-Length: %d\r\n\r\n" % len(body)).encode() + body)
        if path == "/hangup":
            time.sleep(0.05)
            return False
        return True
