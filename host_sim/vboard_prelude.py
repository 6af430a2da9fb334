# Runs first in every virtual-board process (the micropython command, run by
# host_sim/vboard.py with -i so its REPL follows, in the folder DIR that plays the
# board's flash). Host code, not firmware.
#
# The unix port's "/" is the host's "/": this swaps it for DIR, so the REPL, mpremote
# and the firmware see what a board would (/boot.py, /main.py, /lib, /data).
#
# Why not simply vfs.mount(vfs.VfsPosix(DIR), "/")? Checked on MicroPython 1.29 (unix):
# that mount builds the host path of every absolute path, and of every path an import
# looks at, in one buffer per mount, so two paths in flight at once clash:
# os.rename("/a.tmp", "/a") fails with ENOENT, and with two threads (this unix port has
# no GIL) an import in one thread makes open("/x") in the other open the wrong file
# (743 of 3000 opens failed in a test). So the root here is a small VFS in Python over
# a VfsPosix without a root: it turns each board path into a path relative to DIR (the
# process's own folder, which nothing changes), and relative paths reach the host
# untouched, whatever other threads do.
#
# The host's stand-ins (esp32, machine, network, ntptime) are imported before the swap,
# while the host's files are still visible. They keep their state in MIMI_FLASH, "/" here.
import os
import sys
import vfs

import _simflash  # noqa: F401 - the stand-ins first, while the host's files are visible
import esp32  # noqa: F401
import machine
import network  # noqa: F401
import ntptime  # noqa: F401


class _Flash:
    """The board's root file system: DIR, with "/" at its top and no way above it."""

    def __init__(self):
        self._p = vfs.VfsPosix()  # no root: paths go to the host as given
        self._cwd = "/"

    def _host(self, path):
        # A board path (absolute, or relative to the current folder) as a path relative
        # to DIR; ".." stops at the top, as on a board.
        if not path.startswith("/"):
            path = self._cwd + "/" + path
        parts = []
        for part in path.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part and part != ".":
                parts.append(part)
        return "/".join(parts) or "."

    def mount(self, readonly, mkfs):
        pass

    def umount(self):
        pass

    def open(self, path, mode):
        return self._p.open(self._host(path), mode)

    def ilistdir(self, path):
        # With sizes (a 4th item), as a board's file systems give them to mpremote.
        top = self._host(path)
        for e in self._p.ilistdir(top):
            size = 0
            if e[1] != 0x4000:
                try:
                    size = self._p.stat(top + "/" + e[0])[6]
                except OSError:
                    pass
            yield (e[0], e[1], e[2], size)

    def stat(self, path):
        return self._p.stat(self._host(path))

    def statvfs(self, path):
        return self._p.statvfs(self._host(path))

    def mkdir(self, path):
        self._p.mkdir(self._host(path))

    def rmdir(self, path):
        self._p.rmdir(self._host(path))

    def remove(self, path):
        self._p.remove(self._host(path))

    def rename(self, old, new):
        self._p.rename(self._host(old), self._host(new))

    def chdir(self, path):
        h = self._host(path)
        if not self._p.stat(h)[0] & 0x4000:
            raise OSError(20)  # ENOTDIR
        self._cwd = "/" if h == "." else "/" + h

    def getcwd(self):
        return self._cwd


vfs.umount("/")
vfs.mount(_Flash(), "/")
os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]  # as on the ESP32 port


def _watch_reset():
    # machine.reset() from a thread other than the REPL's only sets RESET_REQUESTED;
    # end the process so the virtual board powers on again, as the chip would.
    import time

    while not machine.RESET_REQUESTED:
        time.sleep_ms(200)
    os.system("kill -TERM $PPID")


def _power_on():
    import _thread

    _thread.start_new_thread(_watch_reset, ())
    mode = os.getenv("MIMI_VBOARD_BOOT")  # "all", "boot" (soft reset in the raw REPL) or "none"
    if mode == "none":
        return
    for name in ("/boot.py", "/main.py") if mode == "all" else ("/boot.py",):
        try:
            os.stat(name)
        except OSError:
            continue
        try:
            with open(name) as f:
                src = f.read()
            exec(compile(src, name, "exec"), globals())
        except SystemExit:
            raise
        except BaseException as e:  # noqa: B036 - a board still gives its REPL
            sys.print_exception(e)


_power_on()
del _power_on, vfs
