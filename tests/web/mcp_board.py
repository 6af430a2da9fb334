"""A board for the MCP tests: a fresh flash with a memory note and a datasheet, the tool
modules registered, a microdot app serving ``mimi.web.mcp_route`` with a made-up token.

Imported by tests/web/test_mcp_sdk.py (CPython, the app in a thread), and run as a
script by the ``micropython`` command (``MCP_PORT`` from the environment), which serves
until it is killed: the SDK then talks to the board's own runtime.
"""
import machine
from microdot import Microdot

from mimi import config
from mimi.hw import datasheets, gpio, pins
from mimi.tools import clock, cron_tools, files, gpio as gpio_tools, memory_tools, messaging, registry
from mimi.web import mcp_route
import support

TOKEN = "made-up-token"
OWNER = "4242"
MEMORY = "# Memory\n- the porch light is on GPIO4\n- the owner likes tea\n"
SHEET = "# Board\n\n## Pin Aliases\n| porch light | 4 |\n"


def authorized(request):
    return request.headers.get("Authorization") == "Bearer " + TOKEN


def make_app():
    """A fresh board and a Microdot app with /mcp on it; returns ``(app, mcp.Server)``."""
    root = support.fresh_flash()
    support.write(root + config.MEMORY_DIR + "/MEMORY.md", MEMORY)
    support.write(root + config.DATASHEETS_DIR + "/esp32-s3-devkitc-1.md", SHEET)
    config.set("allowed_chats", OWNER)
    datasheets.forget()
    pins.reload()
    gpio.reset()
    machine.sim_reset()
    registry.clear()
    for m in (files, memory_tools, clock, messaging, cron_tools, gpio_tools):
        m.register_all()
    app = Microdot()
    return app, mcp_route.routes(app, authorized)


def main():
    import asyncio
    import os

    app, _ = make_app()
    print("serving", os.getenv("MCP_PORT"))
    asyncio.run(app.start_server(host="127.0.0.1", port=int(os.getenv("MCP_PORT"))))


if __name__ == "__main__":
    main()
