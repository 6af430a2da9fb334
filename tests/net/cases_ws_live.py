"""Client half of the WebSocket client's live tests; ``test_ws_live.py`` runs each function
under CPython (in process) and under MicroPython (``mpcase``), against the ``websockets``
package's server (MIMI_T_WS, and over TLS MIMI_T_WSS with its CA in MIMI_T_CA) and a raw
socket server that sends exact bytes (MIMI_T_RAW). See ``wsservers.py``.
"""
import os

from mimi.net import certs, ws
import support


def _env(name):
    v = os.getenv(name)
    assert v, name + " is not set"
    return v


def _raises(exc, fn, *a):
    try:
        fn(*a)
    except exc as e:
        return e
    raise AssertionError("no %s" % exc.__name__)


def test_echo_text_and_binary_masked_both_ways_sizes_across_the_length_forms():
    s = ws.connect(_env("MIMI_T_WS") + "/echo", bytearray(70000))
    for n in (0, 5, 125, 126, 1000, 65535, 65536, 69000):  # 7-bit, 16-bit and 64-bit lengths
        data = bytes(i % 251 for i in range(n))
        s.send(data)
        op, got = s.recv(5000)
        assert op == ws.OP_BINARY and bytes(got) == data, n
    s.send("grüß dich", ws.OP_TEXT)
    op, got = s.recv(5000)
    assert op == ws.OP_TEXT and str(bytes(got), "utf-8") == "grüß dich"
    assert s.recv(0) is None  # nothing more: no wait
    s.ping(b"still there?")
    assert s.recv(300) is None  # the pong is taken in, not returned
    s.send(b"after the ping")
    assert bytes(s.recv(5000)[1]) == b"after the ping"
    s.close()
    assert s.closed == 1000
    _raises(ws.WsClosed, s.send, b"x")


def test_fragments_are_joined():
    s = ws.connect(_env("MIMI_T_WS") + "/frag", bytearray(256))
    op, got = s.recv(5000)
    assert op == ws.OP_TEXT and str(bytes(got), "utf-8") == "hello wörld"
    op, got = s.recv(5000)
    assert op == ws.OP_BINARY and bytes(got) == b"\x00\x01\x02"
    s.close()


def test_a_server_ping_is_answered_with_a_pong():
    s = ws.connect(_env("MIMI_T_WS") + "/ping", bytearray(256))
    op, got = s.recv(5000)
    assert bytes(got) == b"pong came"
    s.close()


def test_the_servers_close_code_and_reason_come_back():
    s = ws.connect(_env("MIMI_T_WS") + "/close", bytearray(256))
    e = _raises(ws.WsClosed, s.recv, 5000)
    assert e.args == (4001, "bye"), e.args
    assert s.closed == 4001


def test_a_message_over_the_buffer_is_dropped_and_the_next_one_read():
    s = ws.connect(_env("MIMI_T_WS") + "/big?n=5000", bytearray(1024))
    op, got = s.recv(5000)
    assert op == ws.OP_BINARY and got is None
    op, got = s.recv(5000)
    assert bytes(got) == b"after"
    s.close()


def test_extra_headers_reach_the_server():
    s = ws.connect(_env("MIMI_T_WS") + "/headers", bytearray(256), {"X-Test": "fs-1"})
    assert bytes(s.recv(5000)[1]) == b"fs-1"
    s.close()


def test_over_tls_with_the_servers_ca():
    root = support.fresh_flash()
    support.write(root + "/data/certs/ca.pem", support.read(_env("MIMI_T_CA")))
    certs.reset()
    s = ws.connect(_env("MIMI_T_WSS") + "/echo", bytearray(256))
    s.send(b"secret")
    assert bytes(s.recv(5000)[1]) == b"secret"
    s.close()


def test_tls_refuses_an_unknown_ca():
    root = support.fresh_flash()
    support.write(root + "/data/certs/ca.pem", support.read(_env("MIMI_T_BUNDLE")))
    certs.reset()
    from mimi import seam

    _raises(seam.TLSError, ws.connect, _env("MIMI_T_WSS") + "/echo", bytearray(256))


def test_a_ping_between_fragments_is_answered_and_the_message_joined():
    s = ws.connect(_env("MIMI_T_RAW") + "/fragping", bytearray(64))
    op, got = s.recv(3000)
    assert op == ws.OP_TEXT and bytes(got) == b"abcd"
    s.close()


def test_a_fragmented_message_over_the_buffer_is_dropped_whole():
    s = ws.connect(_env("MIMI_T_RAW") + "/bigfrag", bytearray(64))
    op, got = s.recv(3000)
    assert op == ws.OP_TEXT and got is None
    assert bytes(s.recv(3000)[1]) == b"ok"
    s.close()


def test_a_masked_frame_from_the_server_is_a_protocol_error():
    s = ws.connect(_env("MIMI_T_RAW") + "/masked", bytearray(64))
    assert _raises(ws.WsClosed, s.recv, 3000).args[0] == 1002


def test_text_that_is_not_utf8_closes_with_1007():
    s = ws.connect(_env("MIMI_T_RAW") + "/badutf8", bytearray(64))
    assert _raises(ws.WsClosed, s.recv, 3000).args[0] == 1007


def test_a_bad_close_code_is_a_protocol_error_and_an_empty_close_is_1005():
    s = ws.connect(_env("MIMI_T_RAW") + "/badclose", bytearray(64))
    assert _raises(ws.WsClosed, s.recv, 3000).args[0] == 1002
    s = ws.connect(_env("MIMI_T_RAW") + "/close1005", bytearray(64))
    assert _raises(ws.WsClosed, s.recv, 3000).args == (1005, "")


def test_a_refused_handshake_keeps_the_headers_asked_for():
    e = _raises(ws.WsRefused, ws.connect, _env("MIMI_T_RAW") + "/refuse", bytearray(64), None, ("handshake-msg",))
    assert e.args[0] == 403 and e.args[1]["handshake-msg"] == "no ticket"
    e = _raises(ws.WsRefused, ws.connect, _env("MIMI_T_RAW") + "/badaccept", bytearray(64))
    assert e.args[0] == 101


def test_the_end_of_the_stream_without_a_close_is_1006():
    s = ws.connect(_env("MIMI_T_RAW") + "/vanish", bytearray(64))
    assert bytes(s.recv(3000)[1]) == b"hi"
    assert _raises(ws.WsClosed, s.recv, 3000).args[0] == 1006


def test_framing_helpers():
    assert ws.header(ws.OP_TEXT, 5) == b"\x81\x05"
    assert ws.header(ws.OP_BINARY, 300, False) == b"\x02\x7e\x01\x2c"
    assert ws.header(ws.OP_BINARY, 70000, True, b"abcd") == b"\x82\xff" + (70000).to_bytes(8, "big") + b"abcd"
    b = bytearray(b"Hello")
    ws.mask(b, 0, 5, b"\x37\xfa\x21\x3d")
    assert bytes(b) == b"\x7f\x9f\x4d\x51\x58"  # RFC 6455 5.7's masked "Hello"
    assert ws.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 1.3
