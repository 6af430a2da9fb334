"""The Feishu channel's own logic without a server (both runtimes): reconnecting on the
server's terms, the ClientConfig it takes, frames it acknowledges or not."""
import support

from mimi import bus, seam
from mimi.channels.feishu import Feishu, FsError
from mimi.net import pbbp2, ws

RUNTIMES = ("cpython", "micropython")


def _wait(ch, now):
    return seam.ticks_diff(ch.connect_at, now)


def test_reconnects_wait_as_the_server_says():
    support.fresh_flash()
    ch = Feishu(bus.Bus(2, 2))
    ch._configure({"PingInterval": 90, "ReconnectCount": 2, "ReconnectInterval": 30, "ReconnectNonce": 10,
                   "Other": 5})
    assert ch.conf == {"PingInterval": 90, "ReconnectCount": 2, "ReconnectInterval": 30, "ReconnectNonce": 10}
    ch._configure({"PingInterval": "soon", "ReconnectInterval": -5})  # malformed: kept as they were
    assert ch.conf["PingInterval"] == 90 and ch.conf["ReconnectInterval"] == 30
    now = seam.ticks_ms()
    ch._lost(now, OSError("gone"))
    assert 0 <= _wait(ch, now) <= 10000  # the first try: a random wait up to the nonce
    ch._lost(now, OSError("gone"))
    assert _wait(ch, now) == 30000  # then every interval
    ch._lost(now, OSError("gone"))
    assert _wait(ch, now) == 600000  # the server's count is spent: slowly from now on
    ch.tries = 0
    ch._lost(now, FsError(10014, "app secret invalid", 400))
    assert _wait(ch, now) == 300000 and ch.tries == 0  # a wrong secret: long, not a try
    ch._lost(now, ws.WsRefused(403, {"handshake-status": "514", "handshake-autherrcode": "1000040350"}))
    assert _wait(ch, now) == 300000  # too many connections
    ch._lost(now, FsError(1, "system busy", 200))
    assert 0 <= _wait(ch, now) <= 10000
    ch._lost(now, FsError(502, "HTTP 502", 502))  # the server's trouble: as usual
    assert _wait(ch, now) == 30000 and ch.errors == 7


class _Ws:
    def __init__(self):
        self.sent = []

    def send(self, data, opcode=ws.OP_BINARY):
        self.sent.append(pbbp2.decode(bytes(data)))


def _event_frame(payload, mid="f1", n=1, i=0, kind="event"):
    return bytes(pbbp2.encode({"SeqID": 5, "LogID": 6, "service": 7, "method": 1,
                               "headers": [["type", kind], ["message_id", mid], ["sum", str(n)], ["seq", str(i)]],
                               "payload": payload}))


def test_frames_acknowledged_as_the_sdk_does():
    support.fresh_flash()
    b = bus.Bus(4, 4)
    ch = Feishu(b, bufs=(bytearray(256), bytearray(256)))
    ch.ws = _Ws()
    now = seam.ticks_ms()
    ch._frame((ws.OP_BINARY, _event_frame(b'{"header": {"event_type": "other.event"}}')), now)
    a = ch.ws.sent[-1]
    assert a["SeqID"] == 5 and a["service"] == 7 and bytes(a["payload"]) == b'{"code":200}'
    assert pbbp2.header(a, "biz_rt") is not None and pbbp2.header(a, "message_id") == "f1"
    ch._frame((ws.OP_BINARY, _event_frame(b"not json")), now)
    assert bytes(ch.ws.sent[-1]["payload"]) == b'{"code":500}'  # handling failed: said so
    ch._frame((ws.OP_BINARY, _event_frame(b"{}", kind="card")), now)  # card callbacks: no ack
    ch._frame((ws.OP_BINARY, None), now)  # over the buffer: dropped
    assert len(ch.ws.sent) == 2
    ch._frame((ws.OP_BINARY, _event_frame(b'{"hea', "f2", 2, 0)), now)  # the first of two parts: wait
    assert len(ch.ws.sent) == 2 and "f2" in ch.parts
    ch._frame((ws.OP_BINARY, _event_frame(b'der": {}}', "f2", 2, 1)), now)
    assert len(ch.ws.sent) == 3 and bytes(ch.ws.sent[-1]["payload"]) == b'{"code":200}' and not ch.parts
    pong = bytes(pbbp2.encode({"SeqID": 0, "LogID": 0, "service": 7, "method": 0, "headers": [["type", "pong"]],
                               "payload": b'{"PingInterval": 42}'}))
    ch._frame((ws.OP_BINARY, pong), now)
    assert ch.conf["PingInterval"] == 42 and len(ch.ws.sent) == 3
    support.raises(ValueError, ch._frame, (ws.OP_BINARY, _event_frame(b"x", "f3", 99, 0)), now)


class _Quiet(_Ws):
    """A long connection where nothing comes."""

    def __init__(self, last_ms):
        _Ws.__init__(self)
        self.last_ms = last_ms
        self.closed = False

    def recv(self, timeout_ms=0):
        return None

    def close(self):
        self.closed = True


def test_pings_on_the_interval_and_a_silent_connection_is_dropped():
    from mimi import config

    support.fresh_flash()
    config.set("feishu_app_id", "cli_FAKE")
    config.set("feishu_app_secret", "FAKE")
    config.set("feishu_domain", "http://127.0.0.1:9")
    ch = Feishu(bus.Bus(2, 2), bufs=(bytearray(64), bytearray(64)))
    ch.tick(seam.ticks_ms())  # takes the settings (and fails to reach the dead address)
    now = seam.ticks_ms()
    ch.ws = q = _Quiet(now)
    ch.service, ch.ping_at = 7, now
    ch.conf["PingInterval"] = 1
    ch.tick(now)
    assert len(q.sent) == 1 and q.sent[0]["method"] == 0 and q.sent[0]["service"] == 7
    assert pbbp2.header(q.sent[0], "type") == "ping"
    ch.tick(now)
    assert len(q.sent) == 1  # not again before the interval
    q.last_ms = seam.ticks_add(now, -3500)  # silent for over three intervals
    ch.tick(now)
    assert ch.ws is None and q.closed and "silent" in ch.why
