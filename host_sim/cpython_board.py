"""The CPython board process (``python -m host_sim.cpython_board``): what the launcher starts.

Reads ``MIMI_FLASH`` for the flash folder, prepares the stand-ins, then boots the firmware
with ``host_sim/board.py`` exactly as the ``micropython`` runtime does.
"""
import os
import sys

from host_sim import hostenv


def main():
    hostenv.install(os.environ.get("MIMI_FLASH"))
    from host_sim import board

    return board.run(hostenv.FIRMWARE)


if __name__ == "__main__":
    sys.exit(main())
