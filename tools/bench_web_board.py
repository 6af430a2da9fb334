# Run by tools/bench_web.py under the micropython command (not a test, not the firmware):
# the web app on top of the initialised app (mimi.app.init: its modules loaded, its buffers
# made; its threads not started: this script plays the agent), its heap and the web
# thread's stack depth.
# Prints "@@name value" lines. Stops when the file /stop appears in the flash folder.
import gc
import sys
import time

import micropython

from mimi import bus, config, seam

config.set("web_made", "1")  # no password made: the app starts without the web first
config.set("web_port", sys.argv[2])
config.set("gateway_port", sys.argv[3])

depth = [0]


def deep(fn):
    # wrap fn: record micropython.stack_use() (bytes of the calling thread's stack) at its calls
    def wrapped(*a, **kw):
        u = micropython.stack_use()
        if u > depth[0]:
            depth[0] = u
        return fn(*a, **kw)
    return wrapped


from mimi import app  # noqa: E402

app.init()
b = app.state["bus"]
gc.collect()
print("@@app", gc.mem_alloc())
base = gc.mem_alloc()
config.set("web_password", sys.argv[1])
from mimi.web import server  # noqa: E402

t0 = time.ticks_ms()
server.init(b)
gc.collect()
print("@@init_ms", time.ticks_diff(time.ticks_ms(), t0))
print("@@after_init", gc.mem_alloc() - base)

# the deepest calls a request makes: a file's atomic write, the status text, the bus
from mimi.storage import fs  # noqa: E402
from mimi import commands, guard  # noqa: E402

fs.write = deep(fs.write)
commands.status = deep(commands.status)
from mimi.tools import registry  # noqa: E402 - MCP's tools/call runs the tools here

registry.execute = deep(registry.execute)
seam.real_path = deep(seam.real_path)  # every file operation ends here, deepest in a tool's call
guard.admit = deep(guard.admit)

server.start()
peak = 0
while True:
    a = gc.mem_alloc() - base
    if a > peak:
        peak = a
    try:
        import os

        os.stat(seam.real_path("/stop"))
        break
    except OSError:
        pass
    while len(b.inbound):  # the agent's part: take the chat's messages, answer them
        m = b.inbound.get(0)
        b.send("gateway", m["chat_id"], "echo: " + m["text"])
        b.send("gateway", m["chat_id"], "", "idle")
    q = b.outbound.get(0)
    while q is not None:
        server.deliver(q)
        q = b.outbound.get(0)
    time.sleep_ms(5)
gc.collect()
print("@@after_requests", gc.mem_alloc() - base)
print("@@peak", peak)
print("@@stack_use", depth[0])
server.stop()
print("@@done", 1)
