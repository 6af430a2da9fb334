"""The ``cli`` channel's outbound side: replies for the serial console.

The I/O thread hands ``cli`` messages to ``deliver``; ``mimi.cli.ask`` collects them
while it waits (``asking``), otherwise a text is printed at once (a cron job reporting
to the console). Kept apart from ``mimi.cli`` so the running app never loads the CLI.
"""
inbox = []  # what the agent sent while ``ask`` waits (at most 32; list operations are atomic)
asking = [False]
out = print  # where replies are printed (tests collect them)


def deliver(msg):
    """Take an outbound ``cli`` message; always True (the console has room)."""
    if asking[0]:
        if len(inbox) < 32:
            inbox.append(msg)
    elif msg.get("kind") == "text":
        out("\n[mimi] %s" % msg.get("text", ""))
    return True


def take():
    """The oldest message queued for ``ask``, or None."""
    return inbox.pop(0) if inbox else None
