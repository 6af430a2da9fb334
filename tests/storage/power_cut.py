"""Cut the power between any two steps of a write (both runtimes; used by the storage tests).

``install(k)`` routes ``mimi.storage.fs``'s file operations through a counter: every
open, every chunk written, every close, rename and remove is one step, and step ``k``
fails with ``Cut`` as a power cut would: a chunk being written lands half-way, and after
the cut nothing else happens (a later close only releases the handle, a later rename or
remove does nothing).

``each_cut(setup, op, verify)`` runs ``op`` once whole, then once for every step with
the cut at that step, calling ``verify()`` after each; returns the number of steps.
"""
import os

from mimi.storage import fs


class Cut(Exception):
    pass


class _Harness:
    def __init__(self, k):
        self.k = k
        self.n = 0
        self.dead = False

    def step(self):
        if self.dead:
            raise Cut("after the cut")
        self.n += 1
        if self.k is not None and self.n == self.k:
            self.dead = True
            return True
        return False

    def open(self, path, mode="r"):
        if self.step():
            raise Cut("cut at open")
        return _File(open(path, mode), self)

    def rename(self, a, b):
        if self.step():
            raise Cut("cut at rename")
        os.rename(a, b)

    def remove(self, p):
        if self.step():
            raise Cut("cut at remove")
        os.remove(p)


class _File:
    def __init__(self, f, h):
        self.f = f
        self.h = h

    def write(self, b):
        if self.h.step():
            half = len(b) // 2
            if half:
                self.f.write(bytes(b[:half]))
            raise Cut("cut while writing")
        return self.f.write(b)

    def read(self, *a):
        return self.f.read(*a)

    def readinto(self, b):
        return self.f.readinto(b)

    def seek(self, *a):
        return self.f.seek(*a)

    def close(self):
        if self.h.dead:
            self.f.close()  # what reached the file stays, nothing more happens
            return
        if self.h.step():
            self.f.close()
            raise Cut("cut at close")
        self.f.close()


_saved = []


def install(k):
    h = _Harness(k)
    _saved.append((fs._open, fs._rename, fs._remove))
    fs._open = h.open
    fs._rename = h.rename
    fs._remove = h.remove
    return h


def uninstall():
    fs._open, fs._rename, fs._remove = _saved.pop()


def each_cut(setup, op, verify):
    """Run ``op`` whole and then cut at each step; ``verify()`` after every run."""
    setup()
    h = install(None)
    try:
        op()
    finally:
        uninstall()
    verify()
    total = h.n
    assert total >= 2, "too few steps to be a real write: %d" % total
    for k in range(1, total + 1):
        setup()
        install(k)
        try:
            op()
            cut = False
        except Cut:
            cut = True
        finally:
            uninstall()
        assert cut, "step %d of %d was not cut" % (k, total)
        verify()
    return total
