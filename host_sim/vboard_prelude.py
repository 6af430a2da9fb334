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


class _RomPartition:
    """The board's ROMFS partition: ``romfs.bin`` in DIR, ``MIMI_VBOARD_ROMFS_BYTES`` long.

    A board with a MicroPython built with ROMFS, flashed by ``tools/flash.sh flash``, has
    a ``romfs`` partition, which the ESP32 port memory-maps, mounts at /rom and writes
    through ``vfs.rom_ioctl`` (what ``mpremote romfs deploy`` calls). This unix port has
    ``vfs.VfsRom`` but no ``rom_ioctl``, so here is one, after the ioctl numbers of
    MicroPython's docs (vfs.rom_ioctl): 1 count, 2 the memory, 3 prepare (erase), 4
    write, 5 done, 6 the smallest prepare. The memory is a bytearray in this board's heap
    (a board maps flash), allocated first; host_sim/vboard.py adds its size to the heap.
    Without MIMI_VBOARD_ROMFS_BYTES the board is a MicroPython without ROMFS support.
    """

    BLOCK = 4096

    def __init__(self, size):
        self.mem = bytearray(size)  # erased flash reads FF; filled in blocks, no second copy
        mv, ff = memoryview(self.mem), b"\xff" * self.BLOCK
        for i in range(0, size, self.BLOCK):
            n = min(self.BLOCK, size - i)
            mv[i:i + n] = ff[:n]
        try:
            with open("romfs.bin", "rb") as f:  # DIR: the process's own folder
                f.readinto(self.mem)
        except OSError:
            pass

    def _save(self, offset, n):
        # Each write lands in romfs.bin at once, as on flash: a deploy cut off half way
        # leaves half an image, as it would on a board.
        try:
            f = open("romfs.bin", "r+b")
        except OSError:
            f = open("romfs.bin", "wb")
        with f:
            f.seek(offset)
            f.write(memoryview(self.mem)[offset:offset + n])

    def ioctl(self, op, *args):
        if op == 1:
            return 1
        if args and args[0] != 0:
            return -22  # EINVAL: one partition
        if op == 2:
            return memoryview(self.mem)
        if op == 3:  # (id, nbytes) or (id, offset, nbytes): erase, as flash before a write
            offset, n = (0, args[1]) if len(args) == 2 else (args[1], args[2])
            if offset < 0 or offset + n > len(self.mem):
                return -22
            ff = b"\xff" * self.BLOCK  # a sector at a time: the partition is in this heap too
            for at in range(offset, offset + n, self.BLOCK):
                k = min(self.BLOCK, offset + n - at)
                self.mem[at:at + k] = ff[:k]
            self._save(offset, n)
            return self.BLOCK
        if op == 4:  # (id, offset, buf)
            offset, buf = args[1], args[2]
            if offset < 0 or offset + len(buf) > len(self.mem):
                return -22
            self.mem[offset:offset + len(buf)] = buf
            self._save(offset, len(buf))
            return 0
        if op == 5:
            return 0
        if op == 6:
            return self.BLOCK
        return -22


def _with_rom_ioctl(size):
    # The built-in vfs module takes no new attribute: the board's "vfs" is a copy of it
    # with rom_ioctl, put where import finds it first.
    try:
        part = _RomPartition(size)
    except MemoryError:
        print("romfs: no room for a %d-byte partition in this heap: none emulated" % size)
        return False

    class _Vfs:
        pass

    m = _Vfs()
    for k in dir(vfs):
        if not k.startswith("__"):
            setattr(m, k, getattr(vfs, k))
    m.rom_ioctl = part.ioctl
    sys.modules["vfs"] = m
    if part.mem[:3] == b"\xd2\xcd\x31":  # a ROMFS image: mounted as the port does at boot
        try:
            vfs.mount(vfs.VfsRom(memoryview(part.mem)), "/rom")
            return True
        except OSError as e:
            print("romfs: not mounted:", e)
    return False


vfs.umount("/")
vfs.mount(_Flash(), "/")
os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]  # as on the ESP32 port
if int(os.getenv("MIMI_VBOARD_ROMFS_BYTES") or 0) > 0 and _with_rom_ioctl(int(os.getenv("MIMI_VBOARD_ROMFS_BYTES"))):
    # Where the port puts them: mp_init() mounts /rom and adds /rom and /rom/lib, then the
    # ESP32 port's main adds /lib (MicroPython docs, "Working with ROMFS").
    sys.path[2:2] = ["/rom", "/rom/lib"]


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
