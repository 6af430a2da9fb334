"""``python -m host_sim console --port socket://HOST:PORT``: a terminal for a REPL on TCP.

``mpremote connect socket://... repl`` fails on a socket port (mpremote's console wants
the serial port's file descriptor: ``AttributeError: 'Serial' object has no attribute
'fd'``), so this is the console of the virtual board (``python -m host_sim vboard``) and of
any board behind a TCP serial bridge; ``tools/flash.sh --port socket://... repl`` runs it.

Bytes go both ways untouched. When stdin is a terminal it is put in raw mode (restored at
exit), so Ctrl-C, Ctrl-D and the arrow keys reach the board as they would over USB;
Ctrl-] (or Ctrl-X, as in mpremote) quits. Piped input is sent line by line with each
``\\n`` sent as ``\\r`` (the Enter key a terminal sends), and the console quits once the
board has been quiet for ``quiet_s`` after the last line: ``echo 'print(1+1)' | python -m
host_sim console --port socket://127.0.0.1:7777``.
"""
import os
import select
import socket
import sys

QUIT_KEYS = b"\x1d\x18"  # Ctrl-], Ctrl-X
QUIET_S = 1.0  # piped input: quit when the board has said nothing for this long after EOF


def parse_port(port):
    """``socket://HOST:PORT`` (or ``HOST:PORT``, or a bare port number) -> ``(host, port)``.

    Raises ``ValueError`` for anything else (a serial device is mpremote's job).
    """
    s = port[len("socket://"):] if port.startswith("socket://") else port
    host, _, num = s.rpartition(":")
    if not num.isdigit() or not 0 < int(num) < 65536 or "/" in s:
        raise ValueError("expected socket://HOST:PORT, got %r (for a serial device use: mpremote connect %s repl)"
                         % (port, port))
    return host or "127.0.0.1", int(num)


def run(port, stdin=None, stdout=None, quiet_s=QUIET_S):
    """Connect to ``port`` and relay until Ctrl-], the end of piped input, or the board
    closing the connection. Returns an exit status (2 when it cannot connect)."""
    stdin = stdin or sys.stdin
    out = stdout or sys.stdout.buffer
    try:
        host, num = parse_port(port)
        conn = socket.create_connection((host, num), timeout=5)
    except (ValueError, OSError) as e:
        print("console: %s" % e, file=sys.stderr)
        return 2
    conn.settimeout(None)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fd = stdin.fileno()
    saved = None
    if os.isatty(fd):
        import termios
        import tty

        saved = termios.tcgetattr(fd)
        tty.setraw(fd)
        sys.stderr.write("Connected to %s:%d. Ctrl-] quits.\r\n" % (host, num))
    try:
        return _relay(conn, fd, out, saved is not None, quiet_s)
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
            sys.stderr.write("\n")
        conn.close()


def _relay(conn, fd, out, interactive, quiet_s):
    watch = [conn, fd]
    while True:
        ready, _, _ = select.select(watch, [], [], None if fd in watch else quiet_s)
        if not ready:
            return 0  # piped input sent and the board has gone quiet
        if conn in ready:
            data = conn.recv(4096)
            if not data:
                print("console: the board closed the connection", file=sys.stderr)
                return 0
            out.write(data)
            out.flush()
        if fd in ready:
            data = os.read(fd, 1024)
            if not data:
                watch.remove(fd)  # end of piped input: listen until the board is quiet
                continue
            if interactive:
                cut = min((i for i in (data.find(k) for k in QUIT_KEYS) if i >= 0), default=-1)
                if cut >= 0:
                    conn.sendall(data[:cut])
                    return 0
            else:
                data = data.replace(b"\r\n", b"\r").replace(b"\n", b"\r")
            conn.sendall(data)
