# Runs first in every virtual-board process (the micropython command, run by
# host_sim/vboard.py with -i so its REPL follows). Host code, not firmware.
#
# The unix port's "/" is the host's "/": this swaps it for the folder that plays the
# board's flash, so the REPL, mpremote and the firmware see what a board would
# (/boot.py, /main.py, /lib, /data). Checked on MicroPython 1.29 (unix):
# vfs.umount("/") then vfs.mount(vfs.VfsPosix(DIR), "/") works; files opened later go
# through the new root, and a sub-mount would show up in os.listdir("/"), so the
# host's stand-ins (esp32, machine, network, ntptime) are imported before the swap
# instead of mounted.
#
# MIMI_FLASH is "." here, so the firmware's real paths are relative ("./data/x"), which
# this root resolves the same way: in 1.29 VfsPosix mounted at "/" fails
# os.rename("/a.tmp", "/a") with ENOENT when both paths are absolute (one relative
# works), and every atomic write renames.
import os
import sys
import vfs

import _simflash  # noqa: F401 - stand-ins first, while the host's files are visible
import esp32  # noqa: F401
import machine
import network  # noqa: F401
import ntptime  # noqa: F401

vfs.umount("/")
vfs.mount(vfs.VfsPosix(os.getenv("MIMI_VBOARD_DIR")), "/")
os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]  # as on the ESP32 port


def _watch_reset():
    # machine.reset() from a thread other than the REPL's only sets RESET_REQUESTED;
    # end the process so the virtual board powers on again, as the chip would.
    import time

    while not machine.RESET_REQUESTED:
        time.sleep_ms(200)
    os.system("kill -TERM $PPID")


def _power_on():
    import _thread

    _thread.start_new_thread(_watch_reset, ())
    mode = os.getenv("MIMI_VBOARD_BOOT")  # "all", "boot" (soft reset in the raw REPL) or "none"
    if mode == "none":
        return
    for name in ("/boot.py", "/main.py") if mode == "all" else ("/boot.py",):
        try:
            os.stat(name)
        except OSError:
            continue
        try:
            with open(name) as f:
                src = f.read()
            exec(compile(src, name, "exec"), globals())
        except SystemExit:
            raise
        except BaseException as e:  # noqa: B036 - a board still gives its REPL
            sys.print_exception(e)


_power_on()
del _power_on, vfs
