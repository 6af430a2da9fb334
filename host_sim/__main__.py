"""``python -m host_sim``: the assistant on a desktop.

    python -m host_sim                      offline default (no credentials needed)
    python -m host_sim run --flash DIR [--runtime cpython|micropython]
    python -m host_sim vboard --flash DIR --port P [--no-boot]
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
    v = sub.add_parser("vboard", help="serve a virtual board's REPL on a TCP port (for mpremote, tools/flash.sh)")
    v.add_argument("--flash", required=True, help="folder that plays the board's flash (its /)")
    v.add_argument("--port", type=int, default=7777, help="TCP port on 127.0.0.1 (default 7777)")
    v.add_argument("--heap", default="512K", help="MicroPython heap size (default 512K)")
    v.add_argument("--boot", action=argparse.BooleanOptionalAction, default=True,
                   help="run /boot.py and /main.py at each power-on, as a board does (default); --no-boot: only the REPL")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return launcher.run(args.flash, args.runtime, args.heap)
    if args.cmd == "vboard":
        from host_sim import vboard

        return vboard.main(args.flash, args.port, args.heap, args.boot)
    # Offline default: until the simulator's chat lands, boot the firmware on ./flash.
    print("mimi host simulator: booting the firmware on ./flash (Ctrl-C stops it)")
    return launcher.run(os.path.join(hostenv.ROOT, "flash"))


if __name__ == "__main__":
    sys.exit(main())
