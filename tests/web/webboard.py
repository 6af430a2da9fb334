"""Helpers of the web tests (a module with a name of its own: ``from conftest import``
would find whichever conftest was imported last): the password, free ports, a booted
simulated board with the web app on. The fixtures are in ``conftest.py``."""
import time
import urllib.error
import urllib.request

from host_sim.harness import Sim
from ports import free_port

PASSWORD = "correct-horse-42"


def wait_http(url, timeout_s=30):
    """Wait until ``url`` answers at all (any HTTP status)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("%s did not answer in %d s" % (url, timeout_s))


def start_board(flash, runtime, password=PASSWORD, **kw):
    """A booted Sim with the web app on free ports (``password`` None: no web app)."""
    wp, gp = free_port(), free_port()
    env = {"MIMI_WEB_PORT": str(wp), "MIMI_GATEWAY_PORT": str(gp)}
    if password:
        env["MIMI_WEB_PASSWORD"] = password
    b = Sim(flash, runtime, env=env, **kw).start()
    b.web_port, b.gateway_port = wp, gp
    b.web_url = "http://127.0.0.1:%d" % wp
    b.gateway_url = "ws://127.0.0.1:%d/" % gp
    if password:
        try:
            wait_http(b.web_url + "/login")
        except RuntimeError:
            b.stop()
            raise
    return b
