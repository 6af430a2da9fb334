# Runs the firmware as the board would: /boot.py, then /main.py, then keeps the process
# alive until SIGINT/SIGTERM or a requested reset. Both CPython (imported by launcher.py)
# and the micropython command (run as a script) execute this file; it is not firmware.
import sys
import time

_RESET_EXIT = 75


def _exec(path):
    with open(path) as f:
        src = f.read()
    g = {"__name__": "__main__", "__file__": path}
    exec(compile(src, path, "exec"), g)


def _launcher_lines():
    """A closure giving the launcher's next line on stdin: "stop", "exec <json>", or None.

    Only when ``MIMI_STOP_STDIN`` or ``MIMI_CONSOLE_ACK_FD`` is set (stdin is then the
    launcher's pipe): it stops a micropython board with "stop" rather than with SIGINT,
    and sends the console's lines as "exec <JSON string>" (host_sim/launcher.py). A
    closed stdin reads as "stop". Lines are read byte by byte (the raw stream), so no
    line waits in a buffer that poll does not see.
    """
    import os

    if not (os.getenv("MIMI_STOP_STDIN") or os.getenv("MIMI_CONSOLE_ACK_FD")):
        return lambda: None
    import select

    p = select.poll()
    p.register(sys.stdin, select.POLLIN)
    src = getattr(sys.stdin, "buffer", sys.stdin)
    src = getattr(src, "raw", src)

    def next_line():
        for _, ev in p.poll(0):
            if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                line = src.readline()
                if not line:
                    return "stop"
                line = line.decode() if isinstance(line, bytes) else line
                return line.strip() or None
        return None

    return next_line


def _console_ack():
    """A function telling the launcher that a console line has run (its ack pipe), or None."""
    import os

    fd = os.getenv("MIMI_CONSOLE_ACK_FD")
    if not fd:
        return None
    if sys.implementation.name != "micropython":
        return lambda: os.write(int(fd), b"\n")
    f = open(int(fd), "wb")  # the unix port's open takes a descriptor; writes go straight out

    def ack():
        f.write(b"\n")

    return ack


_CONSOLE_NS = {"__name__": "__console__"}


def _console_run(src):
    """Run one console entry as the REPL would: an expression's value is printed."""
    ns = _CONSOLE_NS
    if "cli" not in ns:
        from mimi import app, cli, config

        ns.update(cli=cli, app=app, config=config)
    try:
        try:
            code = compile(src, "<console>", "eval")
        except SyntaxError:
            code = None
        if code is not None:
            r = eval(code, ns)
            if r is not None:
                print(repr(r))
        else:
            exec(compile(src, "<console>", "exec"), ns)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: B036 - the REPL shows it and carries on
        if hasattr(sys, "print_exception"):
            sys.print_exception(e)
        else:
            import traceback

            traceback.print_exception(type(e), e, e.__traceback__.tb_next)  # from the entry's frame on


def run(firmware_dir):
    """Boot the firmware from ``firmware_dir`` and idle like the REPL would; return an exit status.

    With the launcher's console (``MIMI_CONSOLE_ACK_FD``) it runs what is typed there,
    between the firmware's threads, as a board's REPL does.
    """
    import machine

    next_line = _launcher_lines()
    ack = _console_ack()
    try:
        # Ctrl-C may come while boot.py or main.py still run: stop cleanly then too.
        _exec(firmware_dir + "/boot.py")
        _exec(firmware_dir + "/main.py")
        while not getattr(machine, "RESET_REQUESTED", False):
            line = next_line()
            if line == "stop":
                raise KeyboardInterrupt
            if line and line[:5] == "exec " and ack:
                import json

                try:
                    _console_run(json.loads(line[5:]))
                finally:
                    for f in (sys.stdout, sys.stderr):  # its answer is out before the next prompt
                        if hasattr(f, "flush"):
                            f.flush()
                    ack()
                continue
            time.sleep_ms(100)
    except KeyboardInterrupt:
        _stop()
        return 0
    _stop()
    return _RESET_EXIT


def _stop():
    # A second Ctrl-C while the app stops (a terminal sends one to every process of its
    # group) must not end in a traceback: the stop starts over and finishes.
    for _ in range(5):
        try:
            from mimi import app

            stop = getattr(app, "stop", None)
            if stop:
                stop()
            return
        except KeyboardInterrupt:
            print("[sim] stopping the app; one moment")
        except Exception as e:  # noqa: BLE001 - stopping must not hide the exit
            print("[sim] stop failed: %r" % (e,))
            return


if __name__ == "__main__":
    # micropython host_sim/board.py <firmware_dir>
    import _romfs  # host_sim/stubs: with MIMI_ROMFS_IMAGE, the package's image at /rom first

    _romfs.mount()
    sys.exit(run(sys.argv[1]))
