"""Safe file access under ``/data``: checked paths, capped reads, atomic writes.

Every module that touches flash uses this one (../shared/DESIGN.md, "Files on flash").
- Paths are device paths. ``check`` allows ``/data`` and what is under it (a relative
  path counts from ``/data``) and refuses ``..``, other absolute paths, empty names, NUL
  and control characters and over-long names, with a ``PathError`` naming the rule. The
  settings store (NVS) is not a file at all, so no path reaches it.
- A read names its byte cap and says when it cut (``read`` -> ``(data, truncated,
  size)``); nothing reads a file of unknown size whole.
- ``write`` is atomic: the new content goes to ``<name>.~tmp``, then a rename puts it in
  place. LittleFS (the device) renames over an existing file atomically. Where a rename
  refuses to replace (FAT), the old file is first renamed to ``<name>.~bak`` and a read
  that finds the file missing takes the ``.~bak`` back, so a power cut at any step leaves
  the old content or the new, never a torn or empty file.
- ``append`` is not atomic by default (a torn last line is the reader's to skip: session
  files); ``append(..., atomic=True)`` copies and renames, for small files.

The file operations go through ``_open``/``_rename``/``_remove`` so a test can cut the
power between any two steps.
"""
import os

from mimi import config, seam

TMP_SUFFIX = ".~tmp"
BAK_SUFFIX = ".~bak"
_ENOENT = 2

_open = open
_rename = os.rename
_remove = os.remove

_lock = seam.allocate_lock()  # one writer at a time: temp names are per file, not per thread


class PathError(ValueError):
    """A path a tool or module may not use; the message names the rule."""


class NotFound(OSError):
    """No such file or folder: ``NotFound(ENOENT, message)``; ``str()`` is the message."""

    def __str__(self):
        return self.args[1] if len(self.args) > 1 else OSError.__str__(self)


def _not_found(path):
    return NotFound(_ENOENT, "no such file or folder: %s" % path)


def check(path):
    """Return the normalised device path for ``path`` or raise ``PathError``.

    ``/data/memory/./MEMORY.md`` -> ``/data/memory/MEMORY.md``; ``memory/MEMORY.md`` (relative)
    -> ``/data/memory/MEMORY.md``; one trailing ``/`` is dropped.
    Refused, each with a message naming the rule: non-text, empty, NUL or control
    characters, a path outside ``/data``, ``..``, an empty name (``//``), a name over
    ``FS_NAME_MAX_BYTES`` or a path over ``FS_PATH_MAX_BYTES``, names ending in the
    temporary suffixes this module uses.
    """
    if not isinstance(path, str):
        raise PathError("path must be text")
    if not path.strip():
        raise PathError("path is empty")
    ascii = True
    for ch in path:
        o = ord(ch)
        if o < 32 or o == 127:
            if o == 0:
                raise PathError("path contains a NUL byte")
            raise PathError("path contains a control character")
        if o > 127:
            ascii = False
    data = config.DATA
    if ascii and _plain(path, data):
        return path  # already normal: no allocation (every file operation comes here)
    if path.startswith("/"):
        if path != data and not path.startswith(data + "/"):
            raise PathError("only %s is reachable; %s is outside it" % (data, path))
        rest = path[len(data):]
    else:
        rest = "/" + path
    if rest.endswith("/"):
        rest = rest[:-1]
    parts = []
    for name in rest.split("/")[1:]:
        if name == "..":
            raise PathError("'..' is not allowed in a path")
        if name == ".":
            continue
        if not name.strip():
            raise PathError("empty name in path %s" % path)
        if len(name.encode()) > config.FS_NAME_MAX_BYTES:
            raise PathError("name longer than %d bytes: %s" % (config.FS_NAME_MAX_BYTES, name[:24] + "..."))
        if name.endswith(TMP_SUFFIX) or name.endswith(BAK_SUFFIX):
            raise PathError("names ending in %s or %s are reserved" % (TMP_SUFFIX, BAK_SUFFIX))
        parts.append(name)
    out = data + "/" + "/".join(parts) if parts else data
    if len(out.encode()) > config.FS_PATH_MAX_BYTES:
        raise PathError("path longer than %d bytes" % config.FS_PATH_MAX_BYTES)
    return out


def _plain(path, data):
    """True when ``path`` is ASCII-clean, under ``data``, normal and within the limits."""
    n = len(path)
    if n > config.FS_PATH_MAX_BYTES or not path.startswith(data + "/") or path[-1] == "/":
        return False
    if "//" in path or "/." in path or "~" in path or " " in path:
        return False
    i = len(data)
    while i < n:
        j = path.find("/", i + 1)
        if j < 0:
            j = n
        if j - i - 1 > config.FS_NAME_MAX_BYTES:
            return False
        i = j
    return True


def check_file(path):
    """``check``, and the path must name a file (not ``/data`` itself)."""
    p = check(path)
    if p == config.DATA:
        raise PathError("a file name is needed, not %s itself" % config.DATA)
    return p


def _stat(rp):
    try:
        return os.stat(rp)
    except OSError:
        return None


def _is_dir(st):
    return bool(st[0] & 0x4000)


def _recover(rp, clean=False):
    """If ``rp`` is missing but a replace left ``.~bak``, put it back. True when it did.

    ``clean``: also delete a ``.~bak`` that is stale because ``rp`` exists (a replace that
    stopped after its last rename), so a later delete or move cannot bring it back.
    """
    bak = rp + BAK_SUFFIX
    if _stat(bak) is None:
        return False
    if _stat(rp) is None:
        _rename(bak, rp)
        return True
    if clean:
        _remove(bak)
    return False


def open_read(path):
    """Open the file ``path`` for reading: ``(file, size)``; the caller closes the file.

    For readers that seek (session files read back from the end). Every read the caller
    makes must still be capped. Raises ``PathError``, ``NotFound``.
    """
    path = check_file(path)
    rp = seam.real_path(path)
    st = _stat(rp)
    if st is None:
        with _lock:
            _recover(rp)
        st = _stat(rp)
        if st is None:
            raise _not_found(path)
    if _is_dir(st):
        raise PathError("%s is a folder, not a file" % path)
    return _open(rp, "rb"), st[6]


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


def read_text(path, cap):
    """``read`` from the start, decoded: ``(text, truncated, size)``.

    A cut inside a UTF-8 character is moved back to the character's start; bytes that
    are not UTF-8 raise ``ValueError``.
    """
    data, cut, size = read(path, cap)
    if cut:
        data = data[:utf8_end(data, len(data))]
    try:
        return data.decode(), cut, size
    except UnicodeError:
        raise ValueError("%s is not UTF-8 text" % check(path))


def exists(path):
    return size(path) is not None


def size(path):
    """Size in bytes, or None when the file is missing (0 for a folder)."""
    rp = seam.real_path(check(path))
    st = _stat(rp)
    if st is None:
        with _lock:
            _recover(rp)
        st = _stat(rp)
    if st is None:
        return None
    return 0 if _is_dir(st) else st[6]


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
    rp = seam.real_path(p)
    st = _stat(rp)
    if st is None:
        raise _not_found(p)
    if not _is_dir(st):
        raise PathError("%s is a file, not a folder" % p)
    out = []
    for n in os.listdir(rp):
        if n.endswith(TMP_SUFFIX):
            continue
        st = _stat(rp + "/" + n)
        if st is None:
            continue
        if n.endswith(BAK_SUFFIX):
            # A replace stopped after moving the old file aside: show it under its name.
            n = n[:-len(BAK_SUFFIX)]
            if _stat(rp + "/" + n) is not None:
                continue
        d = _is_dir(st)
        out.append((n, d, 0 if d else st[6]))
    out.sort(key=lambda e: e[0])
    return out


def makedirs(path):
    """Create the folder ``path`` and its parents; no error when it exists."""
    p = check(path)
    cur = ""
    for name in p[1:].split("/"):
        cur = cur + "/" + name
        rp = seam.real_path(cur)
        st = _stat(rp)
        if st is None:
            try:
                os.mkdir(rp)
            except OSError:
                if _stat(rp) is None:
                    raise
        elif not _is_dir(st):
            raise PathError("%s is a file, not a folder" % cur)


def _parent(p):
    i = p.rfind("/")
    return p[:i] if i > 0 else p


def _write_all(f, data):
    """Write ``data`` in ``FS_CHUNK_BYTES`` pieces (a cut power leaves a prefix, as flash would)."""
    mv = memoryview(data)
    step = config.FS_CHUNK_BYTES
    for i in range(0, len(mv), step):
        f.write(mv[i:i + step])


def _as_bytes(data):
    if isinstance(data, str):
        return data.encode()
    return data


def _replace(tmp, rp):
    """Put ``tmp`` in place of ``rp``, old-or-new at every step."""
    try:
        _rename(tmp, rp)
        return
    except OSError:
        if _stat(rp) is None or _stat(tmp) is None:
            raise
    # This file system will not rename over a file: move the old one aside first.
    bak = rp + BAK_SUFFIX
    if _stat(bak) is not None:
        _remove(bak)
    _rename(rp, bak)
    _rename(tmp, rp)
    _remove(bak)


def write(path, data):
    """Replace the file ``path`` with ``data`` (str or bytes) atomically; make its folder.

    Side effect: ``<path>.~tmp`` exists while writing. Raises ``PathError``, ``OSError``
    (file system full: the old content stays).
    """
    p = check_file(path)
    data = _as_bytes(data)
    makedirs(_parent(p))
    rp = seam.real_path(p)
    tmp = rp + TMP_SUFFIX
    with _lock:
        _recover(rp, True)
        st = _stat(rp)
        if st is not None and _is_dir(st):
            raise PathError("%s is a folder, not a file" % p)
        f = _open(tmp, "wb")
        try:
            _write_all(f, data)
        finally:
            f.close()
        _replace(tmp, rp)


def append(path, data, atomic=False):
    """Add ``data`` (str or bytes) at the end of ``path``, creating it and its folder.

    ``atomic=False``: one write to the file's end; a power cut can leave part of ``data``
    (session files, whose reader skips a torn last line). ``atomic=True``: the old
    content is copied to a temporary file in ``FS_CHUNK_BYTES`` pieces, ``data`` added,
    and the copy renamed into place: old or new, never part (for small files).
    """
    p = check_file(path)
    data = _as_bytes(data)
    makedirs(_parent(p))
    rp = seam.real_path(p)
    with _lock:
        _recover(rp, True)
        st = _stat(rp)
        if st is not None and _is_dir(st):
            raise PathError("%s is a folder, not a file" % p)
        if not atomic:
            f = _open(rp, "ab")
            try:
                _write_all(f, data)
            finally:
                f.close()
            return
        tmp = rp + TMP_SUFFIX
        f = _open(tmp, "wb")
        try:
            if st is not None:
                _copy_into(rp, f)
            _write_all(f, data)
        finally:
            f.close()
        _replace(tmp, rp)


def _copy_into(rp, out, start=0, end=None):
    buf = bytearray(config.FS_CHUNK_BYTES)
    mv = memoryview(buf)
    src = _open(rp, "rb")
    try:
        if start:
            src.seek(start)
        left = -1 if end is None else end - start
        while left:
            want = len(buf) if left < 0 else min(len(buf), left)
            n = src.readinto(mv[:want])
            if not n:
                break
            out.write(mv[:n])
            if left > 0:
                left -= n
    finally:
        src.close()


def copy(src, dst, start=0, end=None):
    """Copy bytes ``start``..``end`` (default: to the end) of ``src`` to a new ``dst``.

    Streamed in ``FS_CHUNK_BYTES`` pieces and atomic as ``write``. Raises ``NotFound``,
    ``PathError``.
    """
    s = check_file(src)
    d = check_file(dst)
    makedirs(_parent(d))
    rs = seam.real_path(s)
    rd = seam.real_path(d)
    tmp = rd + TMP_SUFFIX
    with _lock:
        _recover(rs)
        if _stat(rs) is None:
            raise _not_found(s)
        _recover(rd, True)
        f = _open(tmp, "wb")
        try:
            _copy_into(rs, f, start, end)
        finally:
            f.close()
        _replace(tmp, rd)


def remove(path):
    """Delete a file or an empty folder. Raises ``NotFound``, ``OSError`` (folder not empty)."""
    p = check_file(path)
    rp = seam.real_path(p)
    with _lock:
        st = _stat(rp)
        bak = _stat(rp + BAK_SUFFIX)
        if st is None and bak is None:
            raise _not_found(p)
        if bak is not None:
            _remove(rp + BAK_SUFFIX)
        if st is not None:
            if _is_dir(st):
                os.rmdir(rp)
            else:
                _remove(rp)


def rename(src, dst):
    """Move the file ``src`` to ``dst`` (replacing ``dst`` atomically); make ``dst``'s folder."""
    s = check_file(src)
    d = check_file(dst)
    makedirs(_parent(d))
    rs = seam.real_path(s)
    rd = seam.real_path(d)
    with _lock:
        _recover(rs, True)
        if _stat(rs) is None:
            raise _not_found(s)
        _recover(rd, True)
        _replace(rs, rd)


def lines(path, max_line=1024):
    """Yield ``(offset, line bytes)`` for each line of ``path``, without the newline.

    Streams the file in ``FS_CHUNK_BYTES`` reads; a line longer than ``max_line`` comes
    in pieces of at most ``max_line`` bytes (each with its own offset), so memory stays
    bounded whatever the file holds. Raises ``NotFound``, ``PathError``.
    """
    f, size = open_read(path)
    try:
        pend = b""
        start = 0
        pos = 0
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
    if end >= len(data):
        end = len(data)
        # Whole buffer: it may still end in an unfinished character.
    i = end
    back = 0
    while i > 0 and back < 4 and (data[i - 1] & 0xC0) == 0x80:
        i -= 1
        back += 1
    if i == 0:
        return end if back == 0 else 0
    lead = data[i - 1]
    if lead < 0x80:
        return end  # ASCII before the continuation bytes (or none): nothing cut
    need = 2 if lead < 0xE0 else (3 if lead < 0xF0 else 4)
    if back + 1 >= need:
        return end  # the character is complete
    return i - 1


def utf8_start(data, start):
    """Smallest ``i >= start`` that is not inside a UTF-8 character (skips continuation bytes)."""
    n = len(data)
    i = start
    while i < n and i - start < 3 and (data[i] & 0xC0) == 0x80:
        i += 1
    return i
