"""The proxy setting (``mimi.net.tunnel``) as text: parsing, showing it without its password, and ``no_proxy``
(both runtimes). The wire is tested against real proxies in ``test_proxy.py``."""
from mimi import config
from mimi.net import proxy, tunnel
import support

RUNTIMES = ("cpython", "micropython")


def test_parse_both_kinds_with_and_without_credentials():
    assert tunnel.parse("http://10.0.0.2:3128") == ("http", "10.0.0.2", 3128, None, None)
    assert tunnel.parse(" socks5://ann:pw@proxy.lan:1080/ ") == ("socks5", "proxy.lan", 1080, "ann", "pw")
    assert tunnel.parse("socks5h://[fd00::1]:1080") == ("socks5", "fd00::1", 1080, None, None)
    # %XX for what the URL cannot hold; the last "@" ends the credentials
    assert tunnel.parse("HTTP://a%40b:p%3Aw@d@h:8080") == ("http", "h", 8080, "a@b", "p:w@d")
    assert tunnel.parse("http://ann:@h:1") == ("http", "h", 1, "ann", "")
    for off in ("", "off", "none", None):
        assert tunnel.parse(off) is None


def test_malformed_proxies_are_refused_without_showing_the_password():
    for bad in ("proxy.lan:3128", "ftp://h:21", "http://h", "http://h:0", "http://h:70000", "socks5://:1080",
                "http://u:secretpw@h", "http://h:80/path", "socks4://h:1080"):
        e = support.raises(ValueError, tunnel.parse, bad)
        assert "secretpw" not in str(e) and "host:port" in str(e), bad


def test_shown_masks_only_the_password():
    assert tunnel.shown("http://ann:secretpw@10.0.0.2:3128") == "http://ann:****@10.0.0.2:3128"
    assert tunnel.shown("socks5://ann@h:1080") == "socks5://ann:****@h:1080"
    assert tunnel.shown("socks5://h:1080") == "socks5://h:1080"
    support.fresh_flash()
    config.set("proxy", "socks5://ann:s3cr@t@h:1080")
    assert config.masked("proxy") == "socks5://ann:****@h:1080"
    assert config.is_secret("proxy") and not config.is_secret("no_proxy")
    config.reset("proxy")  # the settings outlive the test where tests share a process


def test_no_proxy_default_keeps_the_lan_and_loopback_direct():
    support.fresh_flash()
    assert config.get("no_proxy") == "local"
    for h in ("localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "10.1.2.3", "172.16.0.9", "172.31.255.1",
              "192.168.1.20", "169.254.1.1", "::1", "fe80::1", "febf::2", "fd12::3", "nas", "printer.local", "a.localhost"):
        assert tunnel.direct(h), h
    for h in ("api.telegram.org", "api.anthropic.com", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:db8::1", "fec0::1",
              "11.0.0.1", "local.example.com"):
        assert not tunnel.direct(h), h


def test_no_proxy_lists_hosts_domains_ranges_and_all():
    support.fresh_flash()
    config.set("no_proxy", "example.org, .corp.lan,100.64.0.0/10")
    assert tunnel.direct("example.org") and tunnel.direct("api.example.org") and tunnel.direct("EXAMPLE.ORG.")
    assert tunnel.direct("x.corp.lan") and tunnel.direct("corp.lan")
    assert tunnel.direct("100.64.0.1") and tunnel.direct("100.127.255.255") and not tunnel.direct("100.128.0.1")
    assert not tunnel.direct("badexample.org") and not tunnel.direct("localhost")  # local is no longer listed
    config.set("no_proxy", "local,ollama.home")
    assert tunnel.direct("ollama.home") and tunnel.direct("192.168.0.5") and not tunnel.direct("openai.com")
    config.set("no_proxy", "*.corp.lan,,")
    assert tunnel.direct("a.corp.lan") and not tunnel.direct("api.telegram.org")
    config.set("no_proxy", "*")
    assert tunnel.direct("api.telegram.org")
    for none in ("none", ""):
        config.set("no_proxy", none)
        assert not tunnel.direct("localhost") and not tunnel.direct("127.0.0.1")
    config.reset("no_proxy")


class _Wire:
    """A stand-in ``seam.Conn`` to the proxy: serves ``reply``, records what is written."""
    reply = b""
    last = None

    def __init__(self, host, port, timeout_ms, ctx=None):
        self.host, self.port = host, port
        self.sent = bytearray()
        self.data, self.pos = _Wire.reply, 0
        self.via = None
        self.closed = False
        _Wire.last = self

    def readinto(self, mv, timeout_ms):
        k = min(len(mv), 3, len(self.data) - self.pos)  # in small pieces
        mv[:k] = self.data[self.pos:self.pos + k]
        self.pos += k
        return k

    def write(self, data, timeout_ms):
        self.sent.extend(bytes(data))

    def close(self):
        self.closed = True


def _wire(setting, reply, host="api.telegram.org", port=443):
    from mimi import seam

    support.fresh_flash()
    config.set("proxy", setting)
    config.set("no_proxy", "none")
    real, seam.Conn = seam.Conn, _Wire
    _Wire.reply = reply
    try:
        return proxy.connect(host, port, None, 1000)
    finally:
        seam.Conn = real
        config.reset("proxy")  # the settings outlive the test where tests share a process
        config.reset("no_proxy")


def test_http_connect_bytes_with_basic_auth_of_the_decoded_credentials():
    c = _wire("http://a%40b:p%3Aw@proxy.lan:3128", b"HTTP/1.1 200 Connection established\r\nX: y\r\n\r\n")
    assert (c.host, c.port, c.via) == ("proxy.lan", 3128, "proxy proxy.lan:3128")
    # base64 of "a@b:p:w"
    assert bytes(c.sent) == (b"CONNECT api.telegram.org:443 HTTP/1.1\r\nHost: api.telegram.org:443\r\n"
                             b"Proxy-Authorization: Basic YUBiOnA6dw==\r\n\r\n")
    e = support.raises(OSError, _wire, "http://proxy.lan:3128", b"HTTP/1.1 200 OK\r\n\r\nEXTRA")
    assert "sent data after its answer" in str(e) and _Wire.last.closed
    e = support.raises(OSError, _wire, "http://proxy.lan:3128", b"HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno!")
    assert str(e) == "proxy proxy.lan:3128 refused a tunnel to api.telegram.org:443 (403 Forbidden)"
    e = support.raises(OSError, _wire, "http://proxy.lan:3128", b"HTTP/1.1 200")
    assert str(e) == "proxy proxy.lan:3128 closed the connection"


def test_socks5_bytes_for_a_name_and_for_an_address():
    ok = b"\x05\x00\x00\x01\x0a\x00\x00\x01\x04\x38"  # succeeded, bound to 10.0.0.1:1080
    c = _wire("socks5://a%40b:p%3Aw@10.0.0.2:1080", b"\x05\x02" + b"\x01\x00" + ok)
    assert bytes(c.sent) == (b"\x05\x02\x00\x02" + b"\x01\x03a@b\x03p:w"
                             + b"\x05\x01\x00\x03\x10api.telegram.org\x01\xbb")
    c = _wire("socks5://10.0.0.2:1080", b"\x05\x00" + b"\x05\x00\x00\x03\x04host\x00\x50", "192.168.7.9", 8080)
    assert bytes(c.sent) == b"\x05\x01\x00" + b"\x05\x01\x00\x01\xc0\xa8\x07\x09\x1f\x90"
    assert _Wire.last.pos == len(_Wire.reply)  # the bound address read to its end, nothing left
    e = support.raises(OSError, _wire, "socks5://10.0.0.2:1080", b"\x05\x00\x05\x02\x00\x01")
    assert str(e) == "proxy 10.0.0.2:1080 refused a tunnel to api.telegram.org:443 (SOCKS5: not allowed by its rules)"
    e = support.raises(OSError, _wire, "socks5://u:p@10.0.0.2:1080", b"\x05\x02\x01\x01")
    assert str(e) == "proxy 10.0.0.2:1080 refused the user name and password (SOCKS5)"
    e = support.raises(OSError, _wire, "socks5://10.0.0.2:1080", b"\x05\xff")
    assert "needs a user name and password (SOCKS5 method 255)" in str(e)
    e = support.raises(OSError, _wire, "socks5://10.0.0.2:1080", b"HTTP/1.1 400 Bad\r\n\r\n")
    assert str(e) == "proxy 10.0.0.2:1080 is not a SOCKS5 proxy"
