"""The web app's cost under MicroPython: heap, the web thread's stack depth (issue 16).

    python3 tools/bench_web.py [HEAP]        (HEAP: 2M unless given)

runs ``tools/bench_web_board.py`` (``mimi.app.init``, then the web app on top, with a
stand-in agent that echoes) under the ``micropython`` command and, when it is there, the
32-bit ``../shared/tools/micropython32`` (chip-like pointer sizes), from ``.py`` files: the
bytecode of microdot and ``mimi.web`` sits in the heap (a board with the ROMFS image or a
frozen firmware keeps it in flash: less there). Figures are the heap above the app's
own after ``init``. Meanwhile this process logs in (once wrong), opens every page 3 times, saves
MEMORY.md, and chats over 2 gateway connections (3 messages each; not on micropython32,
whose hashlib has no sha1 for the handshake: it was built without TLS). Printed per run:
- ``after init``: heap held once ``server.init`` has loaded microdot and built the apps;
- ``after requests``: heap held afterwards (collected): what the web app keeps;
- ``peak``: the highest ``gc.mem_alloc`` seen (not collected: an upper bound);
- ``stack``: the deepest ``micropython.stack_use()`` of the web thread at a file write,
  the status text and the bus (bytes; the board's thread gets ``WEB_THREAD_STACK_BYTES``).
"""
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PASSWORD = "fake-bench-pass"


def _port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _traffic(wp, gp, chat_too=True):
    import websockets

    url = "http://127.0.0.1:%d" % wp
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/login", timeout=2)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a):
            return None
    op = urllib.request.build_opener(NoRedirect)

    def post(path, data, cookie=None):
        h = {"Cookie": "mimi_session=" + cookie} if cookie else {}
        try:
            return op.open(urllib.request.Request(url + path, urllib.parse.urlencode(data).encode(), h), timeout=10)
        except urllib.error.HTTPError as e:
            return e
    post("/login", {"password": "wrong-wrong"})
    r = post("/login", {"password": PASSWORD})
    sid = r.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    for _ in range(3):
        for p in ("/", "/status", "/reminders", "/files", "/settings", "/log", "/edit?path=/data/memory/MEMORY.md",
                  "/app.css", "/app.js"):
            op.open(urllib.request.Request(url + p, headers={"Cookie": "mimi_session=" + sid}), timeout=10).read()
    page = op.open(urllib.request.Request(url + "/files", headers={"Cookie": "mimi_session=" + sid})).read().decode()
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    r = post("/edit", {"csrf": csrf, "path": "/data/memory/MEMORY.md", "content": "# Memory\n\n- bench\n" * 40}, sid)
    assert r.status == 200, r.status
    # MCP (issue 18): the board's tools run in this thread too; the deepest of them
    mcp_h = {"Authorization": "Bearer " + PASSWORD, "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}

    def rpc(body, sid=None):
        h = dict(mcp_h, **({"Mcp-Session-Id": sid} if sid else {}))
        return op.open(urllib.request.Request(url + "/mcp", json.dumps(body).encode(), h), timeout=10)
    r = rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    msid = r.headers["Mcp-Session-Id"]
    r.read()
    rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}, msid).read()
    rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, msid).read()
    for i, (name, args) in enumerate((("memory_search", {"query": "bench"}), ("read_file", {"path": "/data/memory/MEMORY.md"}),
                                      ("gpio_write", {"pin": 4, "level": 1}), ("cron_list", {}), ("rule_list", {}))):
        rpc({"jsonrpc": "2.0", "id": 3 + i, "method": "tools/call", "params": {"name": name, "arguments": args}}, msid).read()

    async def chat():
        conns = [await websockets.connect("ws://127.0.0.1:%d/?token=%s" % (gp, PASSWORD)) for _ in range(2)]
        for i in range(3):
            for n, ws in enumerate(conns):
                await ws.send(json.dumps({"type": "message", "content": "hello %d" % i, "chat_id": "b%d" % n}))
                while json.loads(await asyncio.wait_for(ws.recv(), 20))["type"] != "done":
                    pass
        for ws in conns:
            await ws.close()
    if chat_too:
        asyncio.run(chat())


def run(exe, heap, mpy, chat_too=True):
    from host_sim import hostenv, romfs

    flash = tempfile.mkdtemp(prefix="mimi-bench-web-")
    os.makedirs(os.path.join(flash, "data", "memory"))
    path = (hostenv.STUBS, hostenv.FIRMWARE, hostenv.LIB, ".frozen")
    if mpy:
        stage = os.path.join(flash, "code")
        romfs.stage(stage)
        path = (hostenv.STUBS, stage, ".frozen")
    wp, gp = _port(), _port()
    env = dict(os.environ, MICROPYPATH=os.pathsep.join(path), MIMI_FLASH=flash)
    p = subprocess.Popen([exe, "-X", "heapsize=" + heap, os.path.join(ROOT, "tools", "bench_web_board.py"),
                          PASSWORD, str(wp), str(gp)], env=env, cwd=flash, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    failed = None
    try:
        _traffic(wp, gp, chat_too)
    except Exception as e:  # noqa: BLE001 - shown with the board's output below
        failed = e
    finally:
        open(os.path.join(flash, "stop"), "w").close()
        out = p.communicate(timeout=30)[0]
        shutil.rmtree(flash, ignore_errors=True)
    if failed:
        raise RuntimeError("%r; the board said:\n%s" % (failed, out))
    got = {}
    for line in out.splitlines():
        if line.startswith("@@"):
            k, v = line[2:].split()
            got[k] = int(v)
    if "done" not in got:
        raise RuntimeError(out)
    return got


def main(heap="2M"):
    from host_sim import hostenv

    exes = [("64-bit", hostenv.micropython_exe())]
    m32 = os.path.join(os.path.dirname(ROOT), "shared", "tools", "micropython32")
    if not os.path.exists(m32):
        m32 = "/work/shared/tools/micropython32"
    if os.path.exists(m32):
        exes.append(("32-bit", m32))  # no hashlib.sha1 (built without TLS): no WebSocket handshake
    print("%-7s %-5s %10s %14s %8s %7s" % ("port", "code", "after init", "after requests", "peak", "stack"))
    for name, exe in exes:
        for mpy in (False,):
            g = run(exe, heap, mpy, name == "64-bit")
            print("%-7s %-5s %7.1f KB %11.1f KB %5.1f KB %5d B" % (
                name, ".mpy" if mpy else ".py", g["after_init"] / 1024, g["after_requests"] / 1024,
                g["peak"] / 1024, g["stack_use"]) + ("" if name == "64-bit" else "  (pages only: no WebSocket)"))


if __name__ == "__main__":
    main(*sys.argv[1:])
