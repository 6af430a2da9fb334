"""The ``cli`` channel's outbound side: replies for the serial console.

The I/O thread hands ``cli`` messages to ``deliver``; ``mimi.cli.ask`` collects them
while it waits (``asking``), otherwise a text is printed at once (a cron job reporting
to the console). Kept apart from ``mimi.cli`` so the running app never loads the CLI.
"""
from mimi import seam

_inbox = []
_lock = seam.allocate_lock()
asking = [False]
out = print  # where replies are printed (tests collect them)


def deliver(msg):
    """Take an outbound ``cli`` message; always True (the console has room)."""
    if asking[0]:
        with _lock:
            if len(_inbox) < 32:
                _inbox.append(msg)
        return True
    if msg.get("kind") == "text":
        out("\n[mimi] %s" % msg.get("text", ""))
    return True


def take():
    """The oldest message queued for ``ask``, or None."""
    with _lock:
        if _inbox:
            return _inbox.pop(0)
    return None


def clear():
    with _lock:
        del _inbox[:]
