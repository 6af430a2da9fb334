"""The HTTP client against a fake connection at the lowest seam (both runtimes).

``seam.Conn`` is swapped for ``FakeConn``, which serves a recorded response in pieces of
a chosen size and records every byte written, so the exact request bytes are asserted
and responses are parsed when split at every possible point (CRLF and chunk headers cut
in half).
"""
from mimi import config, seam
from mimi.net import http
import support

RUNTIMES = ("cpython", "micropython")


class FakeConn:
    script = b""
    piece = 4096
    last = None

    def __init__(self, host, port, timeout_ms, ctx=None):
        assert ctx is None, "no TLS in these tests"
        self.host, self.port = host, port
        self.sent = bytearray()
        self.data = FakeConn.script
        self.pos = 0
        self.closed = False
        self.writes = 0
        FakeConn.last = self

    def readinto(self, mv, timeout_ms):
        self.widest = max(getattr(self, "widest", 0), len(mv))
        k = min(len(mv), FakeConn.piece, len(self.data) - self.pos)
        mv[:k] = self.data[self.pos:self.pos + k]
        self.pos += k
        return k

    def write(self, data, timeout_ms):
        self.writes += 1
        self.sent.extend(bytes(data))

    def close(self):
        self.closed = True


def _with_fake(script, piece, fn):
    real = seam.Conn
    seam.Conn = FakeConn
    FakeConn.script = script
    FakeConn.piece = piece
    try:
        return fn()
    finally:
        seam.Conn = real


def test_parse_url():
    assert http.parse_url("https://api.anthropic.com/v1/messages") == (True, "api.anthropic.com", 443, "/v1/messages")
    assert http.parse_url("http://127.0.0.1:11434") == (False, "127.0.0.1", 11434, "/")
    assert http.parse_url("http://[::1]:8080/x?y=1") == (False, "::1", 8080, "/x?y=1")
    for bad in ("ftp://x/", "https://", "http://h:99999/", "http://user@h/", "api.openai.com/v1"):
        support.raises(ValueError, http.parse_url, bad)


def test_exact_request_bytes():
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def go():
        return http.request("POST", "http://example.test:8080/v1/x?q=1",
                            {"Content-Type": "application/json", "x-api-key": "sk-FAKE"}, b'{"a":1}',
                            buf=bytearray(8))
    r = _with_fake(resp, 4096, go)
    assert bytes(r.body) == b"ok"
    c = FakeConn.last
    assert c.host == "example.test" and c.port == 8080
    head, body = bytes(c.sent).split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/x?q=1 HTTP/1.1"
    # Header order follows the dict (MicroPython's dicts are not insertion-ordered).
    assert sorted(lines[1:]) == sorted([b"Host: example.test:8080", b"Connection: close",
                                        b"Content-Type: application/json", b"x-api-key: sk-FAKE",
                                        b"User-Agent: mimi", b"Content-Length: 7"])
    assert body == b'{"a":1}'
    assert c.closed
    assert c.writes == 1  # gathered into one write, not one per piece


def test_default_port_is_not_in_host_header_and_get_has_no_length():
    _with_fake(b"HTTP/1.1 204 No Content\r\n\r\n", 4096, lambda: http.request("GET", "http://h/"))
    assert bytes(FakeConn.last.sent) == b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nUser-Agent: mimi\r\n\r\n"


CHUNKED = (b"HTTP/1.1 200 OK\r\nServer: x\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n"
           b"4\r\nWiki\r\n6;name=v\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nTrailer: a\r\n\r\n")
EXPECT = b"Wikipedia in \r\n\r\nchunks."


def test_chunked_split_at_every_point():
    for piece in range(1, 40):
        r = _with_fake(CHUNKED, piece, lambda: http.request("GET", "http://h/", buf=bytearray(64)))
        assert bytes(r.body) == EXPECT, piece
        assert r.headers == {"transfer-encoding": "chunked", "retry-after": "2"}
        assert not r.truncated


def test_chunked_truncates_at_the_cap_even_mid_chunk():
    r = _with_fake(CHUNKED, 7, lambda: http.request("GET", "http://h/", buf=bytearray(64), cap=8))
    assert bytes(r.body) == b"Wikipedi" and r.truncated
    assert FakeConn.last.closed


def test_a_sink_takes_bodies_larger_than_the_buffer_piece_by_piece():
    big = bytes(range(256)) * 40  # 10 KB through a 16-byte buffer
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    for i in range(0, len(big), 1000):
        chunked += b"%x\r\n" % len(big[i:i + 1000]) + big[i:i + 1000] + b"\r\n"
    chunked += b"0\r\n\r\n"
    sized = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(big) + big
    to_close = b"HTTP/1.1 200 OK\r\n\r\n" + big
    for resp in (chunked, sized, to_close):
        for piece in (1, 7, 4096):
            got = bytearray()
            most = [0]

            def sink(mv):
                got.extend(mv)
                most[0] = max(most[0], len(mv))

            r = _with_fake(resp, piece, lambda: http.start("GET", "http://h/").finish(buf=bytearray(16), sink=sink))
            assert bytes(got) == big and most[0] <= 16, piece
            assert r.status == 200 and len(r.body) == 0 and not r.truncated
    got = bytearray()
    r = _with_fake(sized, 64, lambda: http.start("GET", "http://h/").finish(buf=bytearray(16), cap=100,
                                                                            sink=got.extend))
    assert bytes(got) == big[:100] and r.truncated


def test_content_length_split_and_utf8_text():
    body = "héllo wörld 😀".encode()
    resp = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    for piece in (1, 2, 3, 5, 64):
        r = _with_fake(resp, piece, lambda: http.request("GET", "http://h/", buf=bytearray(100)))
        assert bytes(r.body).decode() == "héllo wörld 😀"
    r = _with_fake(resp, 64, lambda: http.request("GET", "http://h/", buf=bytearray(100), cap=len(body) - 2))
    assert r.truncated and bytes(r.body) == body[:-2]


def test_an_oversized_header_line_is_skipped_in_a_fixed_buffer():
    resp = b"HTTP/1.1 200 OK\r\nX-Huge: " + b"a" * 5000 + b"\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\nok"
    for piece in (1, 7, 4096):
        r = _with_fake(resp, piece, lambda: http.request("GET", "http://h/", buf=bytearray(8)))
        assert bytes(r.body) == b"ok" and r.headers == {"retry-after": "7", "content-length": "2"}, piece
        assert FakeConn.last.widest <= config.HTTP_LINE_BYTES  # the line buffer did not grow


def test_malformed_responses_raise_oserror():
    for bad in (b"", b"HTTP/1.1 abc\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 200 + b"\r\n"):
        e = support.raises(OSError, _with_fake, bad, 16, lambda: http.request("GET", "http://h/", buf=bytearray(32)))
        assert FakeConn.last.closed, bad
        assert str(e)


def test_writer_body_counted_then_sent_identically():
    pieces = ["{", '"k":', "\"é\"", b",", memoryview(b'"n":12}')]

    def writer(write):
        for p in pieces:
            write(p)
    r = _with_fake(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 4096,
                   lambda: http.request("POST", "http://h/p", None, writer))
    assert r.status == 200
    sent = bytes(FakeConn.last.sent)
    head, body = sent.split(b"\r\n\r\n", 1)
    assert body == '{"k":"é","n":12}'.encode()
    assert b"Content-Length: %d" % len(body) in head
