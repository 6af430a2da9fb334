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


def _stop_asked():
    """A closure that is True once the launcher wrote "stop" (or closed) on stdin.

    Only when ``MIMI_STOP_STDIN`` is set: the launcher stops a micropython board this way
    rather than with SIGINT (see host_sim/launcher.py).
    """
    import os

    if not os.getenv("MIMI_STOP_STDIN"):
        return lambda: False
    import select

    p = select.poll()
    p.register(sys.stdin, select.POLLIN)

    def asked():
        for _, ev in p.poll(0):
            if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                return True
        return False

    return asked


def run(firmware_dir):
    """Boot the firmware from ``firmware_dir`` and idle like the REPL would; return an exit status."""
    import machine

    asked = _stop_asked()
    try:
        # Ctrl-C may come while boot.py or main.py still run: stop cleanly then too.
        _exec(firmware_dir + "/boot.py")
        _exec(firmware_dir + "/main.py")
        while not getattr(machine, "RESET_REQUESTED", False):
            if asked():
                raise KeyboardInterrupt
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
