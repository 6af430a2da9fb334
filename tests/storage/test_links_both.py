"""Symbolic links under the desktop's flash folder that lead out of /data are refused on
both host runtimes (issue 14, item 13): CPython resolves them; the unix port, whose ``os``
cannot, refuses every link it finds in a listing. (Links that stay inside /data work on
CPython: tests/host_sim/test_data_links.py.)"""
import os

from mimi.storage import fs
import support

RUNTIMES = ("cpython", "micropython")


def _link(target, path):
    try:
        os.symlink(target, path)
    except AttributeError:  # MicroPython's os has no symlink; the unix port has system()
        assert os.system("ln -s '%s' '%s'" % (target, path)) == 0


def _flash():
    root = support.fresh_flash()
    support.write(root + "/nvs.json", '{"mimi": {"tg_token": ["blob", "secret-token-value"]}}')
    support.makedirs(root + "/outside")
    support.write(root + "/outside/x.md", "outside")
    fs.write("/data/memory/MEMORY.md", "# Memory\n")
    return root


def _refused(fn, *args):
    try:
        r = fn(*args)
    except OSError:
        return True
    raise AssertionError("%s%r was allowed: %r" % (fn.__name__, args, r))


def test_a_link_out_of_data_is_refused_for_reads_writes_and_listings():
    root = _flash()
    _link(root + "/nvs.json", root + "/data/leak.md")
    _link("../../nvs.json", root + "/data/memory/rel.md")
    _link(root + "/outside", root + "/data/out")
    assert _refused(fs.read, "/data/leak.md", 1000)
    assert _refused(fs.read, "/data/memory/rel.md", 1000)
    assert _refused(fs.read, "/data/out/x.md", 1000)
    assert _refused(fs.write, "/data/out/new.md", b"escaped")
    assert _refused(fs.listdir, "/data/out")
    assert _refused(fs.remove, "/data/out/x.md")
    assert not [e for e in fs.listdir("/data") if e[0] in ("leak.md", "out")]  # left out of the listing
    assert sorted(os.listdir(root + "/outside")) == ["x.md"]
    assert fs.read("/data/memory/MEMORY.md", 100)[0] == b"# Memory\n"  # the rest works


def test_a_link_made_right_after_a_listing_is_still_seen():
    root = _flash()
    assert fs.read("/data/memory/MEMORY.md", 100)[0]  # the folders are looked at (and listed)
    _link(root + "/nvs.json", root + "/data/memory/new.md")  # the same second
    assert _refused(fs.read, "/data/memory/new.md", 1000)
    os.remove(root + "/data/memory/new.md")
    fs.write("/data/memory/new.md", "a file now")
    assert fs.read("/data/memory/new.md", 100)[0] == b"a file now"
