"""``python -m host_sim``: the assistant on a desktop.

    python -m host_sim                      offline default (no credentials needed)
    python -m host_sim run --flash DIR [--runtime cpython|micropython]
"""
import argparse
import os
import sys

from host_sim import hostenv, launcher


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m host_sim", description="mimi's host simulator")
    sub = ap.add_subparsers(dest="cmd")
    r = sub.add_parser("run", help="boot the firmware with DIR as the board's flash")
    r.add_argument("--flash", default=os.path.join(hostenv.ROOT, "flash"), help="folder that plays the flash (default ./flash)")
    r.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython")
    r.add_argument("--heap", default="512K", help="MicroPython heap size (micropython runtime)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return launcher.run(args.flash, args.runtime, args.heap)
    # Offline default: until the simulator's chat lands, boot the firmware on ./flash.
    print("mimi host simulator: booting the firmware on ./flash (Ctrl-C stops it)")
    return launcher.run(os.path.join(hostenv.ROOT, "flash"))


if __name__ == "__main__":
    sys.exit(main())
