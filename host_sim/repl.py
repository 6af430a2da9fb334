"""The console of ``python -m host_sim run``: Python typed on the desktop, run on the board.

On a board the REPL stays live on the serial console while the assistant runs in its
threads, and ``cli.pair()``, ``cli.allow(ID)`` or ``cli.status()`` are typed there. Here
the launcher reads the lines (with line editing and history where Python has
``readline``), and the board process (``host_sim/board.py``) runs each one between the
firmware's threads, with ``cli``, ``app`` and ``config`` already imported, printing an
expression's value as the REPL does. Each entry goes to the board's stdin as one line,
``exec <JSON string>``; the board writes a byte on the ack pipe when it has run, so the
next prompt comes after the answer. A line ending in ``:`` starts a block that an empty
line ends.

On a terminal, in the foreground, the console is on by default (``--no-console`` leaves
it out); with ``--console`` it also reads piped lines (each shown after ``>>>``, a call
that sets a secret without its arguments), and the board stops after the last one has
run. Ctrl-D (end of input) or Ctrl-C stops the board.
"""
import json
import os
import re
import select
import sys

BANNER = ("Console: Python on the board, as its REPL (the assistant keeps running): cli.status(), cli.pair(), "
          "cli.allow(CHAT_ID), cli.config_show(), cli.help(). Ctrl-D or Ctrl-C stops the board.")
ACK_WAIT_S = 330  # cli.ask waits up to 300 s for its answer
# The console commands that take a secret (texts.md "## cli"): piped lines are shown with
# their arguments hidden, so a transcript never holds a password or a key.
_SECRET_CALL = re.compile(r"\b(set_wifi|set_api_key|set_tg_token|set_search_key|set_feishu|set_proxy|config\.set)\s*\(.*", re.S)


def shown(line):
    """``line`` as the transcript may show it: a call that sets a secret without its arguments."""
    return _SECRET_CALL.sub(lambda m: m.group(1) + "(****)", line)


def _entries(read, interactive, out):
    """Yield console entries (str): a line, or a block begun by a line ending in ':'."""
    while True:
        try:
            line = read(">>> " if interactive else "")
        except EOFError:
            return
        if not line.strip():
            continue
        if not interactive:
            out.write(">>> %s\n" % shown(line))
            out.flush()
        block = [line]
        while block[-1].rstrip().endswith(":") or len(block) > 1 and block[-1].strip():
            try:
                more = read("... " if interactive else "")
            except EOFError:
                break
            if not interactive:
                out.write("... %s\n" % shown(more))
            block.append(more)
        yield "\n".join(block).rstrip() + ("\n" if len(block) > 1 else "")


def _reader(stdin, interactive):
    if interactive:
        try:
            import readline  # noqa: F401 - input() gets line editing and history
        except ImportError:
            pass
        return input

    def read(prompt):
        line = stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    return read


def serve(send, ack_fd, alive, stdin=None, out=None):
    """Read console entries until end of input; run each on the board and wait for it.

    ``send(text)`` writes one line to the board (False when it is gone), ``ack_fd`` the
    read end of the ack pipe, ``alive()`` False once the board is stopping. Returns at
    end of input (the caller then stops the board) or when the board is gone.
    """
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    interactive = stdin.isatty()
    if interactive:
        out.write(BANNER + "\n")
        out.flush()
    for entry in _entries(_reader(stdin, interactive), interactive, out):
        if not alive() or not send("exec " + json.dumps(entry) + "\n"):
            return
        waited = 0.0
        while alive() and waited < ACK_WAIT_S:
            r, _, _ = select.select([ack_fd], [], [], 0.2)
            if r:
                os.read(ack_fd, 64)
                break
            waited += 0.2


def foreground_tty():
    """True when stdin is a terminal and this process is its foreground job: a console read
    by a background job (``run &``) would stop it (SIGTTIN)."""
    try:
        return sys.stdin.isatty() and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def tty_state():
    """The terminal's settings (to restore them at exit: readline may hold it mid-line), or None."""
    try:
        import termios

        return termios.tcgetattr(sys.stdin.fileno()) if sys.stdin.isatty() else None
    except (ImportError, OSError, ValueError):
        return None


def tty_restore(saved):
    if saved is not None:
        import termios

        try:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
        except (OSError, ValueError):
            pass


def start(current, stopping, ack_r, stop):
    """Run ``serve`` in a thread for ``launcher.run``: ``current[0]`` is the board process
    (a new one after each reset), ``stopping[0]`` true once it is being stopped; at the end
    of input, ``stop()``."""
    import threading
    import time

    def send(text):
        p = current[0]
        if p is None or p.poll() is not None or p.stdin is None:
            return False
        try:
            p.stdin.write(text.encode())
            p.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def serve_lines_until_stop():
        while current[0] is None and not stopping[0]:  # the first boot is starting
            time.sleep(0.05)
        serve(send, ack_r, lambda: not stopping[0])
        if not stopping[0]:
            stop()

    threading.Thread(target=serve_lines_until_stop, daemon=True).start()
