"""Stand-ins for MicroPython-only modules (machine, network, esp32, ntptime, micropython).

This folder goes on ``sys.path`` ahead of ``firmware/`` (CPython) or on ``MICROPYPATH``
(the unix port, which lacks ``esp32``, ``network``, ``ntptime`` and most of ``machine``),
so firmware imports them unchanged. Each module follows MicroPython's documentation
(https://docs.micropython.org/en/latest/library/) and keeps its state in the folder that
plays the board's flash (``MIMI_FLASH``). The modules are written so both CPython and
MicroPython can run them; this ``__init__`` is only for packaging.
"""
