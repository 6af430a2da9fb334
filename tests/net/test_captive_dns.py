"""The setup portal's DNS answers (mimi.net.captive_dns): packets built byte by byte as
RFC 1035 section 4.1 lays them out, checked field by field (both runtimes). A real
client (dnspython) asks it over UDP in test_captive_dns_client.py."""
import struct

from mimi.net import captive_dns

RUNTIMES = ("cpython", "micropython")

IP = bytes((192, 168, 4, 1))


def name(n):
    """A QNAME: length-prefixed labels and the root's 0."""
    out = b""
    for label in n.split("."):
        out += bytes((len(label),)) + label.encode()
    return out + b"\x00"


def query(qname, qtype=1, qclass=1, qid=0x1234, flags=0x0100, qdcount=1, extra=b""):
    return struct.pack(">HHHHHH", qid, flags, qdcount, 0, 0, 0) + name(qname) + struct.pack(">HH", qtype, qclass) + extra


def fields(r):
    return struct.unpack(">HHHHHH", r[:12])


def test_an_a_query_gets_the_board_address():
    q = query("connectivitycheck.gstatic.com")
    r = captive_dns.answer(q, IP)
    qid, flags, qd, an, ns, ar = fields(r)
    assert qid == 0x1234
    assert flags & 0x8000 and flags & 0x0400  # QR (a response), AA
    assert flags & 0x0100  # RD copied
    assert flags & 0x0F == 0  # NOERROR
    assert (qd, an, ns, ar) == (1, 1, 0, 0)
    end = 12 + len(name("connectivitycheck.gstatic.com")) + 4
    assert r[12:end] == q[12:end]  # the question comes back as asked
    rr = r[end:]
    assert rr[:2] == b"\xc0\x0c"  # the name: a pointer to the question's
    rtype, rclass, ttl, rdlen = struct.unpack(">HHIH", rr[2:12])
    assert (rtype, rclass, rdlen) == (1, 1, 4)
    assert 0 < ttl <= 300
    assert rr[12:16] == IP and len(rr) == 16


def test_other_types_get_an_empty_answer_and_any_gets_the_address():
    r = captive_dns.answer(query("example.com", qtype=28), IP)  # AAAA
    assert fields(r)[3] == 0 and fields(r)[1] & 0x0F == 0
    r = captive_dns.answer(query("example.com", qtype=255), IP)  # ANY
    assert fields(r)[3] == 1 and r[-4:] == IP


def test_edns_additional_records_are_not_echoed():
    opt = b"\x00" + struct.pack(">HHIH", 41, 1232, 0, 0)  # an OPT pseudo-record, as dig sends
    q = struct.pack(">HHHHHH", 7, 0x0120, 1, 0, 0, 1) + name("a.b") + struct.pack(">HH", 1, 1) + opt
    r = captive_dns.answer(q, IP)
    assert fields(r)[5] == 0 and r[-4:] == IP


def test_malformed_or_foreign_packets_are_ignored():
    good = query("example.com")
    assert captive_dns.answer(b"", IP) is None
    assert captive_dns.answer(good[:11], IP) is None  # a cut header
    for cut in range(12, len(good)):
        assert captive_dns.answer(good[:cut], IP) is None, cut  # cut anywhere in the question
    assert captive_dns.answer(query("example.com", flags=0x8180), IP) is None  # a response, not a query
    assert captive_dns.answer(query("example.com", flags=0x2800), IP) is None  # opcode 5 (UPDATE)
    assert captive_dns.answer(query("example.com", qdcount=2), IP) is None
    assert captive_dns.answer(query("example.com", qdcount=0), IP) is None
    pointer = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack(">HH", 1, 1)
    assert captive_dns.answer(pointer, IP) is None  # a pointer to itself: refused, no loop
    long_label = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01"
    assert captive_dns.answer(long_label, IP) is None
    too_long = query(".".join(["a" * 63] * 5))  # 320 bytes of name: over 255
    assert captive_dns.answer(too_long, IP) is None
    assert captive_dns.answer(bytes(range(256)) * 2, IP) is None  # noise


def test_ip_bytes():
    assert captive_dns.ip_bytes("192.168.4.1") == IP
    for bad in ("192.168.4", "192.168.4.256", "a.b.c.d", ""):
        try:
            captive_dns.ip_bytes(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
