"""Client half of the HTTP client's live tests; ``test_http_live.py`` runs each function
under CPython (in process) and under MicroPython (``mpcase``), against ``rawserver``
servers it started. Parameters come from the environment:
MIMI_T_HTTP, MIMI_T_HTTPS (base URLs), MIMI_T_CA (the test CA's PEM), MIMI_T_BUNDLE (the
shipped bundle), MIMI_T_FUTURE (an HTTPS server whose certificate is not valid yet),
MIMI_T_DEAD (a URL where nothing listens), MIMI_T_RUDE (an https URL whose server answers in plain HTTP).
"""
import hashlib
import binascii
import os

from mimi import config, seam
from mimi.net import certs, http
import support


def _env(name):
    v = os.getenv(name)
    assert v, name + " is not set"
    return v


def _flash_with(*pem_paths):
    """A fresh flash whose /data/certs holds copies of ``pem_paths`` (first one as ca.pem)."""
    root = support.fresh_flash()
    for i, p in enumerate(pem_paths):
        name = "ca.pem" if i == 0 else "extra%d.pem" % i
        support.write(root + "/data/certs/" + name, support.read(p))
    certs.reset()
    return root


def test_content_length_body_and_kept_headers():
    buf = bytearray(64)
    r = http.request("GET", _env("MIMI_T_HTTP") + "/cl", buf=buf)
    assert r.status == 200
    assert bytes(r.body) == b"hello world"
    assert not r.truncated
    assert r.headers["content-type"] == "text/plain"
    assert "x-other" not in r.headers
    r = http.request("GET", _env("MIMI_T_HTTP") + "/cl", buf=buf, want=("x-other",))
    assert r.headers["x-other"] == "1"


def test_chunked_body_split_across_reads_with_extension_and_trailer():
    r = http.request("GET", _env("MIMI_T_HTTP") + "/chunked", buf=bytearray(100))
    assert r.status == 200
    assert bytes(r.body) == b"hello world"
    assert not r.truncated


def _pattern(n):
    return bytes(i % 251 for i in range(n))


def test_bodies_over_the_cap_are_truncated_and_say_so():
    buf = bytearray(4096)
    for path in ("/big?n=10000", "/bigchunked?n=10000"):
        r = http.request("GET", _env("MIMI_T_HTTP") + path, buf=buf)
        assert r.truncated, path
        assert len(r.body) == 4096
        assert bytes(r.body) == _pattern(4096)
    r = http.request("GET", _env("MIMI_T_HTTP") + "/bigchunked?n=9000", buf=bytearray(9000))
    assert not r.truncated and bytes(r.body) == _pattern(9000)
    r = http.request("GET", _env("MIMI_T_HTTP") + "/big?n=3000", buf=buf, cap=1000)
    assert r.truncated and len(r.body) == 1000


def test_body_without_length_is_read_to_close():
    r = http.request("GET", _env("MIMI_T_HTTP") + "/close", buf=bytearray(64))
    assert bytes(r.body) == b"until the end" and not r.truncated
    r = http.request("GET", _env("MIMI_T_HTTP") + "/close", buf=bytearray(5))
    assert bytes(r.body) == b"until" and r.truncated


def test_no_buffer_allocates_the_content_length_only():
    r = http.request("GET", _env("MIMI_T_HTTP") + "/cl")
    assert bytes(r.body) == b"hello world"
    assert len(r.body.obj if hasattr(r.body, "obj") else r.body) >= 11
    r = http.request("GET", _env("MIMI_T_HTTP") + "/big?n=9000")
    assert r.truncated and len(r.body) == 4096  # HTTP_BODY_MAX_BYTES


def test_a_hung_server_times_out():
    t0 = seam.ticks_ms()
    e = support.raises(OSError, http.request, "GET", _env("MIMI_T_HTTP") + "/hang", timeout_ms=400)
    took = seam.ticks_diff(seam.ticks_ms(), t0)
    assert "timed out" in str(e) or (e.args and e.args[0] == 110), repr(e)
    assert 300 <= took < 3000, took


def test_a_dripping_server_hits_the_deadline():
    t0 = seam.ticks_ms()
    e = support.raises(OSError, http.request, "GET", _env("MIMI_T_HTTP") + "/drip", timeout_ms=1000,
                       deadline_ms=1200, buf=bytearray(200000))
    took = seam.ticks_diff(seam.ticks_ms(), t0)
    assert "timed out" in str(e), repr(e)
    assert 1000 <= took < 4000, took


def test_refused_connection_is_an_oserror():
    support.raises(OSError, http.request, "GET", _env("MIMI_T_DEAD") + "/x", timeout_ms=2000)


def test_early_close_and_garbage_are_errors():
    e = support.raises(OSError, http.request, "GET", _env("MIMI_T_HTTP") + "/short", buf=bytearray(100))
    assert "closed" in str(e)
    e = support.raises(OSError, http.request, "GET", _env("MIMI_T_HTTP") + "/garbage")
    assert "malformed" in str(e)


def test_writer_body_is_streamed_with_an_exact_content_length():
    piece = "é" * 500  # 1000 bytes of UTF-8 per piece
    h = hashlib.sha256()
    calls = [0]

    def writer(write):
        calls[0] += 1
        for i in range(100):
            write(piece)
            write(b"\n")
            write(memoryview(b"0123456789")[i % 10:])
    for i in range(100):
        h.update(piece.encode())
        h.update(b"\n")
        h.update(b"0123456789"[i % 10:])
    r = http.request("POST", _env("MIMI_T_HTTP") + "/echo", {"Content-Type": "application/json"}, writer)
    info = r.json()
    assert calls[0] == 2
    assert info["len"] == 100 * 1001 + sum(10 - i % 10 for i in range(100))
    assert info["sha256"] == binascii.hexlify(h.digest()).decode()
    assert info["ctype"] == "application/json"
    r = http.request("POST", _env("MIMI_T_HTTP") + "/echo", None, "plain ü")
    assert r.json()["len"] == len("plain ü".encode())


def test_a_writer_that_changes_its_mind_is_refused():
    n = [0]

    def fickle(write):
        n[0] += 1
        write(b"x" * (10 if n[0] == 1 else 12))
    e = support.raises(ValueError, http.request, "POST", _env("MIMI_T_HTTP") + "/echo", None, fickle)
    assert "counting" in str(e)


def test_headers_with_line_breaks_are_refused():
    support.raises(ValueError, http.request, "GET", _env("MIMI_T_HTTP") + "/cl", {"X-A": "1\r\nX-B: 2"})


def test_long_header_skipped_interim_response_and_no_content():
    r = http.request("GET", _env("MIMI_T_HTTP") + "/longheader", buf=bytearray(10))
    assert r.status == 200 and bytes(r.body) == b"ok" and r.headers["retry-after"] == "7"
    assert "x-huge" not in r.headers
    r = http.request("GET", _env("MIMI_T_HTTP") + "/continue", buf=bytearray(10))
    assert r.status == 201 and bytes(r.body) == b"yes"
    r = http.request("GET", _env("MIMI_T_HTTP") + "/204", buf=bytearray(10))
    assert r.status == 204 and len(r.body) == 0
    r = http.request("GET", _env("MIMI_T_HTTP") + "/status?code=429&retry=3", buf=bytearray(10))
    assert r.status == 429 and r.headers["retry-after"] == "3"


def test_pending_request_does_not_block_other_requests():
    p = http.start("GET", _env("MIMI_T_HTTP") + "/slowhead?ms=700", buf=bytearray(16))
    assert not p.ready(0)
    t0 = seam.ticks_ms()
    assert not p.ready(100)
    assert seam.ticks_diff(seam.ticks_ms(), t0) >= 80
    # Meanwhile another request goes through (as a reply would while a long poll waits).
    r = http.request("GET", _env("MIMI_T_HTTP") + "/cl", buf=bytearray(32))
    assert bytes(r.body) == b"hello world"
    for _ in range(100):
        if p.ready(50):
            break
    assert p.ready(0)
    r = p.finish()
    assert r.status == 200 and bytes(r.body) == b"late"


def test_pending_can_be_dropped():
    p = http.start("GET", _env("MIMI_T_HTTP") + "/hang")
    assert not p.ready(50)
    p.close()
    p.close()


def test_tls_refuses_a_server_whose_ca_is_not_in_the_bundle():
    _flash_with(_env("MIMI_T_BUNDLE"))
    e = support.raises(seam.TLSError, http.request, "GET", _env("MIMI_T_HTTPS") + "/cl")
    msg = str(e)
    assert "localhost" in msg and "refused" in msg, msg


def test_a_handshake_that_breaks_off_is_worth_a_retry_not_a_refused_certificate():
    # a server answering the TLS hello in plain HTTP: no TLS record (an mbedTLS code outside
    # the X509 range, CPython's SSLError "wrong version number"): an OSError, not TLSError
    _flash_with(_env("MIMI_T_CA"))
    e = support.raises(OSError, http.request, "GET", _env("MIMI_T_RUDE") + "/cl", timeout_ms=3000)
    assert not isinstance(e, seam.TLSError) and "TLS handshake with" in str(e), repr(e)


def test_tls_accepts_it_once_its_ca_is_added():
    _flash_with(_env("MIMI_T_BUNDLE"), _env("MIMI_T_CA"))
    r = http.request("GET", _env("MIMI_T_HTTPS") + "/cl", buf=bytearray(32))
    assert r.status == 200 and bytes(r.body) == b"hello world"
    r = http.request("GET", _env("MIMI_T_HTTPS") + "/chunked", buf=bytearray(32))
    assert bytes(r.body) == b"hello world"


def test_tls_pending_and_large_upload():
    _flash_with(_env("MIMI_T_CA"))
    p = http.start("GET", _env("MIMI_T_HTTPS") + "/slowhead?ms=500", buf=bytearray(16))
    assert not p.ready(50)
    for _ in range(100):
        if p.ready(50):
            break
    assert bytes(p.finish().body) == b"late"
    body = b"z" * 50000
    r = http.request("POST", _env("MIMI_T_HTTPS") + "/echo", None, body)
    assert r.json()["len"] == 50000


def test_tls_timeout_on_a_hung_server():
    _flash_with(_env("MIMI_T_CA"))
    support.raises(OSError, http.request, "GET", _env("MIMI_T_HTTPS") + "/hang", timeout_ms=400)


def test_tls_refuses_while_the_clock_is_unset():
    _flash_with(_env("MIMI_T_CA"))
    real = seam.clock_synced
    seam.clock_synced = lambda: False
    try:
        e = support.raises(seam.TLSError, http.request, "GET", _env("MIMI_T_HTTPS") + "/cl")
    finally:
        seam.clock_synced = real
    assert "clock is not set" in str(e), str(e)


def test_tls_checks_validity_dates():
    _flash_with(_env("MIMI_T_CA"))
    e = support.raises(seam.TLSError, http.request, "GET", _env("MIMI_T_FUTURE") + "/cl")
    assert "refused" in str(e)


def test_no_certificates_is_a_clear_error():
    support.fresh_flash()
    certs.reset()
    e = support.raises(seam.TLSError, http.request, "GET", _env("MIMI_T_HTTPS") + "/cl")
    assert "no CA certificates" in str(e)


def test_tls_from_two_threads_at_once():
    _flash_with(_env("MIMI_T_CA"))
    results = []

    def worker(path):
        try:
            r = http.request("GET", _env("MIMI_T_HTTPS") + path, buf=bytearray(64))
            results.append(bytes(r.body))
        except Exception as e:  # noqa: BLE001 - reported below
            results.append(repr(e))
    # The settings store's first use imports the esp32 stand-in; the unix port has no
    # interpreter lock, so two threads importing it at once could see it half made.
    config.get("proxy")
    seam.start_thread(worker, ("/slowhead?ms=300",), 32768)
    seam.start_thread(worker, ("/cl",), 32768)
    for _ in range(300):
        if len(results) == 2:
            break
        seam.sleep_ms(20)
    assert sorted(results, key=repr) == sorted([b"hello world", b"late"], key=repr), results
    assert len(certs._ctx) == 1  # one context for both threads (one CA store in internal RAM)
