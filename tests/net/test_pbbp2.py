"""``mimi.net.pbbp2``: the Feishu frame, against bytes the lark-oapi SDK's protobuf wrote
(plain asserts: also run under MicroPython)."""
from mimi.net import pbbp2

RUNTIMES = ("cpython", "micropython")

# Frame(SeqID=7, LogID=1234567890123456789, service=-3, method=1, headers type=event and
# message_id=ev_1, payload b'{"k":"\xc3\xa9"}', LogIDNew="x1").SerializeToString(), by the SDK.
SDK_BYTES = (b'\x08\x07\x10\x95\x82\xa6\xef\xc7\x9e\x84\x91\x11\x18\xfd\xff\xff\xff\xff\xff\xff\xff\xff\x01 \x01'
             b'*\r\n\x04type\x12\x05event*\x12\n\nmessage_id\x12\x04ev_1B\n{"k":"\xc3\xa9"}J\x02x1')


def _raises(fn, *a):
    try:
        fn(*a)
    except ValueError:
        return True
    raise AssertionError("no ValueError")


def test_decodes_what_the_sdk_wrote():
    f = pbbp2.decode(SDK_BYTES)
    assert f["SeqID"] == 7 and f["LogID"] == 1234567890123456789
    assert f["service"] == -3 and f["method"] == 1
    assert f["headers"] == [["type", "event"], ["message_id", "ev_1"]]
    assert bytes(f["payload"]) == b'{"k":"\xc3\xa9"}'
    assert f["LogIDNew"] == "x1" and "payload_type" not in f
    assert pbbp2.header(f, "message_id") == "ev_1" and pbbp2.header(f, "sum", "1") == "1"


def test_encodes_as_the_sdk_does():
    f = pbbp2.decode(SDK_BYTES)
    assert bytes(pbbp2.encode(f)) == SDK_BYTES


def test_a_ping_frame():
    b = pbbp2.encode({"SeqID": 0, "LogID": 0, "service": 12, "method": 0, "headers": [["type", "ping"]]})
    assert bytes(b) == b"\x08\x00\x10\x00\x18\x0c\x20\x00\x2a\x0c\x0a\x04type\x12\x04ping"
    f = pbbp2.decode(b)
    assert f["method"] == 0 and "payload" not in f


def test_malformed_frames_are_refused():
    _raises(pbbp2.decode, SDK_BYTES[:-3])  # LogIDNew cut
    _raises(pbbp2.decode, b"\x08\x07")  # no LogID, service, method
    _raises(pbbp2.decode, b"\x08\xff\xff")  # varint cut
    _raises(pbbp2.decode, b"\x0b")  # wire type 3 (groups)
