"""Where the stand-ins keep their state: the folder that plays the board's flash.

Read at each use from the ``MIMI_FLASH`` environment variable (the launcher, the tests
and ``mimi.seam.set_flash_root`` set it), default the current folder.
"""
import os


def path(name):
    """Return ``<flash>/<name>``; ``name`` is a plain file name."""
    root = os.getenv("MIMI_FLASH") or "."
    return root + "/" + name


def write_atomic(name, data):
    """Write bytes to ``<flash>/<name>`` via a temporary file and a rename."""
    p = path(name)
    tmp = p + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, p)


def read(name):
    """Return the bytes of ``<flash>/<name>``, or None when it is missing."""
    try:
        with open(path(name), "rb") as f:
            return f.read()
    except OSError:
        return None
