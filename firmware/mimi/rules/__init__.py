"""Automations: rules taught in chat, stored as JSON (``store``), run by the I/O thread
without the LLM (``engine``). docs/automations.md describes them.

The I/O thread calls ``tick(now_ms, bus)`` at every pass. The engine and the store cost
about 17 KB of heap (docs/heap.md), so they are loaded only once ``/data/rules.json``
exists (one ``stat`` every ``_RULES_LOOK_MS`` until then) or something else loaded them
(a rule tool, ``mimi.net.mqtt`` calling ``engine.on_mqtt``).
"""
from micropython import const

from mimi import config, seam

_RULES_LOOK_MS = const(5000)

_on = [None, None]  # the engine module once loaded; ms of the last look for the file


def tick(now_ms, bus):
    """Run the rules engine's ``tick(now_ms)``, loading it (with ``bus``) when there are rules."""
    e = _on[0]
    if e is None:
        import sys

        if "mimi.rules.store" not in sys.modules:
            if _on[1] is not None and seam.ticks_diff(now_ms, _on[1]) < _RULES_LOOK_MS:
                return
            _on[1] = now_ms
            import os

            try:
                os.stat(seam.real_path(config.RULES_PATH))
            except OSError:
                return
        from mimi.rules import engine

        engine.init(bus)
        e = _on[0] = engine
    e.tick(now_ms)


def forget():
    """Forget the loaded engine (tests, ``app.forget``): the next tick looks again."""
    _on[0] = _on[1] = None
