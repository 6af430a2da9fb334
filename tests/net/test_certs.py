"""The shipped CA bundle parses on both runtimes; bad files are skipped, not fatal."""
import os

from mimi import seam
from mimi.net import certs
import support

RUNTIMES = ("cpython", "micropython")


def _bundle():
    here = os.getenv("MIMI_ROOT") or "."
    return support.read(here + "/spiffs_seed/certs/ca.pem")


def test_every_root_in_the_bundle_loads():
    root = support.fresh_flash()
    data = _bundle()
    support.write(root + "/data/certs/ca.pem", data)
    ders = list(certs.ders(certs.files()))
    assert len(ders) == data.count(b"-----BEGIN CERTIFICATE-----") == 8
    for d in ders:
        assert d[0] == 0x30  # a DER SEQUENCE
    ctx, n, bad = seam.tls_context(iter(ders))
    assert (n, bad) == (8, 0)
    certs.reset()
    assert certs.context() is certs.context()  # built once, shared


def test_ca_pem_first_then_others_and_junk_skipped():
    root = support.fresh_flash()
    support.write(root + "/data/certs/zz.pem", b"-----BEGIN CERTIFICATE-----\n!!!notbase64\n-----END CERTIFICATE-----\n")
    support.write(root + "/data/certs/ca.pem", _bundle())
    support.write(root + "/data/certs/aa.pem", b"# only a comment\n")
    support.write(root + "/data/certs/readme.txt", b"not a pem")
    assert certs.files() == ["/data/certs/ca.pem", "/data/certs/aa.pem", "/data/certs/zz.pem"]
    ders = list(certs.ders(certs.files()))
    assert len(ders) in (8, 9)  # the junk block decodes to nothing or to bytes mbedTLS rejects
    certs.reset()
    ctx, n, bad = seam.tls_context(iter(ders))
    assert n == 8 and n + bad == len(ders)


def test_no_folder_means_no_files():
    support.fresh_flash()
    assert certs.files() == []
