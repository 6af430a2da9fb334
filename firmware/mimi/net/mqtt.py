"""The MQTT broker connection (setting ``mqtt_url``; issue 18), kept by the I/O thread.

``mqtt_url`` is ``mqtt://[user:pass@]host[:port]`` (port 1883 by default) or
``mqtts://[user:pass@]host[:port]`` (TLS, 8883: the broker's certificate is checked
against ``/data/certs`` as an HTTPS server's is). Characters of the user or password that
would break the URL are written %XX. Empty: no MQTT; ``mimi.app`` then never loads this
module.

The protocol is micropython-lib's ``umqtt.simple`` (``firmware/lib/umqtt``: MQTT 3.1.1,
QoS 0), unchanged. It opens its socket through the name ``socket`` in its module; that
name is pointed at ``_Sockets``, whose sockets are ``_Link``s over
``mimi.net.proxy.connect`` (where every connection of mimi opens: timeouts, the proxy
setting, ``seam.Conn``), so umqtt's own code runs on the board, the unix port and
CPython alike; a ``_Tls`` given as umqtt's ``ssl`` does the handshake on that connection.

The I/O thread is never held for long (``tick``):
- an attempt to connect waits at most ``_MQTT_STEP_TIMEOUT_MS`` for each step (TCP
  connect, TLS handshake, CONNACK, each SUBACK); after a failure the next attempt waits a
  back-off, 2 s doubling to 2 min (a refused user or password: 2 min at once);
- what has arrived is read without waiting (umqtt's ``check_msg``), at most
  ``_MQTT_MSGS_PER_TICK`` messages a pass; an incoming topic or payload over
  ``_MQTT_IN_MAX_BYTES`` is read past and dropped (logged);
- keep-alive (``_MQTT_KEEPALIVE_S``): a PINGREQ when nothing was sent, or nothing came,
  for half of it (at most one per half); a connection where nothing came for one and a
  half (the broker answers every PINGREQ) is dead and made again.

Availability: the Last Will is ``mimi/<id>/status`` = ``offline`` (retained); ``online``
is published after each connect, and ``stop()`` says ``offline`` itself before it
disconnects. ``<id>`` is the chip's id in hex (``machine.unique_id()``).

The API other modules use (a module-level client, made by ``init()``):
- ``publish(topic, payload, retain=False) -> bool``: False when not connected (nothing
  is queued) or the write failed. ``topic``/``payload``: str or bytes.
- ``subscribe(topic_filter)``: kept (``topics``) and subscribed again after each connect;
  before ``init()`` too.
- ``handlers``: ``fn(topic str, payload bytes)`` called for each message, in the I/O
  thread, with no lock held (a handler may publish); then
  ``mimi.rules.engine.on_mqtt(topic, payload)`` when that module exists.
- ``on_connect``: ``fn()`` called after each connect (``mimi.net.hass`` publishes its
  discovery and the states).
- ``matches(topic_filter, topic)``: MQTT's ``+``/``#`` wildcards.

RAM: the module, umqtt and one socket; with ``mqtts`` one TLS session, about 25 KB of the
chip's internal RAM, for as long as it is connected (docs/heap.md).
Spec: MQTT 3.1.1 (OASIS, 2014); https://github.com/micropython/micropython-lib
(micropython/umqtt.simple).
"""
from micropython import const

from mimi import config, log, seam

# Tunables (config.py holds those shared by several modules and the settings).
_MQTT_STEP_TIMEOUT_MS = const(5000)  # each step of a connect; each read of a packet's rest, each write
_MQTT_KEEPALIVE_S = const(60)
_MQTT_BACKOFF_MIN_MS = const(2000)
_MQTT_BACKOFF_MAX_MS = const(120000)
_MQTT_MSGS_PER_TICK = const(8)  # packets read in one pass of the I/O loop
_MQTT_IN_MAX_BYTES = const(2048)  # an incoming topic or payload longer than this is dropped
_MQTT_TOPICS_MAX = const(32)  # subscriptions kept
_TAG = const("mqtt")
_REFUSED = const("?|bad protocol version|client id refused|broker unavailable|bad user name or password|not authorised")

handlers = []  # fn(topic str, payload bytes) for each message
on_connect = []  # fn() after each connect
topics = []  # the topic filters to subscribe to (str)
_cl = [None]  # the client, once init() made it


def parse(url):
    """``(tls, host, port, user, password)`` of an ``mqtt_url`` value (user and password
    str or None). ``ValueError`` (no password in its message) when it is not
    ``mqtt[s]://[user[:pass]@]host[:port]``."""
    bad = ValueError("mqtt_url must be mqtt://[user:pass@]host[:port] or mqtts://...")
    scheme, sep, rest = (url or "").strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("mqtt", "mqtts") or "/" in rest.rstrip("/"):
        raise bad
    cred, at, hp = rest.rstrip("/").rpartition("@")
    user = pw = None
    if at:
        user, _, pw = cred.partition(":")
        if "%" in cred:
            from mimi.net import tunnel  # its %XX decoding (the proxy's URL is written the same way)

            user, pw = tunnel._unquote(user), tunnel._unquote(pw)
        if not user:
            raise bad
    tls = scheme == "mqtts"
    port = 8883 if tls else 1883
    i = hp.rfind(":")
    if i > hp.rfind("]"):  # a port (after an IPv6 literal's bracket, if any)
        p = hp[i + 1:]
        if not p.isdigit() or not 0 < int(p) < 65536:
            raise bad
        port = int(p)
        hp = hp[:i]
    host = hp[1:-1] if hp[:1] == "[" else hp
    if not host or " " in host:
        raise bad
    return tls, host, port, user, pw


def matches(topic_filter, topic):
    """True when ``topic`` (str) is one that ``topic_filter`` names: ``+`` stands for one
    level, a final ``#`` for any number (MQTT 3.1.1, 4.7)."""
    f = topic_filter.split("/")
    t = topic.split("/")
    for i in range(len(f)):
        if f[i] == "#" and i == len(f) - 1:
            return True
        if i >= len(t) or f[i] != "+" and f[i] != t[i]:
            return False
    return len(f) == len(t)


def node_id():
    """The chip's id in hex (12 characters): the client id is ``mimi-<id>``, the topics
    ``mimi/<id>/...``."""
    import machine  # the board's own, or host_sim's stand-in

    return "".join("%02x" % b for b in machine.unique_id())


def _b(x):
    return x.encode() if isinstance(x, str) else bytes(x)


class _Link:
    """The socket umqtt.simple reads and writes: ``read(n)``, ``write(buf, n)``,
    ``setblocking``, ``settimeout``, ``connect``, ``close``, over a ``seam.Conn``.

    ``read(n)`` while non-blocking (umqtt's ``check_msg``): one byte, None when none has
    come, ``b""`` at the end of the stream. While blocking: exactly ``n`` bytes, each read
    waiting at most ``_MQTT_STEP_TIMEOUT_MS`` (``OSError`` on a timeout or an early end);
    over ``_MQTT_IN_MAX_BYTES`` they are read and dropped, ``b""`` returned and ``skipped``
    set. ``rx_ms``/``tx_ms``: when a byte last came, went (keep-alive).
    """

    def __init__(self):
        self.conn = None
        self.wait = True
        self.skipped = False
        self.rx_ms = self.tx_ms = seam.ticks_ms()

    def settimeout(self, t):
        pass  # every wait is _MQTT_STEP_TIMEOUT_MS

    def setblocking(self, flag):
        self.wait = flag

    def connect(self, addr):
        from mimi.net import proxy

        self.conn = proxy.connect(addr[0], addr[1], None, _MQTT_STEP_TIMEOUT_MS)

    def read(self, n):
        if not self.wait:
            b = bytearray(1)
            k = self.conn.readinto(memoryview(b), 0)
            if k is None:
                return None
            self.rx_ms = seam.ticks_ms()
            return bytes(b) if k else b""
        skip = n > _MQTT_IN_MAX_BYTES
        buf = bytearray(min(n, 512) if skip else n)
        mv = memoryview(buf)
        got = 0
        while got < n:
            k = self.conn.readinto(mv[:min(len(buf), n - got)] if skip else mv[got:], _MQTT_STEP_TIMEOUT_MS)
            if k is None:
                raise OSError(110, "timed out")
            if not k:
                raise OSError("the broker closed the connection")
            got += k
        self.rx_ms = seam.ticks_ms()
        if skip:
            self.skipped = True
            return b""
        return bytes(buf)

    def write(self, buf, n=None):
        b = seam.as_bytes(buf)
        self.conn.write(b if n is None else memoryview(b)[:n], _MQTT_STEP_TIMEOUT_MS)
        self.tx_ms = seam.ticks_ms()

    def close(self):
        if self.conn is not None:
            self.conn.close()


class _Sockets:
    """Stands for the ``socket`` module inside umqtt.simple: its sockets are ``_Link``s,
    and the name is resolved when ``_Link.connect`` connects (or by the proxy)."""

    socket = _Link

    @staticmethod
    def getaddrinfo(host, port):
        return [(0, 1, 0, "", (host, port))]


class _Tls:
    """umqtt.simple's ``ssl``: the TLS handshake on the ``_Link``'s connection, checking
    the broker's certificate (``mimi.net.certs``)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def wrap_socket(self, link, server_hostname=None):
        link.conn.start_tls(self.ctx, server_hostname, _MQTT_STEP_TIMEOUT_MS)
        return link


class Client:
    """The connection to the broker of ``url`` (``parse``); ``ValueError`` when malformed.

    ``tick(now_ms)`` from the I/O loop; ``publish``/``subscribe`` from any thread (a lock
    keeps one packet at a time on the socket); ``state``: "connecting", "connected" or
    "waiting" (a back-off); ``error``: the last failure, or None; ``sent``/``got``:
    messages since boot.
    """

    def __init__(self, url):
        self.tls, self.host, self.port, self.user, self.password = parse(url)
        self.id = node_id()
        self.status_topic = "mimi/%s/status" % self.id
        self.mq = None  # umqtt.simple.MQTTClient while connected
        self.lock = seam.allocate_lock()
        self.due_ms = seam.ticks_ms()
        self.backoff_ms = 0
        self.error = None
        self.state = "connecting"
        self.sent = self.got = self.connects = 0
        self.inbox = []  # (topic, payload) read while the lock was held: handed on after

    def _got(self, topic, payload):
        """umqtt's callback: keep the message for ``_hand_on`` (handlers may publish)."""
        link = self.mq.sock if self.mq else None
        if link is not None and link.skipped:
            link.skipped = False
            log.warn(_TAG, "a message over %d bytes dropped", _MQTT_IN_MAX_BYTES)
            return
        self.got += 1
        if len(self.inbox) < 2 * _MQTT_MSGS_PER_TICK:
            self.inbox.append((topic, payload))

    def _connect(self):
        """One attempt: connect, say online, subscribe. Raises on failure (socket closed)."""
        import umqtt.simple as simple

        simple.socket = _Sockets  # see the module doc
        ssl = None
        if self.tls:
            if not seam.clock_synced():
                raise seam.TLSError("the clock is not set: cannot check %s's certificate" % self.host)
            from mimi.net import certs

            ssl = _Tls(certs.context())
        c = simple.MQTTClient(_b("mimi-" + self.id), self.host, self.port, self.user and _b(self.user),
                              _b(self.password or ""), _MQTT_KEEPALIVE_S, ssl)
        c.set_callback(self._got)
        c.set_last_will(_b(self.status_topic), b"offline", True)
        self.mq = c
        try:
            c.connect()
            c.publish(_b(self.status_topic), b"online", True)
            for t in topics:
                c.subscribe(_b(t))
        except BaseException:
            self.mq = None
            if c.sock is not None:
                c.sock.close()
            raise

    def _drop(self, e):
        """After a failure: close the socket, wait a back-off; ``e`` is logged once per outage."""
        c, self.mq = self.mq, None
        if c is not None and c.sock is not None:
            c.sock.close()
        code = e.args[0] if type(e).__name__ == "MQTTException" and e.args else None
        why = "the broker refused: %s" % _REFUSED.split("|")[code] if code in (1, 2, 3, 4, 5) else \
            "%s: %s" % (type(e).__name__, e) if not isinstance(e, OSError) else \
            "the broker closed the connection" if e.args == (-1,) else str(e) or type(e).__name__  # -1: umqtt's EOF
        if why != self.error:
            log.warn(_TAG, "%s:%d: %s", self.host, self.port, why)
        self.error = why
        self.backoff_ms = _MQTT_BACKOFF_MAX_MS if code in (4, 5) else \
            min(_MQTT_BACKOFF_MAX_MS, max(_MQTT_BACKOFF_MIN_MS, self.backoff_ms * 2))
        self.due_ms = seam.ticks_add(seam.ticks_ms(), self.backoff_ms)
        self.state = "waiting"

    def tick(self, now):
        """One pass of the I/O loop: connect when due, read what came, keep the connection
        alive, hand messages on. True when a message came (the loop should not wait)."""
        if self.mq is None:
            if seam.ticks_diff(now, self.due_ms) < 0:
                return False
            self.state = "connecting"
            with self.lock:
                try:
                    self._connect()
                except Exception as e:  # noqa: BLE001 - MQTTException, OSError, MemoryError...: try again later
                    self._drop(e)
                    return False
            self.connects += 1
            self.state, self.error, self.backoff_ms = "connected", None, 0
            self.ping_ms = seam.ticks_ms()
            log.info(_TAG, "connected to %s:%d%s", self.host, self.port, " (TLS)" if self.tls else "")
            for fn in on_connect:
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - a hook's failure is not the connection's
                    log.exc(_TAG, "on_connect", e)
        n = 0
        with self.lock:
            c = self.mq
            try:
                while c is not None and n < _MQTT_MSGS_PER_TICK and c.check_msg() is not None:
                    n += 1
                if c is not None:
                    now = seam.ticks_ms()
                    quiet = seam.ticks_diff(now, c.sock.rx_ms)
                    if quiet > _MQTT_KEEPALIVE_S * 1500:
                        raise OSError("no answer from the broker for %d s" % (_MQTT_KEEPALIVE_S * 3 // 2))
                    # a PINGREQ when we said nothing for half the keep-alive (the broker's
                    # limit), or heard nothing (its PINGRESP shows the link is alive)
                    if max(quiet, seam.ticks_diff(now, c.sock.tx_ms)) > _MQTT_KEEPALIVE_S * 500 and \
                            seam.ticks_diff(now, self.ping_ms) > _MQTT_KEEPALIVE_S * 500:
                        c.ping()
                        self.ping_ms = now
            except Exception as e:  # noqa: BLE001 - a broken or malformed stream: connect again
                self._drop(e)
        self._hand_on()
        return n > 0

    def _hand_on(self):
        """Give the messages read to ``handlers`` and the rules engine (no lock held)."""
        while self.inbox:
            topic, payload = self.inbox.pop(0)
            try:
                topic = topic.decode()
            except UnicodeError:
                continue
            for fn in handlers + [_rules]:
                try:
                    fn(topic, payload)
                except Exception as e:  # noqa: BLE001 - one handler's failure must not stop the others
                    log.exc(_TAG, topic, e)

    def publish(self, topic, payload, retain=False):
        """Send one message (QoS 0): True when written, False when not connected or it failed."""
        with self.lock:
            if self.mq is None:
                return False
            try:
                self.mq.publish(_b(topic), _b(payload), retain)
            except Exception as e:  # noqa: BLE001 - OSError, or umqtt's assert on a size over 2 MB
                self._drop(e)
                return False
        self.sent += 1
        return True

    def subscribe(self, topic_filter):
        """Subscribe now when connected (``topics`` holds it for the next connects)."""
        with self.lock:
            if self.mq is not None:
                try:
                    self.mq.subscribe(_b(topic_filter))
                except Exception as e:  # noqa: BLE001 - subscribed again at the next connect
                    self._drop(e)

    def stop(self):
        """Say ``offline`` (retained), disconnect, close: the broker sends no Last Will."""
        with self.lock:
            c, self.mq = self.mq, None
            self.state = "stopped"
            if c is not None:
                try:
                    c.publish(_b(self.status_topic), b"offline", True)
                    c.disconnect()
                except Exception:  # noqa: BLE001 - already gone: the Last Will says it
                    c.sock.close()

    def describe(self):
        """One line for ``/status``: the broker, the state, the counts, the last error."""
        return "%s %s:%d%s, %s, %d in / %d out%s" % (
            "mqtts" if self.tls else "mqtt", self.host, self.port, " as " + self.user if self.user else "",
            self.state, self.got, self.sent, "; " + self.error if self.error else "")


def _rules(topic, payload):
    """The rules engine's trigger (``mimi.rules.engine.on_mqtt``), when it is on the board."""
    try:  # by name: the module comes with the rules (issue 18, part 2), maybe not on this board
        engine = __import__("mimi.rules.engine", None, None, ("on_mqtt",))
    except ImportError:
        return
    engine.on_mqtt(topic, payload)


def init():
    """Make the client from the ``mqtt_url`` setting (once); returns it, or None when the
    setting is empty. ``ValueError`` when it is malformed. Loads umqtt now (the caller's
    thread: ``mimi.app.init`` loads what the threads run in the main thread)."""
    url = config.get("mqtt_url")
    if _cl[0] is None and url:
        import umqtt.simple  # noqa: F401 - loaded now, used by Client._connect

        _cl[0] = Client(url)
    return _cl[0]


def client():
    """The client ``init()`` made, or None."""
    return _cl[0]


def tick(now):
    """The I/O loop's step (``Client.tick``); False when there is no client."""
    c = _cl[0]
    return c is not None and c.tick(now)


def publish(topic, payload, retain=False):
    """Publish through the client (``Client.publish``): False when there is none, or it is
    not connected."""
    c = _cl[0]
    return c is not None and c.publish(topic, payload, retain)


def subscribe(topic_filter):
    """Keep ``topic_filter`` in ``topics`` (at most ``_MQTT_TOPICS_MAX``: ``ValueError``
    past that) and subscribe now when connected."""
    if topic_filter in topics:
        return
    if len(topics) >= _MQTT_TOPICS_MAX:
        raise ValueError("at most %d MQTT subscriptions" % _MQTT_TOPICS_MAX)
    topics.append(topic_filter)
    c = _cl[0]
    if c is not None:
        c.subscribe(topic_filter)


def stop():
    """Disconnect (``Client.stop``); the client stays, and its next ``tick`` connects again."""
    c = _cl[0]
    if c is not None:
        c.stop()
