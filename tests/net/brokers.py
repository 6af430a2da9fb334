"""A real MQTT broker for the tests: Debian's mosquitto, which ``.ci/run`` installs.

``Broker(user=None, password=None, tls=None)`` starts one on 127.0.0.1 at a free port and
returns once it accepts connections; with a user, anonymous clients are refused and the
password file is made by ``mosquitto_passwd``; with ``tls`` (``certgen.make()``'s paths) a
second listener at ``tls_port`` speaks TLS with that certificate (``localhost``). ``url`` (``mqtt://user:pass@127.0.0.1:port``),
``restart()`` (stop, then start again on the same port), ``stop()``, ``log()``. A missing
program fails the test: it is never skipped, so CI cannot pass without having run it.

``Ha(broker)``: paho-mqtt playing Home Assistant: subscribes to everything
(``homeassistant/#``, ``mimi/#``, ``home/#``, ``mimi-test/#``), keeps every message in
order (``seen``: topic, payload, retain flag), ``wait(topic, payload=None, timeout_s)``,
``send``; ``answers``: ``[topic, payload, reply topic, reply payload]`` each answered once
(a command sent when a state shows up); ``on``: ``{topic: fn()}`` run in a thread of its
own when a message comes there.
"""
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest
from ports import free_port as _free_port


def _exe(name):
    exe = shutil.which(name) or next((p + name for p in ("/usr/sbin/", "/usr/bin/") if os.path.exists(p + name)), None)
    if not exe:
        pytest.fail("%s is not installed (apt-get install mosquitto; .ci/run does)" % name)
    return exe


_ids = itertools.count()  # a client id each: the broker drops a client when another takes its id


class Broker:
    def __init__(self, user=None, password=None, tls=None):
        self.port = _free_port()
        self.tls_port = _free_port() if tls else None
        self.user, self.password = user, password
        self.dir = tempfile.mkdtemp(prefix="mimi-mosquitto-")
        self.log_path = os.path.join(self.dir, "mosquitto.log")
        # user: started as root (CI) mosquitto would become the user "mosquitto", who cannot
        # read this folder; as anyone else the line changes nothing.
        lines = ["listener %d 127.0.0.1" % self.port, "persistence false", "log_dest file %s" % self.log_path,
                 "log_type all", "user %s" % pwd.getpwuid(os.getuid()).pw_name]
        if user:
            pw = os.path.join(self.dir, "passwd")
            open(pw, "w").close()
            subprocess.run([_exe("mosquitto_passwd"), "-b", pw, user, password], check=True, capture_output=True)
            os.chmod(pw, 0o600)
            lines += ["allow_anonymous false", "password_file %s" % pw]
        else:
            lines.append("allow_anonymous true")
        if tls:  # the lines after a listener are its own
            lines += ["listener %d 127.0.0.1" % self.tls_port, "cafile %s" % tls["ca"], "certfile %s" % tls["cert"],
                      "keyfile %s" % tls["key"]]
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        cred = "%s:%s@" % (user, password) if user else ""
        self.url = "mqtt://%s127.0.0.1:%d" % (cred, self.port)
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen([_exe("mosquitto"), "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("mosquitto exited at start (status %s): %s" % (self.proc.returncode, self.log()))
            try:
                for port in (self.port, self.tls_port) if self.tls_port else (self.port,):
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("mosquitto did not listen on port %d within 10 s" % self.port)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self):
        self.stop()
        return self.start()

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-3000:]
        except OSError:
            return ""


class Ha:
    """paho-mqtt as Home Assistant would connect (MQTT 3.1.1, its own client id)."""

    def __init__(self, broker, topics=("homeassistant/#", "mimi/#", "home/#", "mimi-test/#")):
        import paho.mqtt.client as paho

        self.seen = []  # (topic, payload bytes, retain) in order
        self.answers = []
        self.on = {}
        self.cond = threading.Condition()
        c = self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="ha-test-%d-%d" % (os.getpid(), next(_ids)),
                                      protocol=paho.MQTTv311)
        if broker.user:
            c.username_pw_set(broker.user, broker.password)
        c.on_message = self._on_message
        c.on_connect = lambda cl, ud, flags, rc, props: [cl.subscribe(t) for t in topics]
        c.connect("127.0.0.1", broker.port, 30)
        c.loop_start()
        # subscribed once its own message comes back
        deadline = time.time() + 10
        while not self.since(0, "mimi-test/probe") and time.time() < deadline:
            c.publish("mimi-test/probe", b"1")
            time.sleep(0.1)

    def _on_message(self, client, userdata, msg):
        p = bytes(msg.payload)
        with self.cond:
            self.seen.append((msg.topic, p, msg.retain))
            self.cond.notify_all()
            for a in self.answers:
                if a[:2] == [msg.topic, p]:
                    self.answers.remove(a)
                    client.publish(a[2], a[3])  # no waiting here: this is paho's own thread
                    break
        fn = self.on.get(msg.topic)
        if fn is not None:
            threading.Thread(target=fn, daemon=True).start()

    def wait(self, topic, payload=None, timeout_s=15, after=0):
        """The payload of the first message on ``topic`` (with ``payload``, if given) among
        ``seen[after:]``, waiting up to ``timeout_s``; fails the test when none came."""
        deadline = time.time() + timeout_s
        with self.cond:
            while True:
                for t, p, _ in self.seen[after:]:
                    if t == topic and (payload is None or p == payload):
                        return p
                left = deadline - time.time()
                if left <= 0:
                    pytest.fail("no %r on %s within %d s; seen: %r" % (payload, topic, timeout_s, self.seen[-20:]))
                self.cond.wait(left)

    def quiet(self, ms=300):
        """Return once nothing has come for ``ms`` (an earlier case's last words are in);
        the count of ``seen`` then."""
        while True:
            n = len(self.seen)
            time.sleep(ms / 1000)
            if len(self.seen) == n:
                return n

    def since(self, n, topic=None):
        """``seen[n:]``, only ``topic``'s when given."""
        with self.cond:
            return [m for m in self.seen[n:] if topic is None or m[0] == topic]

    def send(self, topic, payload, retain=False):
        self.client.publish(topic, payload, 0, retain).wait_for_publish(5)

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()
