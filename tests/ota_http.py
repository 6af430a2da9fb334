"""The update routes (``mimi.web.update_route``) on a real microdot server, on
127.0.0.1 in a thread of the test process, for the HTTP, client and browser tests.

Authorized: ``Authorization: Bearer made-up-pass`` (the web app passes its own check at
merge). A good upload is not applied (no reset in the test process): its version is
recorded in ``applied``.
"""
import asyncio
import socket
import threading
import time
from ports import free_port

PASSWORD = "made-up-pass"


class UpdateServer:
    """``url``, ``applied`` (versions a good upload would switch to), ``stop()``."""

    def __init__(self, apply=None, authorized=None):
        self.firmware = []  # versions of MicroPython a good /api/firmware upload would boot
        from microdot import Microdot

        from mimi.web import update_route

        self.applied = []
        self.app = Microdot()
        update_route.routes(self.app, authorized or (lambda r: r.headers.get("Authorization") == "Bearer " + PASSWORD),
                            apply=apply or self.applied.append, apply_firmware=self.firmware.append)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the update server did not start")

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.app.start_server(host="127.0.0.1", port=self.port))

    def stop(self):
        self.loop.call_soon_threadsafe(self.app.shutdown)
        self.thread.join(10)
