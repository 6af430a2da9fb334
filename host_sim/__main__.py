"""``python -m host_sim``: the assistant on a desktop.

    python -m host_sim                      offline default (no credentials needed)
    python -m host_sim chat [--flash DIR] [--runtime R] [--log]   the same, with options
    python -m host_sim run --flash DIR [--runtime cpython|micropython]
    python -m host_sim vboard --flash DIR --port P [--no-boot] [--romfs-kb N]
    python -m host_sim console --port socket://127.0.0.1:P    a terminal on the vboard's REPL
    python -m host_sim bench [--turns N] [--peak-turns N] [--soak N] [--smallest N] [--app SIZES] [--heaps 256K,512K] [--romfs]
"""
import argparse
import os
import sys

from host_sim import hostenv, launcher


def _romfs_kb(text):
    """--romfs-kb: 0, or whole 4 KiB flash sectors."""
    n = int(text)
    if n < 0 or n % 4:
        raise argparse.ArgumentTypeError("%r: 0 (no ROMFS) or a multiple of 4 KiB" % text)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m host_sim", description="mimi's host simulator")
    sub = ap.add_subparsers(dest="cmd")
    r = sub.add_parser("run", help="boot the firmware with DIR as the board's flash")
    r.add_argument("--flash", default=os.path.join(hostenv.ROOT, "flash"), help="folder that plays the flash (default ./flash)")
    r.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython")
    r.add_argument("--heap", default=launcher.HEAP_DEFAULT,
                   help="MicroPython heap size (micropython runtime; default %s, a board with 2 MB PSRAM)" % launcher.HEAP_DEFAULT)
    c = sub.add_parser("chat", help="the offline default: fake Telegram, stand-in model, terminal chat")
    c.add_argument("--flash", default=None, help="folder that plays the flash (default: a new temporary one, deleted at exit)")
    c.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython")
    c.add_argument("--log", action="store_true", help="print the board's console log too")
    v = sub.add_parser("vboard", help="serve a virtual board's REPL on a TCP port (for mpremote, tools/flash.sh)")
    v.add_argument("--flash", required=True, help="folder that plays the board's flash (its /)")
    v.add_argument("--port", type=int, default=7777, help="TCP port on 127.0.0.1 (default 7777)")
    v.add_argument("--heap", default=launcher.HEAP_DEFAULT,
                   help="MicroPython heap size (default %s, a board with 2 MB PSRAM)" % launcher.HEAP_DEFAULT)
    v.add_argument("--boot", action=argparse.BooleanOptionalAction, default=True,
                   help="run /boot.py and /main.py at each power-on, as a board does (default); --no-boot: only the REPL")
    v.add_argument("--romfs-kb", type=_romfs_kb, default=512,
                   help="its ROMFS partition in KiB, as tools/flash.sh flash makes it on a MicroPython with ROMFS "
                        "(default 512; held in the process's heap, which gets that much more than --heap); 0: a "
                        "MicroPython without ROMFS, as the micropython.org builds (no vfs.rom_ioctl)")
    t = sub.add_parser("console", help="a terminal on a REPL served on TCP (the vboard); Ctrl-] quits")
    t.add_argument("--port", default=os.environ.get("MIMI_PORT") or "socket://127.0.0.1:7777",
                   help="socket://HOST:PORT (default $MIMI_PORT, else socket://127.0.0.1:7777)")
    b = sub.add_parser("bench", help="the firmware's time, heap and flash writes per turn, under micropython")
    b.add_argument("--turns", type=int, default=40, help="timed turns per heap size (default 40)")
    b.add_argument("--peak-turns", type=int, default=10, help="turns with the heap sampled (default 10)")
    b.add_argument("--soak", type=int, default=500, help="turns in a 256 KB heap (default 500; 0 skips)")
    b.add_argument("--smallest", type=int, default=100, help="find the smallest heap that runs N turns (default 100; 0 skips)")
    b.add_argument("--app", default="4096,16384", help="reply sizes for the whole-app heap search ('' skips)")
    b.add_argument("--heaps", default="256K,512K", help="heap sizes (default 256K,512K)")
    b.add_argument("--romfs", action="store_true",
                   help="the package from its ROMFS image, as tools/flash.sh deploys it (default: .py files)")
    args = ap.parse_args(argv)
    if args.cmd == "bench":
        from host_sim import bench

        return bench.main(tuple(h for h in args.heaps.split(",") if h), args.turns, args.peak_turns, args.soak,
                          args.smallest, tuple(int(n) for n in args.app.split(",") if n), args.romfs)
    if args.cmd == "run":
        return launcher.run(args.flash, args.runtime, args.heap)
    if args.cmd == "console":
        from host_sim import console

        return console.run(args.port)
    if args.cmd == "vboard":
        from host_sim import vboard

        return vboard.main(args.flash, args.port, args.heap, args.boot, args.romfs_kb * 1024)
    from host_sim import chat

    if args.cmd == "chat":
        return chat.main(args.flash, args.runtime, args.log)
    return chat.main()  # the offline default


if __name__ == "__main__":
    sys.exit(main())
