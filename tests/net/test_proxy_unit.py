"""The proxy setting as text: parsing, showing it without its password, and ``no_proxy``
(both runtimes). The wire is tested against real proxies in ``test_proxy.py``."""
from mimi import config
from mimi.net import proxy
import support

RUNTIMES = ("cpython", "micropython")


def test_parse_both_kinds_with_and_without_credentials():
    assert proxy.parse("http://10.0.0.2:3128") == ("http", "10.0.0.2", 3128, None, None)
    assert proxy.parse(" socks5://ann:pw@proxy.lan:1080/ ") == ("socks5", "proxy.lan", 1080, "ann", "pw")
    assert proxy.parse("socks5h://[fd00::1]:1080") == ("socks5", "fd00::1", 1080, None, None)
    # %XX for what the URL cannot hold; the last "@" ends the credentials
    assert proxy.parse("HTTP://a%40b:p%3Aw@d@h:8080") == ("http", "h", 8080, "a@b", "p:w@d")
    assert proxy.parse("http://ann:@h:1") == ("http", "h", 1, "ann", "")
    for off in ("", "off", "none", None):
        assert proxy.parse(off) is None


def test_malformed_proxies_are_refused_without_showing_the_password():
    for bad in ("proxy.lan:3128", "ftp://h:21", "http://h", "http://h:0", "http://h:70000", "socks5://:1080",
                "http://u:secretpw@h", "http://h:80/path", "socks4://h:1080"):
        e = support.raises(ValueError, proxy.parse, bad)
        assert "secretpw" not in str(e) and "host:port" in str(e), bad


def test_shown_masks_only_the_password():
    assert proxy.shown("http://ann:secretpw@10.0.0.2:3128") == "http://ann:****@10.0.0.2:3128"
    assert proxy.shown("socks5://ann@h:1080") == "socks5://ann:****@h:1080"
    assert proxy.shown("socks5://h:1080") == "socks5://h:1080"
    support.fresh_flash()
    config.set("proxy", "socks5://ann:s3cr@t@h:1080")
    assert config.masked("proxy") == "socks5://ann:****@h:1080"
    assert config.is_secret("proxy") and not config.is_secret("no_proxy")


def test_no_proxy_default_keeps_the_lan_and_loopback_direct():
    support.fresh_flash()
    assert config.get("no_proxy") == "local"
    for h in ("localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "10.1.2.3", "172.16.0.9", "172.31.255.1",
              "192.168.1.20", "169.254.1.1", "::1", "fe80::1", "febf::2", "fd12::3", "nas", "printer.local", "a.localhost"):
        assert proxy.direct(h), h
    for h in ("api.telegram.org", "api.anthropic.com", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:db8::1", "fec0::1",
              "11.0.0.1", "local.example.com"):
        assert not proxy.direct(h), h


def test_no_proxy_lists_hosts_domains_ranges_and_all():
    support.fresh_flash()
    config.set("no_proxy", "example.org, .corp.lan,100.64.0.0/10")
    assert proxy.direct("example.org") and proxy.direct("api.example.org") and proxy.direct("EXAMPLE.ORG.")
    assert proxy.direct("x.corp.lan") and proxy.direct("corp.lan")
    assert proxy.direct("100.64.0.1") and proxy.direct("100.127.255.255") and not proxy.direct("100.128.0.1")
    assert not proxy.direct("badexample.org") and not proxy.direct("localhost")  # local is no longer listed
    config.set("no_proxy", "local,ollama.home")
    assert proxy.direct("ollama.home") and proxy.direct("192.168.0.5") and not proxy.direct("openai.com")
    config.set("no_proxy", "*.corp.lan,,")
    assert proxy.direct("a.corp.lan") and not proxy.direct("api.telegram.org")
    config.set("no_proxy", "*")
    assert proxy.direct("api.telegram.org")
    for none in ("none", ""):
        config.set("no_proxy", none)
        assert not proxy.direct("localhost") and not proxy.direct("127.0.0.1")
