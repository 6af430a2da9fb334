"""What a device on the LAN without the password can hold of the board's web server (docs/
security.md): a request head is bounded in bytes and in time as a whole, a body that
stalls is dropped, a body over the cap is refused before it is read, malformed form data
is a 400 (both runtimes' boards, as a hostile client sends them)."""
import socket
import threading
import time
import urllib.request


def _closed(s, timeout_s):
    """Read until the server closes ``s``; what it sent (b"" when it sent nothing)."""
    s.settimeout(timeout_s)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return got
            got += chunk
    except ConnectionResetError:
        return got


def _raw(board, data):
    s = socket.create_connection(("127.0.0.1", board.web_port), timeout=10)
    s.sendall(data)
    return s


def test_a_head_too_long_is_cut_and_a_bad_form_or_a_huge_body_is_refused(web_board):
    head = b"GET /login HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(12))
    got = _closed(_raw(web_board, head + b"\r\n"), 15)
    assert not got.startswith(b"HTTP/1.0 200") and not got.startswith(b"HTTP/1.1 200"), got[:100]
    for body in (b"password=%zz%", b"\xff\xfe=\xff"):
        s = _raw(web_board, b"POST /login HTTP/1.0\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert _closed(s, 15).split(b"\r\n")[0].split()[1] == b"400", body
    s = _raw(web_board, b"POST /login HTTP/1.0\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                         b"Content-Length: 3000000\r\n\r\npassword=")
    assert _closed(s, 15).split(b"\r\n")[0].split()[1] == b"413"
    with urllib.request.urlopen(web_board.web_url + "/login", timeout=10) as r:
        assert r.status == 200  # and it serves on


def test_a_trickled_head_and_a_stalled_body_are_dropped_in_seconds(web_board):
    done = {}

    def trickle():  # one header line every 2 s: each line in time, the head as a whole not
        s = _raw(web_board, b"GET /login HTTP/1.1\r\n")
        t0 = time.time()
        try:
            for i in range(12):
                time.sleep(2)
                s.sendall(b"X-%d: a\r\n" % i)
            s.sendall(b"\r\n")
            done["trickle"] = (_closed(s, 5), time.time() - t0)
        except OSError:
            done["trickle"] = (b"", time.time() - t0)

    def stall():  # a body announced and never sent
        s = _raw(web_board, b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                            b"Content-Length: 30000\r\n\r\npassword=")
        t0 = time.time()
        done["stall"] = (_closed(s, 30), time.time() - t0)

    ts = [threading.Thread(target=trickle), threading.Thread(target=stall)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    got, waited = done["trickle"]
    assert not got.startswith(b"HTTP/1.1 200") and waited < 20, (got[:80], waited)
    got, waited = done["stall"]
    assert b" 200 " not in got[:20] and 8 <= waited < 20, (got[:80], waited)
