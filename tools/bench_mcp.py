"""The MCP endpoint's heap and time under MicroPython (issue 18; docs/heap.md, "MCP").

    python3 tools/bench_mcp.py [N]          (N requests of each kind, 50 unless given)

Run with CPython: it prepares a scratch flash (a memory note, the shipped datasheets)
and runs this same file under ``micropython -X heapsize=512K`` (``MIMI_MICROPYTHON``
picks another binary, e.g. the 32-bit ``../shared/tools/micropython32``), which prints:
- the heap ``mimi.mcp`` and ``mimi.web.mcp_route`` hold once imported (from .py files; the
  ROMFS figure is tools/bench_import.py's), the tool modules being loaded already, as
  ``mimi.app.init`` loads them;
- per request kind, through ``mcp.Server.handle`` (the part after microdot has read the
  request): the bytes it allocates (``gc.mem_alloc`` with the collector off: what the
  request needs at its peak, at most), the heap still held after a collection (a
  session), and microseconds per request (mean; ``time.ticks_us``).
Host figures: an ESP32-S3 at 240 MHz is roughly 10-20 times slower for the same bytecode.
"""
import sys

if sys.implementation.name != "micropython":
    import os
    import shutil
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from host_sim import hostenv

    def main():
        exe = hostenv.micropython_exe()
        if not exe:
            print("bench_mcp: %s" % hostenv.micropython_missing(), file=sys.stderr)
            return 2
        print("== micropython: %s" % hostenv.micropython_about(exe), flush=True)
        flash = tempfile.mkdtemp(prefix="mimi-bench-mcp-")
        try:
            shutil.copytree(os.path.join(root, "spiffs_seed"), os.path.join(flash, "data"))
            with open(os.path.join(flash, "data", "memory", "MEMORY.md"), "w") as f:
                f.write("# Memory\n" + "".join("- note %d: the porch light is on GPIO4\n" % i for i in range(40)))
            env = dict(os.environ, MIMI_FLASH=flash, MICROPYPATH=hostenv.micropython_path())
            n = sys.argv[1] if len(sys.argv) > 1 else "50"
            return subprocess.call([exe, "-X", "heapsize=512K", os.path.abspath(__file__), n], env=env, cwd=root)
        finally:
            shutil.rmtree(flash, ignore_errors=True)

    sys.exit(main())

import gc
import json
import time

from mimi import log
from mimi.tools import clock, cron_tools, files, gpio as gpio_tools, memory_tools, messaging, registry

log.level = log.WARN  # a line per tool call would be timed too
for m in (files, memory_tools, clock, messaging, cron_tools, gpio_tools):
    m.register_all()
gc.collect()
before = gc.mem_alloc()
from mimi import mcp  # noqa: E402
from mimi.web import mcp_route  # noqa: E402

gc.collect()
print("heap held by mimi.mcp + mimi.web.mcp_route (.py files): %d B" % (gc.mem_alloc() - before))

N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
H = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
srv = mcp.Server(mcp_route.BoardTools(), "mimi", "0", "bench")
init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}).encode()
sid = srv.handle("POST", H, init)[1]["Mcp-Session-Id"]
HS = dict(H)
HS["Mcp-Session-Id"] = sid


def req(method, params=None):
    m = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode()


CASES = (  # initialize last: its sessions push the bench's own out
    ("notifications/initialized", HS, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()),
    ("ping", HS, req("ping")),
    ("tools/list", HS, req("tools/list")),
    ("tools/call get_current_time", HS, req("tools/call", {"name": "get_current_time", "arguments": {}})),
    ("tools/call gpio_read", HS, req("tools/call", {"name": "gpio_read", "arguments": {"pin": 4}})),
    ("tools/call memory_search", HS, req("tools/call", {"name": "memory_search", "arguments": {"query": "porch"}})),
    ("tools/call read_file (SOUL.md)", HS, req("tools/call", {"name": "read_file",
                                                              "arguments": {"path": "/data/config/SOUL.md"}})),
    ("tools/call, bad arguments", HS, req("tools/call", {"name": "gpio_write", "arguments": {"pin": 4}})),
    ("initialize (a new session)", H, init),
)
for name, h, body in CASES:
    status, _, out = srv.handle("POST", h, body)  # once first: what a first call loads stays out of the figure
    gc.collect()
    held0 = gc.mem_alloc()
    gc.disable()
    a = gc.mem_alloc()
    srv.handle("POST", h, body)
    peak = gc.mem_alloc() - a
    gc.enable()
    gc.collect()
    held = gc.mem_alloc() - held0
    t0 = time.ticks_us()
    for _ in range(N):
        srv.handle("POST", h, body)
    us = time.ticks_diff(time.ticks_us(), t0) / N
    print("%-34s HTTP %d  answer %5d B  allocates %6d B  holds %+5d B  %7.0f us"
          % (name, status, len(out or b""), peak, held, us))
print("sessions kept at most: 4 (each a short list and a 32-character id)")
