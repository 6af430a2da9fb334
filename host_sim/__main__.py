"""``python -m host_sim``: the assistant on a desktop.

    python -m host_sim                      offline default (no credentials needed)
    python -m host_sim chat [--flash DIR] [--runtime R] [--log]   the same, with options
    python -m host_sim run [--flash DIR] [--runtime cpython|micropython] [--heap H] [--no-console]
    python -m host_sim vboard --flash DIR [--port P] [--no-boot] [--romfs-kb N]
    python -m host_sim console --port socket://127.0.0.1:P    a terminal on the vboard's REPL
    python -m host_sim portal [--flash DIR] [--port P] [--dns-port P] [--runtime R]   the setup portal
    python -m host_sim bench [--turns N] [--peak-turns N] [--soak N] [--smallest N] [--app SIZES] [--heaps 256K,512K] [--romfs]

A bad argument prints one line (``--help`` shows the options) and exits with status 2.
"""
import argparse
import os
import sys
import textwrap

from host_sim import hostenv, launcher

PROG = "python3 -m host_sim"
FLASH_DEFAULT = os.path.join(hostenv.ROOT, "flash")

_VARIABLES = """\
Settings from the environment (run, and chat's board; written over the stored ones at
each boot, never read by the firmware itself):
  MIMI_TG_TOKEN       the bot token from @BotFather (123456789:AAH...)
  MIMI_TG_API_BASE    default https://api.telegram.org
  MIMI_PROVIDER       anthropic, openai, openrouter, deepseek, ollama, lmstudio, custom
  MIMI_API_KEY        the provider's API key
  MIMI_MODEL          the model's name (default: the provider's)
  MIMI_LLM_BASE_URL   the server's address (custom needs it)
  MIMI_ALLOWED_CHATS  comma-separated chat ids (groups are negative)
  MIMI_TZ             UTC offset: +08:00
  MIMI_PROXY          http://[user:pass@]host:port or socks5://[user:pass@]host:port
  MIMI_NO_PROXY       hosts reached without it (default: local addresses)
  MIMI_FEISHU_APP_ID, MIMI_FEISHU_APP_SECRET   a Feishu/Lark app's id and secret
  MIMI_FEISHU_DOMAIN  default https://open.feishu.cn (https://open.larksuite.com for Lark)
  MIMI_WEB_PASSWORD   the web app's and LAN gateway's password (unset: no web app)
  MIMI_WEB_PORT       the web app's port (default 8080; a board's: 80)
  MIMI_GATEWAY_PORT   the chat gateway's port (default 18789)
  MIMI_MQTT_URL       MQTT broker mqtt[s]://[user:pass@]host[:port]; Home Assistant sees the pins
The simulator's own:
  MIMI_MICROPYTHON    the micropython binary of --runtime micropython, vboard, bench and the
                      tests (default: the dev tools' micropython), e.g. ../shared/tools/micropython32
  MIMI_PORT           console's default port (socket://127.0.0.1:7777)
  MIMI_WEB_HOST       the address the web app listens on (default 127.0.0.1; 0.0.0.0: the LAN)
"""


def _d(text):
    """A description, wrapped here (the raw formatter keeps the variables' table as it is)."""
    return textwrap.fill(text, 88)


class _Parser(argparse.ArgumentParser):
    """argparse that says what is wrong in one line, not the usage, and exits with 2."""

    def error(self, message):
        self.exit(2, "%s: %s (%s --help shows the options)\n" % (self.prog, message, self.prog))


def _heap(text):
    """--heap: a -X heapsize value (256K, 2M, bytes), at least 64K."""
    try:
        hostenv.heap_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return text.strip()


def _heaps(text):
    """--heaps: comma-separated heap sizes."""
    return tuple(_heap(h) for h in text.split(",") if h.strip())


def _sizes(text):
    """--app: comma-separated reply sizes in bytes ('' for none)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError("%r: comma-separated sizes in bytes, such as 4096,16384" % text)
    return tuple(int(p) for p in parts)


def _count(text):
    """A whole number, 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError("%r: a whole number, 0 or more" % text)
    return int(text)


def _positive(text):
    """A whole number, 1 or more."""
    if not text.strip().isdigit() or not int(text):
        raise argparse.ArgumentTypeError("%r: a whole number, 1 or more" % text)
    return int(text)


def _port(text):
    """--port of vboard: a TCP port, 0 (a free one) to 65535."""
    if not text.strip().isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError("%r: a TCP port from 1 to 65535 (0: any free one)" % text)
    return int(text)


def _romfs_kb(text):
    """--romfs-kb: 0, or whole 4 KiB flash sectors."""
    if not text.strip().isdigit() or int(text) % 4:
        raise argparse.ArgumentTypeError("%r: 0 (no ROMFS) or a multiple of 4 KiB" % text)
    return int(text)


def parser():
    """The command line: one sub-command per way of running the firmware on a desktop."""
    ap = _Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_VARIABLES,
                 description=_d("mimi's host simulator: the firmware on a desktop, under CPython or the micropython "
                             "command. With no command it starts the offline chat (a fake Telegram and a stand-in "
                             "that is not a real model; no account or key), as 'chat' does."))
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    raw = argparse.RawDescriptionHelpFormatter
    c = sub.add_parser("chat", help="the offline chat (what %s alone starts)" % PROG, formatter_class=raw,
                       description=_d("The offline chat, in this terminal: the firmware boots against a local fake "
                                   "Telegram and a stand-in model (a few rules, NOT a real model), and what you type "
                                   "arrives as a Telegram message. No account, key or board. %s alone does the same "
                                   "with the defaults." % PROG))
    c.add_argument("--flash", metavar="DIR", default=None,
                   help="folder that plays the board's flash (default: a new temporary one, deleted at exit)")
    c.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython",
                   help="run the firmware under CPython (default) or the micropython command ($MIMI_MICROPYTHON)")
    c.add_argument("--log", action="store_true", help="print the board's console log too")
    r = sub.add_parser("run", help="boot the firmware with a folder as the board's flash, with real settings",
                       formatter_class=raw, epilog=_VARIABLES,
                       description=_d("Boot the firmware as a board would, with DIR as its flash (DIR/data is /data, "
                                   "the settings store DIR/nvs.json), against the real Telegram and model its "
                                   "settings name (MIMI_* below, or cli.set_* at the console). On a terminal a "
                                   "console runs Python on the board, as its REPL: cli.status(), cli.pair(), "
                                   "cli.allow(CHAT_ID). Ctrl-C or Ctrl-D stops it."))
    r.add_argument("--flash", metavar="DIR", default=FLASH_DEFAULT,
                   help="folder that plays the board's flash (default: %s, made when missing)" % FLASH_DEFAULT)
    r.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython",
                   help="CPython (default) or the micropython command ($MIMI_MICROPYTHON, else the dev tools')")
    r.add_argument("--heap", type=_heap, default=launcher.HEAP_DEFAULT,
                   help="MicroPython heap size (micropython runtime; default %s, a board with 2 MB PSRAM)"
                        % launcher.HEAP_DEFAULT)
    r.add_argument("--console", action=argparse.BooleanOptionalAction, default=None,
                   help="Python typed here runs on the board (default: on when stdin is a terminal; --console "
                        "also reads piped lines)")
    v = sub.add_parser("vboard", help="serve a virtual board's REPL on a TCP port (for mpremote, tools/flash.sh)", formatter_class=raw,
                       description=_d("A virtual board: the micropython command ($MIMI_MICROPYTHON) on a raw "
                                   "pseudo-terminal with its root on DIR, its console served on 127.0.0.1:PORT, "
                                   "as a board on a serial port: tools/flash.sh --port socket://127.0.0.1:PORT "
                                   "deploy|seed|config|reset|repl, mpremote connect socket://127.0.0.1:PORT resume "
                                   "... It runs until Ctrl-C."))
    v.add_argument("--flash", metavar="DIR", required=True, help="folder that plays the board's flash (its /), made when missing")
    v.add_argument("--port", type=_port, default=7777, help="TCP port on 127.0.0.1 (default 7777; 0: any free one)")
    v.add_argument("--heap", type=_heap, default=launcher.HEAP_DEFAULT,
                   help="MicroPython heap size (default %s, a board with 2 MB PSRAM)" % launcher.HEAP_DEFAULT)
    v.add_argument("--boot", action=argparse.BooleanOptionalAction, default=True,
                   help="run /boot.py and /main.py at each power-on, as a board does (default); --no-boot: only the REPL")
    v.add_argument("--romfs-kb", type=_romfs_kb, default=1024,
                   help="its ROMFS partition in KiB, as tools/flash.sh flash makes it on a MicroPython with ROMFS "
                        "(default 1024; held in the process's heap, which gets that much more than --heap); 0: a "
                        "MicroPython without ROMFS, as the micropython.org builds (no vfs.rom_ioctl)")
    t = sub.add_parser("console", help="a terminal on a REPL served on TCP (the vboard); Ctrl-] quits", formatter_class=raw,
                       description=_d("A terminal on a REPL served on TCP (the virtual board, or a board behind a TCP "
                                   "serial bridge), where mpremote's repl fails. Keys go raw to the board; Ctrl-] "
                                   "or Ctrl-X quits. Piped lines are sent one by one."))
    t.add_argument("--port", default=os.environ.get("MIMI_PORT") or "socket://127.0.0.1:7777",
                   help="socket://HOST:PORT (default $MIMI_PORT, else socket://127.0.0.1:7777)")
    p = sub.add_parser("portal", help="the WiFi setup portal alone, as a board without WiFi shows it", formatter_class=raw,
                       description=_d("The setup portal a board opens when it has no WiFi (or its BOOT button is held "
                                   "at start): its page on http://127.0.0.1:PORT/ (the stand-in access point is not "
                                   "broadcast) and its DNS, which answers every name with 127.0.0.1, on DNS_PORT "
                                   "(dig @127.0.0.1 -p DNS_PORT example.com). What it saves goes to DIR/nvs.json; "
                                   "after a save with a WiFi network set it ends, where a board would restart and "
                                   "join the network. Ctrl-C stops it."))
    p.add_argument("--flash", metavar="DIR", default=FLASH_DEFAULT,
                   help="folder that plays the board's flash (default: %s, made when missing)" % FLASH_DEFAULT)
    p.add_argument("--port", type=_port, default=8080, help="the page's TCP port on 127.0.0.1 (default 8080; 80 on a board)")
    p.add_argument("--dns-port", type=_port, default=5353, help="the DNS's UDP port on 127.0.0.1 (default 5353; 53 on a board)")
    p.add_argument("--runtime", choices=("cpython", "micropython"), default="cpython",
                   help="CPython (default) or the micropython command ($MIMI_MICROPYTHON, else the dev tools')")
    b = sub.add_parser("bench", help="the firmware's time, heap and flash writes per turn, under micropython", formatter_class=raw,
                       description=_d("The firmware's own cost of a turn (time, heap, flash writes) under the "
                                   "micropython command ($MIMI_MICROPYTHON: the 32-bit "
                                   "../shared/tools/micropython32 gives the chip's heap figures) against local "
                                   "fakes; docs/figures.md explains each figure."))
    b.add_argument("--turns", type=_positive, default=40, help="timed turns per heap size (default 40)")
    b.add_argument("--peak-turns", type=_positive, default=10, help="turns with the heap sampled (default 10)")
    b.add_argument("--soak", type=_count, default=500, help="turns in a 256 KB heap (default 500; 0 skips)")
    b.add_argument("--smallest", type=_count, default=100,
                   help="find the smallest heap that runs N turns (default 100; 0 skips)")
    b.add_argument("--app", type=_sizes, default=(4096, 16384),
                   help="reply sizes for the whole-app heap search (default 4096,16384; '' skips)")
    b.add_argument("--heaps", type=_heaps, default=("256K", "512K"), help="heap sizes (default 256K,512K)")
    b.add_argument("--romfs", action="store_true",
                   help="the package from its ROMFS image, as tools/flash.sh deploys it (default: .py files)")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.cmd == "bench":
        from host_sim import bench

        return bench.main(args.heaps, args.turns, args.peak_turns, args.soak, args.smallest, args.app, args.romfs)
    if args.cmd == "run":
        return launcher.run(args.flash, args.runtime, args.heap, console=args.console)
    if args.cmd == "portal":
        return launcher.portal(args.flash, args.port, args.dns_port, args.runtime)
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
