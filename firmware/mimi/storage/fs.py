"""Safe file access under ``/data``: checked paths, capped reads, atomic writes.

Every module that touches flash uses this one (../shared/DESIGN.md, "Files on flash").
- Paths are device paths. ``check`` allows ``/data`` and what is under it (a relative
  path counts from ``/data``) and refuses ``..``, other absolute paths, empty names, NUL
  and control characters and over-long names, with a ``PathError`` naming the rule. The
  settings store (NVS) is not a file at all, so no path reaches it.
- A read names its byte cap and says when it cut (``read`` -> ``(data, truncated,
  size)``); nothing reads a file of unknown size whole.
- ``write`` is atomic: the new content goes to ``<name>.~tmp``, then a rename puts it in
  place, so a power cut at any step leaves the old content or the new, never a torn or
  empty file. This needs a file system whose rename replaces an existing file
  atomically: LittleFS, the ESP32 port's default (and POSIX file systems, where the unix
  port and CPython run). On FAT such a rename fails: ``write`` raises ``OSError`` and the
  old content stays.
- ``append`` is not atomic by default (a torn last line is the reader's to skip: session
  files); ``append(..., atomic=True)`` copies and renames, for small files.

The file operations go through ``_open``/``_rename``/``_remove`` so a test can cut the
power between any two steps.
"""
import os

from micropython import const

from mimi import config, pick, seam

# Tunables (config.py holds those shared by several modules and the settings).
_FS_NAME_MAX_BYTES = const(64)  # one name in a path; LittleFS allows 255, this leaves room
_FS_PATH_MAX_BYTES = const(200)  # a whole device path, as UTF-8

_TMP = const(".~tmp")
# The messages, by key (``mimi.pick``: one string in RAM, not one each).
_MSG = const("|text path must be text|empty path is empty|nul path contains a NUL byte"
             "|ctl path contains a control character|out only %s is reachable; %s is outside it"
             "|up '..' is not allowed in a path|gap empty name in path %s|long name longer than %d bytes: %s..."
             "|tmp names ending in .~tmp are reserved|max path longer than %d bytes"
             "|file a file name is needed, not %s itself|none no such file or folder: %s"
             "|dir %s is a folder, not a file|nodir %s is a file, not a folder|utf %s is not UTF-8 text|")

_open = open
_rename = os.rename
_remove = os.remove

_lock = seam.allocate_lock()  # one writer at a time: temp names are per file, not per thread
# The last paths ``check`` passed as they were (already normal): a turn checks the same
# few (its session file most) a dozen times or more, and a list search is one C loop
# (issue 17). Only normal paths are kept, so a hit returns what the full check would; a
# fixed list whose slots are overwritten in turn: safe from two threads without a lock.
_checked = [None, None, None, None]
_checked_at = [0]


class PathError(ValueError):
    """A path a tool or module may not use; the message names the rule."""


class NotFound(OSError):
    """No such file or folder: ``NotFound(ENOENT, message)``; ``str()`` is the message."""

    def __str__(self):
        return self.args[1]


def check(path):
    """Return the normalised device path for ``path`` or raise ``PathError``.

    ``/data/memory/./MEMORY.md`` -> ``/data/memory/MEMORY.md``; ``memory/MEMORY.md`` (relative)
    -> ``/data/memory/MEMORY.md``; one trailing ``/`` is dropped.
    Refused, each with a message naming the rule: non-text, empty, NUL or control
    characters, a path outside ``/data``, ``..``, an empty name (``//``), a name over
    ``_FS_NAME_MAX_BYTES`` or a path over ``_FS_PATH_MAX_BYTES``, names ending in the
    temporary suffix ``.~tmp``.
    """
    if not isinstance(path, str):
        raise PathError(pick(_MSG, "text"))
    if path in _checked:
        return path
    if not path.strip():
        raise PathError(pick(_MSG, "empty"))
    ascii = True
    # bytes, not characters: MicroPython makes each character of a str an interned
    # string, a search of the whole name pool (issue 17: a third of a turn's CPU)
    for c in seam.as_bytes(path):
        if c < 32 or c == 127:
            raise PathError(pick(_MSG, "nul" if c == 0 else "ctl"))
        if c > 127:
            ascii = False
    data = config.DATA
    name_max = _FS_NAME_MAX_BYTES
    n = len(path)
    k = len(data)
    # Fast path, no allocation (every file operation comes here): already normal ASCII.
    if ascii and k < n <= _FS_PATH_MAX_BYTES and path.startswith(data) and path[k] == "/" \
            and path[-1] != "/" and not ("//" in path or "/." in path or "~" in path or " " in path):
        while k < n:
            j = path.find("/", k + 1)
            if j < 0:
                j = n
            if j - k - 1 > name_max:
                break
            k = j
        else:
            i = _checked_at[0] = (_checked_at[0] + 1) % len(_checked)
            _checked[i] = path
            return path
    if path[0] == "/":
        if path != data and not path.startswith(data + "/"):
            raise PathError(pick(_MSG, "out") % (data, path))
        rest = path[len(data):]
    else:
        rest = "/" + path
    if rest.endswith("/"):
        rest = rest[:-1]
    parts = []
    for name in rest.split("/")[1:]:
        if name == "..":
            raise PathError(pick(_MSG, "up"))
        if name == ".":
            continue
        if not name.strip():
            raise PathError(pick(_MSG, "gap") % path)
        if len(name.encode()) > name_max:
            raise PathError(pick(_MSG, "long") % (name_max, name[:24]))
        if name.endswith(_TMP):
            raise PathError(pick(_MSG, "tmp"))
        parts.append(name)
    out = data + "/" + "/".join(parts) if parts else data
    if len(out.encode()) > _FS_PATH_MAX_BYTES:
        raise PathError(pick(_MSG, "max") % _FS_PATH_MAX_BYTES)
    return out


def check_file(path):
    """``check``, and the path must name a file (not ``/data`` itself)."""
    p = check(path)
    if p == config.DATA:
        raise PathError(pick(_MSG, "file") % p)
    return p


def _stat(p):
    """``os.stat`` of the device path ``p``, or None when it is missing."""
    try:
        return os.stat(seam.real_path(p))
    except OSError:
        return None


def open_read(path):
    """Open the file ``path`` for reading: ``(file, size)``; the caller closes the file.

    For readers that seek (session files read back from the end). Every read the caller
    makes must still be capped. Raises ``PathError``, ``NotFound``.
    """
    p = check_file(path)
    st = _stat(p)
    if st is None:
        raise NotFound(2, pick(_MSG, "none") % p)
    if st[0] & 0x4000:
        raise PathError(pick(_MSG, "dir") % p)
    return _open(seam.real_path(p), "rb"), st[6]


def read(path, cap, offset=0):
    """Read at most ``cap`` bytes of ``path`` from byte ``offset``.

    Returns ``(data bytes, truncated bool, size int)``: ``truncated`` is True when the file
    goes on past what was read. Raises ``PathError``, ``NotFound``.
    """
    f, size = open_read(path)
    try:
        offset = max(0, min(int(offset), size))
        n = min(int(cap), size - offset)
        if offset:
            f.seek(offset)
        data = f.read(n) if n > 0 else b""
    finally:
        f.close()
    return data, offset + len(data) < size, size


def read_text(path, cap, offset=0):
    """``read`` (from byte ``offset``, a character's start), decoded: ``(text, truncated, size)``.

    A cut inside a UTF-8 character is moved back to the character's start; bytes that
    are not UTF-8 raise ``ValueError``.
    """
    data, cut, size = read(path, cap, offset)
    if cut:
        data = data[:utf8_end(data, len(data))]
    try:
        return data.decode(), cut, size
    except UnicodeError:
        raise ValueError(pick(_MSG, "utf") % check(path))


def size(path):
    """Size in bytes, or None when the file is missing (0 for a folder)."""
    st = _stat(check(path))
    if st is None:
        return None
    return 0 if st[0] & 0x4000 else st[6]


def mtime(path):
    """Last change as unix seconds, or None when missing."""
    try:
        return seam.mtime_s(seam.real_path(check(path)))
    except OSError:
        return None


def listdir(path):
    """The folder's entries as ``[(name, is_dir, size)]`` sorted by name.

    Temporary files of unfinished writes are left out. Raises ``NotFound``, ``PathError``.
    """
    p = check(path)
    st = _stat(p)
    if st is None:
        raise NotFound(2, pick(_MSG, "none") % p)
    if not st[0] & 0x4000:
        raise PathError(pick(_MSG, "nodir") % p)
    out = []
    for n in os.listdir(seam.real_path(p)):
        st = None if n.endswith(_TMP) else _stat(p + "/" + n)
        if st is not None:
            d = st[0] & 0x4000 > 0
            out.append((n, d, 0 if d else st[6]))
    out.sort()
    return out


def makedirs(path):
    """Create the folder ``path`` and its parents; no error when it exists."""
    cur = ""
    for name in check(path)[1:].split("/"):
        cur = cur + "/" + name
        st = _stat(cur)
        if st is None:
            try:
                os.mkdir(seam.real_path(cur))
            except OSError:
                if _stat(cur) is None:
                    raise
        elif not st[0] & 0x4000:
            raise PathError(pick(_MSG, "nodir") % cur)


def open_write(path):
    """Open ``path`` for writing from its start (made, or emptied), folder made: the
    file; the caller writes it in capped pieces and closes it. Not atomic: for scratch
    files its writer removes (a photo on its way to the model). Raises ``PathError``,
    ``OSError``."""
    p = check_file(path)
    makedirs(p[:p.rfind("/")])
    return _open(seam.real_path(p), "wb")


def write(path, data, src=None, start=0, end=None, add=False):
    """Replace the file ``path`` with ``data`` (str or bytes) atomically; make its folder.

    Side effect: ``<path>.~tmp`` exists while writing, then a rename puts it in place.
    Raises ``PathError``, ``OSError`` (file system full: the old content stays).
    The one write path: ``append`` and ``copy`` pass ``src`` (bytes ``start``..``end`` of
    that file go before ``data``, when it exists) or ``add`` (``data`` written at the end
    of ``path`` itself, no temporary file). Writes go in ``FS_CHUNK_BYTES`` pieces (a cut
    power leaves a prefix, as flash would).
    """
    p = check_file(path)
    if isinstance(data, str):
        data = data.encode()
    rp = seam.real_path(p)
    step = config.FS_CHUNK_BYTES
    with _lock:
        st = _stat(p)
        if st is None:  # a file that exists has its folder: no stats of every parent per append
            makedirs(p[:p.rfind("/")])
        elif st[0] & 0x4000:
            raise PathError(pick(_MSG, "dir") % p)
        f = _open(rp, "ab") if add else _open(rp + _TMP, "wb")
        try:
            try:
                if src is not None and (src != p or st is not None):
                    buf = memoryview(bytearray(step))
                    g = _open(seam.real_path(src), "rb")
                    try:
                        if start:
                            g.seek(start)
                        left = -1 if end is None else end - start
                        while left:
                            k = g.readinto(buf if left < 0 or left >= step else buf[:left])
                            if not k:
                                break
                            f.write(buf[:k])
                            left -= k if left > 0 else 0
                    finally:
                        g.close()
                mv = memoryview(data)
                for i in range(0, len(mv), step):
                    f.write(mv[i:i + step])
            finally:
                f.close()  # a small file reaches the flash here: "no space" may come from close
        except OSError:  # a full flash: the half-written temporary file would hold its space
            if not add:
                try:
                    _remove(rp + _TMP)
                except OSError:
                    pass
            raise
        if not add:
            _rename(rp + _TMP, rp)


def append(path, data, atomic=False):
    """Add ``data`` (str or bytes) at the end of ``path``, creating it and its folder.

    ``atomic=False``: one write to the file's end; a power cut can leave part of ``data``
    (session files, whose reader skips a torn last line). ``atomic=True``: the old
    content is copied to a temporary file in ``FS_CHUNK_BYTES`` pieces, ``data`` added,
    and the copy renamed into place: old or new, never part (for small files).
    """
    p = check_file(path)
    write(p, data, p if atomic else None, 0, None, not atomic)


def copy(src, dst, start=0, end=None):
    """Copy bytes ``start``..``end`` (default: to the end) of ``src`` to a new ``dst``.

    Streamed in ``FS_CHUNK_BYTES`` pieces and atomic as ``write``. Raises ``NotFound``,
    ``PathError``.
    """
    s = check_file(src)
    if _stat(s) is None:
        raise NotFound(2, pick(_MSG, "none") % s)
    write(dst, b"", s, start, end)


def remove(path):
    """Delete a file or an empty folder. Raises ``NotFound``, ``OSError`` (folder not empty)."""
    p = check_file(path)
    st = _stat(p)
    if st is None:
        raise NotFound(2, pick(_MSG, "none") % p)
    if st[0] & 0x4000:
        os.rmdir(seam.real_path(p))
    else:
        _remove(seam.real_path(p))


def rename(src, dst):
    """Move the file ``src`` to ``dst`` (replacing ``dst`` atomically); make ``dst``'s folder."""
    s = check_file(src)
    d = check_file(dst)
    makedirs(d[:d.rfind("/")])
    with _lock:
        if _stat(s) is None:
            raise NotFound(2, pick(_MSG, "none") % s)
        _rename(seam.real_path(s), seam.real_path(d))


def lines(path, max_line=1024, at=0):
    """Yield ``(offset, line bytes)`` for each line of ``path``, without the newline, from
    byte offset ``at`` on (a line's start; 0: the whole file).

    Streams the file in ``FS_CHUNK_BYTES`` reads; a line longer than ``max_line`` comes
    in pieces of at most ``max_line`` bytes (each with its own offset), so memory stays
    bounded whatever the file holds. Raises ``NotFound``, ``PathError``.
    """
    f, size = open_read(path)
    try:
        pend = b""
        start = pos = at if at > 0 else 0
        if pos:
            f.seek(pos)
        while True:
            chunk = f.read(config.FS_CHUNK_BYTES)
            if not chunk:
                break
            i = 0
            n = len(chunk)
            while i < n:
                j = chunk.find(b"\n", i)
                pend += chunk[i:n if j < 0 else j]
                i = n if j < 0 else j + 1
                while len(pend) > max_line:
                    cut = utf8_end(pend, max_line) or max_line
                    yield start, pend[:cut]
                    start += cut
                    pend = pend[cut:]
                if j >= 0:
                    yield start, pend
                    pend = b""
                    start = pos + j + 1
            pos += n
        if pend:
            yield start, pend
    finally:
        f.close()


def utf8_end(data, end):
    """Largest ``i <= end`` such that ``data[:i]`` does not end inside a UTF-8 character.

    ``data`` is bytes, bytearray or memoryview. Only the last character before ``end`` is
    looked at, so this is O(1).
    """
    end = min(end, len(data))  # the whole buffer may still end in an unfinished character
    i = end
    while i > 0 and end - i < 4 and (data[i - 1] & 0xC0) == 0x80:
        i -= 1
    if i == 0:
        return 0
    lead = data[i - 1]
    # ASCII before the continuation bytes (or none), or a complete character: nothing cut.
    if lead < 0x80 or end - i + 1 >= (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4):
        return end
    return i - 1


def utf8_fix(data):
    """``data`` (bytes-like) itself when it is UTF-8, else a ``bytearray`` copy in which each
    byte that is not part of a valid character (RFC 3629: no overlong forms, surrogates or
    code points past U+10FFFF) is ``?``, so the length stays. Valid text costs one decode."""
    try:
        str(data, "utf-8")
        return data
    except UnicodeError:
        pass
    b = bytearray(data)
    i = 0
    n = len(b)
    while i < n:
        c = b[i]
        k = 1 if c < 0x80 else 2 if 0xC2 <= c < 0xE0 else 3 if 0xE0 <= c < 0xF0 else 4 if 0xF0 <= c < 0xF5 else 0
        if k > 1 and (i + k > n or not (0xA0 if c == 0xE0 else 0x90 if c == 0xF0 else 0x80) <= b[i + 1] <= (
                0x9F if c == 0xED else 0x8F if c == 0xF4 else 0xBF)):
            k = 0
        for j in range(i + 2, i + k):
            if b[j] & 0xC0 != 0x80:
                k = 0
        if not k:
            b[i] = 63
        i += k or 1
    return b


def utf8_start(data, start):
    """Smallest ``i >= start`` that is not inside a UTF-8 character (skips continuation bytes)."""
    n = len(data)
    i = start
    while i < n and i - start < 3 and (data[i] & 0xC0) == 0x80:
        i += 1
    return i
