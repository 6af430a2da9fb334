"""mimi's host simulator: the firmware, unchanged, on a desktop.

``host_sim.hostenv.install()`` makes ``firmware/`` importable under CPython with the
MicroPython stand-ins in ``host_sim/stubs`` ahead of it. ``python -m host_sim`` runs the
assistant (see ``__main__``).
"""
