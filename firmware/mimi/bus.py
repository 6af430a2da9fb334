"""The message bus: two bounded FIFO queues between the I/O thread and the agent thread.

MicroPython has no ``queue`` module and its ``lock.acquire`` takes no timeout, so a
queue is a list under a ``_thread`` lock, and a waiting ``get`` polls every
``_BUS_POLL_MS`` (``seam.wait_ms``: two FreeRTOS ticks asleep on the board, not spinning). One agent thread takes inbound messages in order, so per-chat order is
kept. A full queue refuses (``put`` returns False): the caller tells the sender the
assistant is busy; nothing is dropped silently (../shared/DESIGN.md, "Threads").

Inbound message (dict; the bus takes ownership):
    channel   "telegram" | "cli" | "cron" | "heartbeat"
    chat_id   str: where the reply goes (for cron and heartbeat, the chat they name)
    text      str
    session   str: session key, e.g. "tg_123"; cron and heartbeat use their own
    plus optional keys a channel adds: "user", "message_id", "is_group", "job".
Outbound message (dict):
    channel, chat_id, text, and "kind": "text" (a reply), "typing" (the agent is working,
    text empty) or "note" (a short progress note).
"""
from micropython import const

from mimi import seam

_BUS_POLL_MS = const(20)


class Queue:
    """A bounded FIFO safe to share between threads."""

    def __init__(self, maxlen):
        self._items = []
        self._max = maxlen
        self._lock = seam.allocate_lock()

    def put(self, item):
        """Append ``item``; False (and nothing stored) when the queue is full."""
        with self._lock:
            if len(self._items) >= self._max:
                return False
            self._items.append(item)
            return True

    def put_wait(self, item, timeout_ms):
        """Append ``item``, waiting up to ``timeout_ms`` for room; False when still full."""
        t0 = seam.ticks_ms()
        while not self.put(item):
            if seam.ticks_diff(seam.ticks_ms(), t0) >= timeout_ms:
                return False
            seam.wait_ms(_BUS_POLL_MS)
        return True

    def get(self, timeout_ms=0):
        """Remove and return the oldest item, waiting up to ``timeout_ms``; None if none came."""
        t0 = seam.ticks_ms()
        while True:
            with self._lock:
                if self._items:
                    return self._items.pop(0)
            if seam.ticks_diff(seam.ticks_ms(), t0) >= timeout_ms:
                return None
            seam.wait_ms(_BUS_POLL_MS)

    def __len__(self):
        return len(self._items)

    def clear(self):
        with self._lock:
            self._items = []


class Bus:
    """``inbound`` (channels to agent) and ``outbound`` (agent to channels)."""

    def __init__(self, inbound_max, outbound_max):
        self.inbound = Queue(inbound_max)
        self.outbound = Queue(outbound_max)

    def send(self, channel, chat_id, text, kind="text", timeout_ms=5000):
        """Queue an outbound message, waiting up to ``timeout_ms`` for room.

        Returns False when the queue stayed full (the I/O thread is stuck); a "typing"
        message never waits, since a later one will do.
        """
        item = {"channel": channel, "chat_id": str(chat_id), "text": text, "kind": kind}
        if kind == "typing":
            return self.outbound.put(item)
        return self.outbound.put_wait(item, timeout_ms)
