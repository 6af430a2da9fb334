"""A scripted HTTP server on 127.0.0.1 for the HTTP client's live tests (host only).

Each path plays one server behaviour byte by byte (split writes, chunked bodies, a hung
server, a dripping one...), which ``http.server`` would smooth over. Optional TLS with a
certificate from ``certgen``. ``requests`` records what arrived.
"""
import hashlib
import json
import socket
import ssl
import threading
import time


class RawServer:
    def __init__(self, tls=None):
        self.tls = tls  # {"cert": path, "key": path} or None
        self.requests = []
        self.closed_early = []  # paths whose request body never fully arrived
        self._stop = threading.Event()
        self._ls = None

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
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            c.settimeout(10)
            if self._ctx:
                c = self._ctx.wrap_socket(c, server_side=True)
            req = self._read_request(c)
            if req is None:
                return
            self.requests.append(req)
            self._route(c, req)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _read_request(self, c):
        data = b""
        while b"\r\n\r\n" not in data:
            b = c.recv(4096)
            if not b:
                return None
            data += b
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        method, target, version = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(body) < n:
            b = c.recv(65536)
            if not b:
                self.closed_early.append(target)
                return None
            body += b
        path, _, query = target.partition("?")
        q = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        return {"method": method, "path": path, "query": q, "target": target, "version": version,
                "headers": headers, "body": body, "raw_head": head}

    def _wait(self, s):
        self._stop.wait(s)

    def _route(self, c, req):
        p, q = req["path"], req["query"]
        if p == "/cl":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nX-Other: 1\r\n\r\nhello world")
        elif p == "/chunked":
            parts = [b"HTTP/1.1 200 OK\r\nTransfer-", b"Encoding: chunked\r\n\r\n", b"5;ext=1\r\nhel",
                     b"lo\r\n1\r", b"\n \r\n5\r\nworld\r\n", b"0\r\nX-Trailer: t\r\n\r\n"]
            for part in parts:
                c.sendall(part)
                time.sleep(0.01)
        elif p in ("/big", "/bigchunked"):
            n = int(q.get("n", "10000"))
            data = bytes(i % 251 for i in range(n))
            if p == "/big":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n + data)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                for i in range(0, n, 3000):
                    piece = data[i:i + 3000]
                    c.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                c.sendall(b"0\r\n\r\n")
        elif p == "/close":
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
        elif p == "/hang":
            self._wait(30)
        elif p == "/slowhead":
            self._wait(int(q.get("ms", "800")) / 1000)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
        elif p == "/drip":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            while not self._stop.is_set():
                c.sendall(b"x")
                self._wait(0.2)
        elif p == "/echo":
            body = req["body"]
            out = json.dumps({"len": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                              "ctype": req["headers"].get("content-type")}).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
        elif p == "/status":
            code = int(q.get("code", "503"))
            extra = b"Retry-After: %s\r\n" % q["retry"].encode() if "retry" in q else b""
            c.sendall(b"HTTP/1.1 %d Whatever\r\n%sContent-Length: 2\r\n\r\nno" % (code, extra))
        elif p == "/longheader":
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Huge: " + b"a" * 5000 + b"\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\nok")
        elif p == "/continue":
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes")
        elif p == "/204":
            c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        elif p == "/short":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly this")
        elif p == "/garbage":
            c.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        else:
            c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
