"""Updates over WiFi, receiving: a new package image, streamed into the slot not running.

The image is the package as a ROMFS image (``python -m host_sim.romfs``, what
``tools/flash.sh deploy`` writes over USB): ``mimi/*.mpy``, the data files and
``mimi/build.txt`` (the git description it was built from). Format: MicroPython's
extmod/vfs_rom.c ("ROMFS filesystem format"): records of a varuint kind, a varuint
length and a payload; the image is one record of kind 0x14a6b1 (bytes ``d2 cd 31``)
holding directories (kind 4: name length, name, records) and files (kind 5: name length,
name, a data record: 2 the bytes, or 3 a size and an offset into the image's payload).

    u = Upload(size, sha256_hex)   # checks the size and the flash, erases the slot
    u.write(chunk) ...             # as the bytes arrive (a chunk at a time, no copy kept)
    version = u.finish()           # cut? wrong SHA-256? not a mimi image? ValueError
    ota.apply(version)             # switch (one NVS write) and reset

Where it goes (``/mimi_slot.py`` has the slots): with ROMFS, straight into the other
half of the ``romfs`` partition (``ota_flash.RomPartition``); without, into the file
``OTA_INCOMING`` on the file system, then unpacked into the other slot's folder. Nothing
the running version uses is touched before ``ota.apply``: a wrong hash, a cut upload or
a power cut leaves it running, and the next boot runs it again.

RAM: one 4 KiB buffer (hashing, unpacking) and the chunk being written; the image is
never held whole (docs/heap.md, "Updates over WiFi").
"""
from micropython import const

from mimi import log, ota_flash, seam

OTA_FILES_MAX_BYTES = const(1048576)  # without ROMFS: the largest image taken
_OTA_FLASH_MARGIN_BYTES = const(65536)  # left free on the file system after unpacking
_OTA_BUF_BYTES = const(4096)
OTA_INCOMING = "/ota/incoming.img"  # without ROMFS: the image while it arrives
_ROMFS_MAGIC = b"\xd2\xcd\x31"
_NEEDED = ("mimi/__init__", "mimi/boot", "mimi/app", "mimi/ota")  # .mpy or .py: a mimi that can confirm itself

_busy = [False]  # one upload at a time


def _slots():
    import mimi_slot

    return mimi_slot


class Upload:
    """One image on its way into the slot not running.

    ``size``: the image's length in bytes (the HTTP Content-Length); ``sha256_hex``: its
    SHA-256, 64 hex digits. Raises ``ValueError`` (a message for the sender) when the
    size is 0 or over the slot (ROMFS: half the partition) or ``OTA_FILES_MAX_BYTES``,
    when the hash is malformed, or when the file system lacks room (without ROMFS: the
    image and its unpacked copy, plus ``_OTA_FLASH_MARGIN_BYTES``); ``RuntimeError``
    while another upload is under way, or while the running version is on trial (the
    other slot holds the one to go back to). Every later error leaves the running version as
    it is; call ``abort()`` on any failure to free the upload.
    """

    def __init__(self, size, sha256_hex):
        sha = str(sha256_hex or "").strip().lower()
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError("the SHA-256 must be 64 hex digits")
        if _busy[0]:
            raise RuntimeError("another update is being received")
        st = _slots().load()
        if st.get("trial"):
            # The other slot holds the version to go back to: not overwritten before this
            # one has proved itself.
            raise RuntimeError("%s is on trial until it has run healthy; send the next update after that"
                               % st.get("running", "the running version"))
        self.size = int(size)
        self.sha = sha
        self.got = 0
        self.slot = 1 - st.get("slot", 0)
        self.rom = ota_flash.rom_partition()
        self.file = None
        if self.size <= 0:
            raise ValueError("empty image")
        if self.rom is not None:
            self.offset = _slots().slot_offset(self.slot, self.rom.size)
            cap = _slots().slot_offset(1, self.rom.size)
        else:
            cap = OTA_FILES_MAX_BYTES
        if self.size > cap:
            raise ValueError("image of %d bytes; the update slot holds %d" % (self.size, cap))
        if self.rom is None:
            free = seam.flash_free()
            if free is not None and free < 2 * self.size + _OTA_FLASH_MARGIN_BYTES:
                raise ValueError("%d KB free on flash; this image needs %d KB"
                                 % (free // 1024, (2 * self.size + _OTA_FLASH_MARGIN_BYTES) // 1024))
        _busy[0] = True
        try:
            _forget_previous()  # the other slot is about to change: no going back to it
            if self.rom is not None:
                self.rom.erase(self.offset, self.size)
            else:
                _mkdirs(OTA_INCOMING.rsplit("/", 1)[0])
                self.file = open(seam.real_path(OTA_INCOMING), "wb")
        except BaseException:
            self.abort()
            raise
        log.info("ota", "receiving %d bytes into slot %d", self.size, self.slot)

    def write(self, chunk):
        """Store the next ``chunk`` (bytes, bytearray or memoryview; any length). Raises
        ``ValueError`` past the announced size."""
        n = len(chunk)
        if self.got + n > self.size:
            raise ValueError("more bytes than the announced %d" % self.size)
        if self.rom is not None:
            self.rom.write(self.offset + self.got, chunk)
        else:
            self.file.write(chunk)
        self.got += n

    def finish(self):
        """Check what was stored and make the slot ready; returns the image's version
        (``mimi/build.txt``, else "unknown"). ``ValueError``: cut short, a SHA-256 other
        than announced (computed over the bytes as stored: flash read back), not a ROMFS
        image of a mimi package, or ``.mpy`` files for another MicroPython."""
        try:
            if self.got != self.size:
                raise ValueError("cut short: %d of %d bytes" % (self.got, self.size))
            if self.file is not None:
                self.file.close()
                self.file = None
            reader = self._reader()
            try:
                h = _sha256(reader, self.size)
                if h != self.sha:
                    raise ValueError("SHA-256 mismatch: received %s, announced %s" % (h, self.sha))
                files = walk(reader, self.size)
                version = _check(reader, files)
                if self.rom is None:
                    _unpack(reader, files, _slots().FOLDERS[self.slot])
            finally:
                reader.close()
            if self.rom is None:
                _remove(OTA_INCOMING)
            log.info("ota", "slot %d holds %s, checked", self.slot, version)
            return version
        finally:
            _busy[0] = False

    def _reader(self):
        if self.rom is not None:
            return _MemReader(self.rom.view[self.offset:self.offset + self.size])
        return _FileReader(seam.real_path(OTA_INCOMING))

    def abort(self):
        """Give the upload up: free it, drop a partial file. The slot stays unused."""
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None
        if self.rom is None:
            _remove(OTA_INCOMING)
        _busy[0] = False


def _forget_previous():
    # The state's "previous" names what the other slot holds; it is overwritten now.
    s = _slots()
    st = s.load()
    if st.get("previous"):
        st["previous"] = ""
        s.save(st)


# -- reading an image: from flash (a memoryview) or from a file ---------------------------


class _MemReader:
    def __init__(self, mv):
        self.mv = mv

    def read(self, pos, n):
        return self.mv[pos:pos + n]

    def close(self):
        pass


class _FileReader:
    # Reads into one reused buffer: what read() returns is good until the next read.
    def __init__(self, path):
        self.f = open(path, "rb")
        self.buf = memoryview(bytearray(_OTA_BUF_BYTES))

    def read(self, pos, n):
        self.f.seek(pos)
        got = self.f.readinto(self.buf[:min(n, _OTA_BUF_BYTES)])
        return self.buf[:got or 0]

    def close(self):
        self.f.close()


def _sha256(reader, size):
    import binascii
    import hashlib

    h = hashlib.sha256()
    pos = 0
    while pos < size:
        part = reader.read(pos, min(_OTA_BUF_BYTES, size - pos))
        if not part:
            raise ValueError("cut short at %d bytes" % pos)
        h.update(part)
        pos += len(part)
    return binascii.hexlify(h.digest()).decode()


def _uint(reader, pos, end):
    # A varuint: big-endian, 7 bits a byte, high bit set on all but the last.
    v = 0
    while True:
        if pos >= end:
            raise ValueError("not a ROMFS image: a record runs past its end")
        b = reader.read(pos, 1)[0]
        pos += 1
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            return v, pos


def walk(reader, size):
    """The files of the ROMFS image of ``size`` bytes that ``reader.read(pos, n)``
    gives: a list of ``(path, data offset, data length)``, paths like ``mimi/app.mpy``.
    ``ValueError`` when it is not one, is cut, or names a file with ``/``, ``.`` or
    ``..`` in it."""
    if bytes(reader.read(0, 3)) != _ROMFS_MAGIC:
        raise ValueError("not a ROMFS image (no d2 cd 31 at its start)")
    n, pos = _uint(reader, 3, size)
    if pos + n > size:
        raise ValueError("not a ROMFS image: it says %d bytes, %d came" % (pos + n, size))
    out = []
    _walk(reader, pos, pos + n, "", pos, out)
    return out


def _walk(reader, pos, end, prefix, base, out):
    while pos < end:
        kind, pos = _uint(reader, pos, end)
        n, pos = _uint(reader, pos, end)
        nxt = pos + n
        if kind == 0 or nxt > end:
            raise ValueError("not a ROMFS image: a damaged record at %d" % pos)
        if kind in (4, 5):  # a directory or a file: name, then records
            ln, p = _uint(reader, pos, nxt)
            name = bytes(reader.read(p, ln)).decode()
            p += ln
            if not name or "/" in name or name in (".", ".."):
                raise ValueError("a file name the image may not have: %r" % name)
            if kind == 4:
                _walk(reader, p, nxt, prefix + name + "/", base, out)
            else:
                out.append((prefix + name,) + _data(reader, p, nxt, base))
        pos = nxt


def _data(reader, pos, end, base):
    while pos < end:
        kind, pos = _uint(reader, pos, end)
        n, pos = _uint(reader, pos, end)
        if kind == 2:  # the bytes themselves
            return pos, n
        if kind == 3:  # size, then offset into the image's payload
            size, p = _uint(reader, pos, pos + n)
            off, p = _uint(reader, p, pos + n)
            return base + off, size
        pos += n
    raise ValueError("not a ROMFS image: a file without data")


def _check(reader, files):
    # A mimi package that can run and confirm itself, compiled for this MicroPython.
    names = {f[0]: f for f in files}
    want = ota_flash.mpy_version()
    for stem in _NEEDED:
        f = names.get(stem + ".mpy") or names.get(stem + ".py")
        if f is None:
            raise ValueError("not a mimi package: no %s.mpy" % stem)
        if f[0].endswith(".mpy") and want is not None:
            head = bytes(reader.read(f[1], 2))
            if head[:1] != b"M" or head[1] != want:
                raise ValueError("%s is compiled for .mpy version %d; this MicroPython imports %d"
                                 % (f[0], head[1] if len(head) > 1 else -1, want))
    f = names.get("mimi/build.txt")
    if f is None:
        return "unknown"
    return bytes(reader.read(f[1], min(f[2], 80))).decode().split("\n")[0].strip() or "unknown"


# -- without ROMFS: unpacking into the slot's folder ---------------------------------------


def _unpack(reader, files, folder):
    """Write ``files`` into ``folder``/mimi: first into ``folder``/mimi.new, then that
    replaces the old copy (a slot not running: nothing imports from it meanwhile)."""
    new = folder + "/mimi.new"
    _remove(new)
    for path, pos, n in files:
        if path[:5] != "mimi/":
            continue  # the package only; the image holds nothing else today
        dest = new + path[4:]
        _mkdirs(dest.rsplit("/", 1)[0])
        with open(seam.real_path(dest), "wb") as out:
            done = 0
            while done < n:
                part = reader.read(pos + done, min(_OTA_BUF_BYTES, n - done))
                if not part:
                    raise ValueError("cut short in %s" % path)
                out.write(part)
                done += len(part)
    _remove(folder + "/mimi")
    import os

    os.rename(seam.real_path(new), seam.real_path(folder + "/mimi"))


def _mkdirs(path):
    import os

    cur = ""
    for part in path.split("/"):
        if part:
            cur += "/" + part
            try:
                os.mkdir(seam.real_path(cur))
            except OSError:
                pass


def _remove(path):
    """Remove the file or folder tree ``path`` (a device path); no error when missing."""
    import os

    p = seam.real_path(path)
    try:
        st = os.stat(p)
    except OSError:
        return
    if st[0] & 0x4000:
        for name in os.listdir(p):
            _remove(path + "/" + name)
        os.rmdir(p)
    else:
        os.remove(p)
