"""``python -m host_sim vboard --flash DIR --port P``: a virtual board on a TCP port.

The ``micropython`` command (the unix port) runs on a pseudo-terminal in raw mode with
its root remounted on DIR (``host_sim/vboard_prelude.py``), and its console is served on
``127.0.0.1:P``: what ``socat TCP-LISTEN:P,reuseaddr,fork EXEC:micropython,pty,raw,echo=0``
gives, plus the board's view of the files. So, as with a board on a serial port:

    mpremote connect socket://127.0.0.1:P resume fs ls :/
    mpremote connect socket://127.0.0.1:P resume fs cp firmware/main.py :main.py
    tools/flash.sh --port socket://127.0.0.1:P deploy
    python -m host_sim console --port socket://127.0.0.1:P    (mpremote's repl fails on sockets)

Like a board, it stays powered between connections: one ``micropython`` process runs
until it exits, and then the virtual board powers on again with a new one. The client
stays connected across resets, as with a board's USB-UART bridge. A soft reset (Ctrl-D:
the unix port's REPL exits) looks as on a board: "soft reboot", and a board that was in
the raw REPL comes back in it, so mpremote works without ``resume`` too (each command
then starts from a fresh board; ``resume`` keeps the running one, as on a board).
``machine.reset()`` (the host stand-in) and a crash power the board on again.

One client at a time: a new connection takes the console over from the previous one.
Each power-on runs ``/boot.py`` and ``/main.py`` before the REPL, as a board does; a soft
reset from the raw REPL (what mpremote does first, without ``resume``) runs ``/boot.py``
only, as MicroPython does, so a running assistant stops while files are copied.
``--no-boot`` gives only the REPL. While no client is connected the console output goes
to this process's stdout. Lines end in ``\\r\\n``, as a board's console sends them (the
unix port writes ``\\n``; see ``cooked``).
"""
import errno
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import tty

from host_sim import hostenv

_QUICKACK = getattr(socket, "TCP_QUICKACK", 0)  # Linux only; it lasts until the next delayed ACK
PRELUDE = os.path.join(hostenv.ROOT, "host_sim", "vboard_prelude.py")
ROMFS_BYTES = 1024 * 1024  # the romfs partition tools/flash.sh flash makes (romfs.bin in DIR)


def log(msg):
    print("[vboard] " + msg, flush=True)


def cooked(data, after_cr=False):
    """Console bytes as a board's UART carries them: each bare ``\\n`` as ``\\r\\n``.

    A board's MicroPython writes text output through ``mp_hal_stdout_tx_strn_cooked``
    (shared/runtime/stdout_helpers.c), which sends ``\\r\\n`` for ``\\n``; the unix port
    writes ``\\n`` and leaves the rest to the terminal, and this pty is raw. Without it a
    raw terminal (``host_sim console``) shows every multi-line output as a staircase.
    ``after_cr``: the previous chunk ended with ``\\r`` (its ``\\n`` may start this one).
    """
    out = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if after_cr and data[:1] == b"\n":
        out = out[1:]
    return out


class VBoard:
    """One virtual board: ``start()``, then ``serve()`` until ``stop()``."""

    def __init__(self, flash_dir, port, heap="2M", boot=True, host="127.0.0.1", romfs_bytes=ROMFS_BYTES):
        self.flash_dir = os.path.abspath(flash_dir)
        self.heap = heap
        self.romfs_bytes = romfs_bytes
        self.boot = boot
        self.port = port
        self.host = host
        self.proc = None
        self.master = None
        self.client = None
        self.boots = 0
        self._pending = []
        self._closing = None
        self._raw = False  # the client put the REPL in raw mode (Ctrl-A; Ctrl-B leaves it)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = None
        # Console output while nobody is connected goes to stdout through a bounded queue:
        # if nobody reads our stdout either, it is dropped (as a UART drops what nobody
        # reads) instead of stalling the board on a full pipe.
        self._console = queue.Queue(256)
        threading.Thread(target=self._write_console, daemon=True).start()

    def _write_console(self):
        while True:
            data = self._console.get()
            try:
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            except (OSError, ValueError):
                pass

    # -- the board process -------------------------------------------------------------

    def _power_on(self, boot=None):
        from host_sim import launcher

        launcher.no_first_web_password(self.flash_dir)  # no web app on the host's port 80
        exe = hostenv.micropython_exe()
        if not exe:
            raise RuntimeError(hostenv.micropython_missing())
        master, slave = os.openpty()
        tty.setraw(slave)  # socat's pty,raw,echo=0: bytes pass untouched, no echo
        env = dict(os.environ)
        env.update(MICROPYPATH=hostenv.STUBS, MIMI_FLASH="/", MIMI_VBOARD_DIR=self.flash_dir,
                   MIMI_VBOARD_BOOT=(boot or "all") if self.boot else "none",
                   MIMI_VBOARD_ROMFS_BYTES=str(self.romfs_bytes))
        # Its ROMFS partition is a bytearray in its heap (flash on a board): the heap gets
        # that much more, so what the firmware has is still ``heap``.
        heap = hostenv.heap_plus(self.heap, self.romfs_bytes + 1024) if self.romfs_bytes else self.heap
        proc = subprocess.Popen([exe, "-X", "heapsize=" + heap, "-i", PRELUDE], stdin=slave, stdout=slave,
                                stderr=slave, env=env, cwd=self.flash_dir, start_new_session=True)
        os.close(slave)
        with self._lock:
            self.proc, self.master = proc, master
            pending, self._pending = self._pending, []
        for data in pending:  # what a client sent while the board was off
            os.write(master, data)
        self.boots += 1
        threading.Thread(target=self._pump_out, args=(proc, master), daemon=True).start()

    def _pump_out(self, proc, master):
        # Board console -> client (or our stdout when nobody is connected). Ends when the
        # process exits (read gives EIO once the pty's last slave end is closed).
        after_cr = False
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                data = b""
            if not data:
                break
            data, after_cr = cooked(data, after_cr), data[-1:] == b"\r"
            with self._lock:
                c = self.client
            if c is not None:
                try:
                    c.sendall(data)
                    continue
                except OSError:
                    self._drop_client(c)
            try:
                self._console.put_nowait(data)
            except queue.Full:
                pass
        rc = proc.wait()
        with self._lock:
            self.master = None  # bytes typed meanwhile wait for the next power-on
            # Closed one reset later, so a client thread that just read it never
            # writes to a reused descriptor.
            old, self._closing = self._closing, master
        if old is not None:
            os.close(old)
        if not self._stopping.is_set():
            self._reboot(rc)

    def _reboot(self, rc):
        soft = rc == 0  # the REPL exited on Ctrl-D: MicroPython's soft reset
        raw = soft and self._raw
        log("%s (exit status %s); powering on again" % ("soft reset" if soft else "the board reset", rc))
        with self._lock:
            c = self.client
        if c is not None and soft:
            try:
                c.sendall(b"soft reboot\r\n" if raw else b"MPY: soft reboot\r\n")
            except OSError:
                pass
        self._power_on("boot" if raw else None)
        if raw:
            os.write(self.master, b"\x01")  # back in the raw REPL, as a board comes back
        else:
            self._raw = False

    # -- clients ---------------------------------------------------------------------

    def _drop_client(self, c):
        with self._lock:
            if self.client is c:
                self.client = None
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.close()

    def _pump_in(self, c):
        # Client -> board console, until the client leaves or is replaced.
        while True:
            try:
                data = c.recv(4096)
                if _QUICKACK:
                    # Acknowledge at once: mpremote (pyserial's socket://) writes small
                    # pieces without TCP_NODELAY, so each of its commands would otherwise
                    # wait for our delayed ACK (40 ms on Linux): a deploy took 50 s, not 10.
                    c.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                data = b""
            if not data:
                break
            with self._lock:
                if self.client is not c:
                    break
                master = self.master
                if master is None:
                    self._pending.append(data)
            i = max(data.rfind(b"\x01"), data.rfind(b"\x02"))
            if i >= 0:
                self._raw = data[i] == 1
            if master is None:
                continue
            try:
                os.write(master, data)
            except OSError:
                pass  # the board is powering off this moment
        self._drop_client(c)

    # -- serving ---------------------------------------------------------------------

    def start(self):
        """Listen on the port and power the board on. Returns the port (P=0 picks one)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, self.port))
        s.listen(4)
        self._listener = s
        self.port = s.getsockname()[1]
        log("flash %s, serving the REPL on socket://127.0.0.1:%d (mpremote connect socket://127.0.0.1:%d resume ...)"
            % (self.flash_dir, self.port, self.port))
        self._power_on()
        return self.port

    def serve(self):
        """Accept clients until ``stop()``."""
        while not self._stopping.is_set():
            try:
                r, _, _ = select.select([self._listener], [], [], 0.2)
            except (OSError, ValueError):
                break
            if not r:
                continue
            try:
                c, _ = self._listener.accept()
            except OSError:
                continue
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                old, self.client = self.client, c
            if old is not None:
                self._drop_client(old)
            threading.Thread(target=self._pump_in, args=(c,), daemon=True).start()

    def stop(self):
        """Power the board off and close every socket."""
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            c = self.client
        if c is not None:
            self._drop_client(c)
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main(flash_dir, port, heap="2M", boot=True, romfs_bytes=ROMFS_BYTES):
    """Serve a virtual board until SIGINT/SIGTERM; return an exit status.

    ``romfs_bytes``: size of its ROMFS partition (0: a MicroPython without ROMFS, as the
    micropython.org builds: no ``vfs.rom_ioctl``).
    """
    try:
        os.makedirs(flash_dir, exist_ok=True)
    except OSError as e:
        print("vboard: --flash %s: %s" % (flash_dir, e.strerror or e), file=sys.stderr)
        return 2
    if not hostenv.micropython_exe():
        print("vboard: %s" % hostenv.micropython_missing(), file=sys.stderr)
        return 2
    vb = VBoard(flash_dir, port, heap, boot, romfs_bytes=romfs_bytes)
    try:
        vb.start()
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            print("vboard: port %d is in use (another virtual board?): --port N for another, 0 for any free one"
                  % port, file=sys.stderr)
        else:
            print("vboard: %s" % (e.strerror or e), file=sys.stderr)
        vb.stop()
        return 2
    except RuntimeError as e:
        print("vboard: %s" % e, file=sys.stderr)
        vb.stop()
        return 2

    def on_signal(signum, frame):
        vb._stopping.set()

    old_int = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        vb.serve()
    finally:
        vb.stop()
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    log("stopped")
    return 0
