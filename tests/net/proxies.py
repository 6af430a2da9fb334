"""Real proxy servers for the tests: tinyproxy (HTTP CONNECT, Basic auth) and microsocks
(SOCKS5, RFC 1929 user and password), Debian packages that ``.ci/run`` installs.

``Proxy.tinyproxy(user=None, password=None, connect_ports=())`` and
``Proxy.microsocks(user=None, password=None)`` start one on 127.0.0.1 at a free port and
return it once it accepts connections; ``url`` (with the credentials), ``bare`` (without),
``log()`` (tinyproxy's log), ``stop()``. A missing program fails the test: it is never
skipped, so CI cannot pass without having run them.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
from ports import free_port as _free_port


class Proxy:
    def __init__(self, scheme, cmd, port, user, password, log_path=None):
        self.scheme = scheme
        self.port = port
        self.user, self.password = user, password
        self.log_path = log_path
        self.bare = "%s://127.0.0.1:%d" % (scheme, port)
        self.url = "%s://%s:%s@127.0.0.1:%d" % (scheme, user, password, port) if user else self.bare
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("%s exited at start (status %s): %s" % (cmd[0], self.proc.returncode, self.log()))
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("%s did not listen on port %d within 10 s" % (cmd[0], port))

    @staticmethod
    def _exe(name):
        exe = shutil.which(name) or (os.path.exists("/usr/bin/" + name) and "/usr/bin/" + name)
        if not exe:
            pytest.fail("%s is not installed (apt-get install %s; .ci/run does)"
                        % (name, "tinyproxy" if name == "tinyproxy" else "microsocks"))
        return exe

    @classmethod
    def tinyproxy(cls, user=None, password=None, connect_ports=()):
        exe = cls._exe("tinyproxy")
        port = _free_port()
        d = tempfile.mkdtemp(prefix="mimi-tinyproxy-")
        log = os.path.join(d, "tinyproxy.log")
        lines = ["Port %d" % port, "Listen 127.0.0.1", "Timeout 60", "MaxClients 50", "LogLevel Connect",
                 "LogFile \"%s\"" % log, "Allow 127.0.0.1"]
        if user:
            lines.append("BasicAuth %s %s" % (user, password))
        lines += ["ConnectPort %d" % p for p in connect_ports]  # none listed: every port allowed
        conf = os.path.join(d, "tinyproxy.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return cls("http", [exe, "-d", "-c", conf], port, user, password, log)

    @classmethod
    def microsocks(cls, user=None, password=None):
        exe = cls._exe("microsocks")
        port = _free_port()
        cmd = [exe, "-i", "127.0.0.1", "-p", str(port)]
        if user:
            cmd += ["-u", user, "-P", password]
        return cls("socks5", cmd, port, user, password)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
