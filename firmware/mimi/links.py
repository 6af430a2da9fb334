"""The unix port's check for symbolic links under the flash folder's ``data`` (a desktop's
folder may hold links; the board's LittleFS has none). ``mimi.seam.real_path`` calls it on
that runtime only, and imports it only then.

The unix port's ``os`` cannot resolve a link (no ``lstat``, ``readlink`` or
``realpath``), but its listings name links (``ilistdir`` type ``S_IFLNK``): a path through
any link below ``/data`` is refused, wherever the link leads. Each folder on the way is
stat'ed and listed only when it changed since its last listing (about 1.5 us a name on
x86 when nothing changed; a listing per access costs 50 us); a listing made within the
second of the folder's last change is not trusted (times are whole seconds), so the next
access lists it again.
"""
import os
import time

from micropython import const

_S_IFLNK = const(0xA000)
_LINKS_FOLDERS_MAX = const(32)


def through(cache, root, path):
    """True when a name of the device path ``path`` below ``/data`` is a symbolic link in
    the folder ``root`` (the flash). ``cache``: folder -> (inode, mtime_s, when listed (s),
    [names of the links in it]), kept by the caller."""
    cur = root + "/data"
    for name in path[6:].split("/"):
        if not name:
            continue
        try:
            st = os.stat(cur)
            c = cache.get(cur)
            if c is None or c[0] != st[1] or c[1] != st[8] or c[2] <= st[8]:
                if len(cache) >= _LINKS_FOLDERS_MAX:
                    cache.clear()
                c = cache[cur] = (st[1], st[8], int(time.time()),
                                  [e[0] for e in os.ilistdir(cur) if e[1] == _S_IFLNK])
        except OSError:
            return False  # a folder on the way is missing (or a file): nothing to follow
        if name in c[3]:
            return True
        cur = cur + "/" + name
    return False
