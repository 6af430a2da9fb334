"""The setup portal's DNS asked by a real client (dnspython) over UDP (CPython): every A
query names the board, a malformed packet gets no answer and does not stop it."""
import socket
import threading

import dns.flags
import dns.message
import dns.query
import dns.rdatatype
import pytest

from mimi.net import captive_dns


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture
def responder():
    port = _free_udp_port()
    r = captive_dns.Responder("192.168.4.1", port, "127.0.0.1")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            r.poll()
            stop.wait(0.01)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield r, port
    stop.set()
    t.join(2)
    r.close()


def test_a_real_client_gets_the_board_for_any_name(responder):
    r, port = responder
    for host in ("connectivitycheck.gstatic.com", "captive.apple.com", "www.msftconnecttest.com",
                 "detectportal.firefox.com", "example.org"):
        ans = dns.query.udp(dns.message.make_query(host, "A"), "127.0.0.1", port=port, timeout=2)
        assert ans.flags & dns.flags.QR and ans.flags & dns.flags.AA
        (rrset,) = ans.answer
        assert rrset.name.to_text() == host + "."
        assert [a.address for a in rrset] == ["192.168.4.1"]
    assert r.answered == 5


def test_edns_and_aaaa_queries(responder):
    r, port = responder
    q = dns.message.make_query("example.org", "A", use_edns=0, payload=1232)
    ans = dns.query.udp(q, "127.0.0.1", port=port, timeout=2)
    assert [a.address for a in ans.answer[0]] == ["192.168.4.1"]
    ans = dns.query.udp(dns.message.make_query("example.org", "AAAA"), "127.0.0.1", port=port, timeout=2)
    assert ans.answer == [] and ans.rcode() == 0  # the client falls back to IPv4


def test_garbage_gets_no_answer_and_the_next_query_does(responder):
    r, port = responder
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    s.sendto(b"\x00\x01garbage", ("127.0.0.1", port))
    with pytest.raises(socket.timeout):
        s.recvfrom(512)
    s.close()
    ans = dns.query.udp(dns.message.make_query("example.org", "A"), "127.0.0.1", port=port, timeout=2)
    assert ans.answer and r.ignored == 1


def test_answers_parse_for_dnspython_with_every_query_shape():
    # answer() alone, for queries as dnspython builds them (ids, flags, EDNS options)
    for qtype in ("A", "AAAA", "MX", "TXT", "HTTPS", "ANY"):
        q = dns.message.make_query("a.example.net", qtype, use_edns=0, want_dnssec=True)
        wire = captive_dns.answer(q.to_wire(), bytes((10, 0, 0, 1)))
        m = dns.message.from_wire(wire)
        assert m.id == q.id and q.is_response(m)
        want = ["10.0.0.1"] if qtype in ("A", "ANY") else []
        assert [a.address for rr in m.answer for a in rr] == want
