"""Import the whole ``mimi`` package under MicroPython and print the GC heap it holds.

    python3 tools/bench_import.py [HEAP]          (HEAP: 256K unless given)

runs ``micropython -X heapsize=HEAP tools/bench_import_board.py`` twice and prints one
line per module with the heap it added, then the totals (budget: 96 KB after import,
issue 2):

1. ROMFS, as ``tools/flash.sh deploy`` puts the package on a board: the package's ROMFS
   image (``host_sim/romfs.py``: .mpy files, built with mpremote's writer) mounted at
   ``/rom`` with ``vfs.VfsRom``. On a board the image is memory-mapped flash and the
   bytecode and strings run from there ("Working with ROMFS", MicroPython docs). The
   unix port has no flash to map, so the image is read into the GC heap first (which is
   given that much more than HEAP): the line ``heap after import:`` is ``gc.mem_alloc()``
   less the image's own blocks, measured before the import. This figure is the budgeted
   one.
2. Plain ``.py`` files (the host simulator's way, and a board without a ROMFS
   partition): the line ``heap after import from .py files:``.
Each run then imports the optional modules (Feishu's, imported only when Feishu is set up;
``mimi.doctor``, which only ``tools/flash.sh doctor`` runs; the automations' engine and
sensors, imported once there is a rule; the web app's and microdot, only while a web
password is set) and prints ``heap with the Feishu channel too:``; the budget is for the
package without them.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARD = os.path.join(ROOT, "tools", "bench_import_board.py")
# Imported only when the owner sets Feishu up (mimi.app.init, feishu_app_id) or MQTT
# (mqtt_url), and mimi.doctor, which only tools/flash.sh doctor runs: measured apart, after the budgeted
# package (named to the board script in MIMI_BENCH_LATER).
OPTIONAL = "mimi.channels.feishu mimi.channels.fsformat mimi.net.ws mimi.net.pbbp2 mimi.doctor" \
    " mimi.net.mqtt mimi.net.hass mimi.tools.mqtt_tools"
# The automations (issue 18): loaded once the owner has a rule or calls a rule tool
# (mimi.rules.tick, the rule tools' lines in tools.jsonl); the hook stays budgeted.
OPTIONAL += " mimi.rules.chat mimi.rules.engine mimi.rules.actions mimi.rules.store mimi.hw.sensors"
# The web app and the LAN gateway (issue 16): loaded only while web_password is set, with
# microdot (firmware/lib, in the image beside mimi).
OPTIONAL += (" mimi.web mimi.web.auth mimi.web.server mimi.web.gateway mimi.web.assets mimi.web.pages"
             " microdot microdot.websocket")
# The setup portal: loaded in the portal mode, instead of the app (or beside it once WiFi
# has been down for minutes); docs/heap.md "Setup portal" has its figures.
OPTIONAL += " mimi.web.portal mimi.web.setup_form mimi.net.captive_dns"
# The web app's other routes (loaded with it, only while a web password is set): MCP for
# desktop agents; updates over WiFi, whose writing and checking modules load at the first
# upload (mimi.ota itself, read by /status, stays budgeted).
OPTIONAL += " mimi.mcp mimi.web.mcp_route mimi.web.update_route mimi.ota_image mimi.ota_firmware mimi.ota_flash"


def main(heap="256K"):
    sys.path.insert(0, ROOT)
    from host_sim import hostenv, romfs

    exe = hostenv.micropython_exe()
    if not exe:
        print("%s: %s" % (os.path.basename(__file__), hostenv.micropython_missing()), file=sys.stderr)
        return 2
    print("== micropython: %s" % hostenv.micropython_about(exe), flush=True)
    base = dict(os.environ, MIMI_FLASH=tempfile.gettempdir(), MIMI_BENCH_LATER=OPTIONAL)
    with tempfile.TemporaryDirectory(prefix="mimi-bench-import-") as d:
        image = os.path.join(d, "mimi.romfs")
        with open(image, "wb") as f:
            f.write(romfs.build())
        # No firmware/ on the path, and the heap given the image's room (hostenv.romfs_board).
        env, big = hostenv.romfs_board(base, heap, image)
        print("== ROMFS image (%d B) mounted at /rom, micropython -X heapsize=%s (%s, plus the image's room)"
              % (os.path.getsize(image), big, heap), flush=True)
        rc = subprocess.call([exe, "-X", "heapsize=" + big, BOARD], env=env, cwd=d)
    if rc == 0:
        print("== .py files from firmware/, micropython -X heapsize=%s" % heap, flush=True)
        env = dict(base, MICROPYPATH=hostenv.micropython_path())
        rc = subprocess.call([exe, "-X", "heapsize=" + heap, BOARD], env=env, cwd=ROOT)
    return rc


if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1].startswith("-"):
        print(__doc__)
        raise SystemExit(0 if sys.argv[1] in ("-h", "--help") else 2)
    raise SystemExit(main(*sys.argv[1:2]))
