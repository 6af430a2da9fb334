"""The setup portal's DNS: every name is the board (a captive portal's DNS).

While the setup access point is open (``mimi.web.portal``), a phone or PC that joins it
asks this responder for every name it looks up; each A query is answered with the
board's own address, so the first page the browser or the OS connectivity check opens
reaches the portal. Other query types (AAAA, HTTPS, ...) get an empty NOERROR answer:
the client falls back to IPv4, which the access point serves.

Packets follow RFC 1035 section 4.1. A query is answered only when it is a standard
query (QR 0, opcode 0) with exactly one question whose name is plain labels (no
compression pointer, which a question never needs); anything else, a truncated or
malformed packet among them, is ignored: no answer, no error, nothing kept.

One UDP socket, non-blocking; ``serve()`` is an asyncio task that drains it. MicroPython's
asyncio has no datagram API (only streams), so the task looks at the socket every
``_DNS_IDLE_MS``; the answer to a query waits at most that long.
"""
from micropython import const

_DNS_PACKET_MAX_BYTES = const(512)  # RFC 1035 section 4.2.1: UDP messages are at most 512 bytes
_DNS_TTL_S = const(60)  # short: a phone forgets the portal's answers soon after setup
_DNS_IDLE_MS = const(50)  # how often serve() looks at the socket
_DNS_BURST = const(8)  # queries answered per look, so one flood does not hold the loop

_TYPE_A = const(1)
_TYPE_ANY = const(255)
_CLASS_IN = const(1)


def question_end(q):
    """Offset just past the question (QNAME, QTYPE, QCLASS) of the query ``q`` (bytes),
    or -1 when ``q`` is not one this responder answers (see the module's doc)."""
    if len(q) < 17:  # 12-byte header, the root name's 0, type and class
        return -1
    if q[2] & 0xF8 or q[4:6] != b"\x00\x01":  # QR=0, opcode=0; QDCOUNT=1
        return -1
    i = 12
    while True:
        if i >= len(q):
            return -1
        n = q[i]
        if n == 0:
            break
        if n > 63 or i - 12 + n + 1 > 254:  # a pointer or a long label; names are <= 255 bytes
            return -1
        i += n + 1
    i += 5  # the root label, QTYPE, QCLASS
    return i if i <= len(q) else -1


def answer(q, ip):
    """The response to the DNS query ``q`` (bytes) naming address ``ip`` (4 bytes), or
    None when ``q`` is to be ignored.

    The response copies the query's id, RD bit and question; it is authoritative
    (AA), says recursion is available (RA, so stub resolvers accept it) and carries one
    A record (TTL ``_DNS_TTL_S``) when the question is of type A or ANY in class IN,
    else none. Additional records of the query (EDNS's OPT) are not echoed: the answer
    is plain RFC 1035, which every resolver takes.
    """
    end = question_end(q)
    if end < 0:
        return None
    qtype = q[end - 4] << 8 | q[end - 3]
    qclass = q[end - 2] << 8 | q[end - 1]
    one = qclass == _CLASS_IN and qtype in (_TYPE_A, _TYPE_ANY)
    out = bytearray(q[:end])
    out[2] = 0x84 | (q[2] & 0x01)  # QR=1, opcode 0, AA=1, TC=0, RD as asked
    out[3] = 0x80  # RA=1, RCODE 0 (no error)
    out[6:12] = b"\x00\x01\x00\x00\x00\x00" if one else b"\x00\x00\x00\x00\x00\x00"
    if one:
        # NAME: a pointer to the question's name at offset 12; TYPE A, CLASS IN, TTL, RDLENGTH 4
        out += b"\xc0\x0c\x00\x01\x00\x01"
        out += bytes((0, 0, _DNS_TTL_S >> 8, _DNS_TTL_S & 0xFF, 0, 4))
        out += bytes(ip)
    return bytes(out)


def ip_bytes(ip):
    """A dotted IPv4 address ("192.168.4.1") as 4 bytes; ``ValueError`` when it is not one."""
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ValueError("not an IPv4 address: %s" % ip)
    return bytes(int(p) for p in parts)


class Responder:
    """A UDP socket on ``host``:``port`` that answers every A query with ``ip``.

    ``Responder("192.168.4.1")`` binds 0.0.0.0:53 (the board); the simulator and the tests
    give a high port. ``OSError`` when the port cannot be bound. One socket, no thread.
    """

    def __init__(self, ip, port=53, host="0.0.0.0"):
        import socket

        self.ip = ip_bytes(ip)
        self.answered = self.ignored = 0
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0][-1])
            s.setblocking(False)
        except BaseException:
            s.close()
            raise
        self.sock = s

    def poll(self):
        """Answer the queries waiting on the socket (at most ``_DNS_BURST``), without
        waiting; returns how many were answered. Never raises for a bad packet or a
        failed send (the client asks again)."""
        n = 0
        for _ in range(_DNS_BURST):
            try:
                q, addr = self.sock.recvfrom(_DNS_PACKET_MAX_BYTES)
            except OSError:  # EAGAIN: nothing waiting (CPython: BlockingIOError)
                break
            r = answer(q, self.ip)
            if r is None:
                self.ignored += 1
                continue
            try:
                self.sock.sendto(r, addr)
                n += 1
            except OSError:
                pass
        self.answered += n
        return n

    def close(self):
        """Close the socket; safe to call twice."""
        try:
            self.sock.close()
        except OSError:
            pass


async def serve(responder, stop=None):
    """An asyncio task answering DNS queries until ``stop`` (a list; its first item set
    True) asks it to end; closes the responder then."""
    import asyncio

    try:
        while not (stop and stop[0]):
            responder.poll()
            await asyncio.sleep(_DNS_IDLE_MS / 1000)
    finally:
        responder.close()
