"""The application: ``init()`` allocates once, ``start()`` starts the threads.

``/main.py`` calls ``init()`` then ``start()`` and returns, so the REPL stays live.
"""
from mimi import bus, config, log, seam

TAG = "app"

state = {"bus": None, "started_ms": None}


def init():
    """Allocate the long-lived objects (large buffers first, before the heap fragments).

    Returns True when the app can start.
    """
    seam.collect()
    state["bus"] = bus.Bus(config.BUS_INBOUND_MAX, config.BUS_OUTBOUND_MAX)
    log.info(TAG, "mimi on %s, free heap %s", seam.describe(), seam.mem_free())
    return True


def start():
    """Start the agent and I/O threads (added by the agent and runtime parts)."""
    state["started_ms"] = seam.ticks_ms()
    log.info(TAG, "started")
