"""A setup portal served alone (``host_sim/portal_board.py``, as ``python3 -m host_sim
portal`` runs it) in a process of its own, for the HTTP and browser tests: under CPython
or the micropython command, on free ports of 127.0.0.1, with a fresh flash folder."""
import os
import socket
import subprocess
import tempfile
import time

from host_sim import launcher
from ports import free_port


class Portal:
    """A running portal: ``url``, ``port``, ``dns_port``, ``flash``; ``stored(name)`` reads a
    setting from its NVS stand-in; ``stop()`` ends it and returns its output."""

    def __init__(self, runtime="cpython", settings=None):
        self.flash = tempfile.mkdtemp(prefix="mimi-portal-")
        launcher.seed_flash(self.flash)
        if settings:
            launcher.store_settings(self.flash, settings)
        self.port = free_port()
        self.dns_port = free_port(socket.SOCK_DGRAM)
        self.url = "http://127.0.0.1:%d" % self.port
        argv, env = launcher.portal_cmd(self.flash, self.port, self.dns_port, runtime)
        self.log = open(os.path.join(self.flash, "portal.log"), "w+")
        self.proc = subprocess.Popen(argv, env=env, cwd=self.flash, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        raise RuntimeError("the portal did not start:\n" + self.output())

    def stored(self, name):
        return launcher._stored(self.flash, name)

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def wait(self, timeout=15):
        """Wait for the process to end by itself (after a save); its exit status."""
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        out = self.output()
        self.log.close()
        return out
