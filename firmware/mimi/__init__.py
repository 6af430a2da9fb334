"""mimi: a personal AI assistant for the ESP32-S3, in MicroPython.

Importing the package does nothing; ``mimi.app.init()`` then ``mimi.app.start()`` run it.
"""
VERSION = "0.1.0"


def pick(table, key):
    """The text after ``key`` in a table ``"|key text|key text|"``, or None.

    Messages live in one such string per module: each distinct string literal longer than
    10 characters is its own heap object on MicroPython (about 70 B each on the unix port),
    one table is one. (Also ``mimi.llm.pick``.)"""
    i = table.find("|%s " % key)
    return table[i + len("%s" % key) + 2:table.find("|", i + 1)] if i >= 0 else None
