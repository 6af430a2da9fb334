"""The Feishu long connection's frame: protobuf ``pbbp2.Frame``, encoded and decoded by hand.

The schema (proto2, from the lark-oapi SDK's ``lark_oapi/ws/pb/pbbp2_pb2.py``)::

    message Header { required string key = 1; required string value = 2; }
    message Frame {
        required uint64 SeqID = 1;  required uint64 LogID = 2;
        required int32 service = 3; required int32 method = 4;   // method 0 control, 1 data
        repeated Header headers = 5;
        optional string payload_encoding = 6; optional string payload_type = 7;
        optional bytes payload = 8;  optional string LogIDNew = 9;
    }

A frame here is a dict with those field names; ``headers`` is a list of ``[key, value]``
(str), ``payload`` bytes-like (a memoryview into the message when decoded: no copy).
Absent optional fields are absent keys. Wire format:
https://protobuf.dev/programming-guides/encoding/ (varints, length-delimited fields).
"""
from micropython import const

_F_HEADERS = const(5)
_F_PAYLOAD = const(8)
_INTS = ("SeqID", "LogID", "service", "method")  # fields 1-4, varints
_STRS = {6: "payload_encoding", 7: "payload_type", 9: "LogIDNew"}


def _put_varint(out, v):
    if v < 0:  # an int32 below zero: ten bytes of two's complement, as protobuf writes it
        v += 1 << 64
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _put_bytes(out, field, b):
    _put_varint(out, field << 3 | 2)
    _put_varint(out, len(b))
    out.extend(b)


def _varint(mv, i):
    """The varint at ``mv[i]``: (value, index after it). ``ValueError`` when cut or too long."""
    v = shift = 0
    while True:
        if i >= len(mv) or shift > 63:
            raise ValueError("bad frame: varint")
        b = mv[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def _fields(mv):
    """Yield ``(field, value)`` for each field of the message ``mv``: an int for varints,
    a memoryview for length-delimited ones (fixed 32/64-bit fields are skipped)."""
    i = 0
    while i < len(mv):
        key, i = _varint(mv, i)
        wt = key & 7
        if wt == 0:
            v, i = _varint(mv, i)
        elif wt == 2:
            n, i = _varint(mv, i)
            if i + n > len(mv):
                raise ValueError("bad frame: field %d cut" % (key >> 3))
            v, i = mv[i:i + n], i + n
        elif wt in (1, 5):
            i += 8 if wt == 1 else 4
            continue
        else:
            raise ValueError("bad frame: wire type %d" % wt)
        yield key >> 3, v


def _str(mv):
    return str(bytes(mv), "utf-8")


def decode(data):
    """A frame dict from its bytes (``data``: bytes-like). ``ValueError`` when malformed or
    a required field is missing."""
    f = {"headers": []}
    for k, v in _fields(memoryview(data)):
        if 1 <= k <= 4:
            if not isinstance(v, int):
                raise ValueError("bad frame: field %d" % k)
            if k > 2 and v >= 1 << 63:  # int32: a negative one came as ten bytes
                v -= 1 << 64
            f[_INTS[k - 1]] = v
        elif k == _F_HEADERS:
            h = ["", ""]
            for hk, hv in _fields(v):
                if hk in (1, 2) and not isinstance(hv, int):
                    h[hk - 1] = _str(hv)
            f["headers"].append(h)
        elif k == _F_PAYLOAD:
            f["payload"] = v
        elif k in _STRS and not isinstance(v, int):
            f[_STRS[k]] = _str(v)
    for name in _INTS:
        if name not in f:
            raise ValueError("bad frame: no " + name)
    return f


def encode(f):
    """The bytes (bytearray) of frame dict ``f``, fields in number order."""
    out = bytearray()
    for k, name in enumerate(_INTS):
        out.append((k + 1) << 3)  # wire type 0
        _put_varint(out, f.get(name) or 0)
    for key, value in f.get("headers") or ():
        h = bytearray()
        _put_bytes(h, 1, key.encode())
        _put_bytes(h, 2, value.encode())
        _put_bytes(out, _F_HEADERS, h)
    for k in (6, 7, 8, 9):
        v = f.get("payload" if k == _F_PAYLOAD else _STRS[k])
        if v is not None:
            _put_bytes(out, k, v.encode() if isinstance(v, str) else v)
    return out


def header(f, key, default=None):
    """The value of header ``key`` in frame ``f``, or ``default``."""
    for k, v in f.get("headers") or ():
        if k == key:
            return v
    return default
