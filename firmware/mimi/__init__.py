"""mimi: a personal AI assistant for the ESP32-S3, in MicroPython.

Importing the package does nothing; ``mimi.app.init()`` then ``mimi.app.start()`` run it.
"""
VERSION = "0.1.0"  # the one place it is kept: /status, package.json, manifest.py, deploy


def data_path(file, name):
    """The path of data file ``name`` shipped beside the module whose ``__file__`` is
    ``file`` (``texts.md`` beside mimi/commands.py).

    Imported from files or a ROMFS image, the module's folder: ``/lib/mimi/texts.md``,
    ``/rom/mimi/texts.md``. A module frozen into the firmware (manifest.py) has the
    relative ``__file__`` ``mimi/commands.py`` (MicroPython's py/builtinimport.c) and no
    folder of its own; freezing takes only ``.py`` files, so its data files are copied to
    /lib/mimi (tools/flash.sh deploy does that for such a firmware), and looked for there.
    """
    # (Names and strings already interned elsewhere: each new one costs heap; docs/heap.md.)
    d = file.rsplit("/", 1)[0]
    return ("/lib/" if d[:4] == "mimi" and d[4:5] in ("", "/") else "") + d + "/" + name


def pick(table, key):
    """The text after ``key`` in a table ``"|key text|key text|"``, or None.

    Messages live in one such string per module: each distinct string literal longer than
    10 characters is its own heap object on MicroPython (about 70 B each on the unix port),
    one table is one. (Also ``mimi.llm.pick``.)"""
    i = table.find("|%s " % key)
    return table[i + len("%s" % key) + 2:table.find("|", i + 1)] if i >= 0 else None
