"""mqtt_publish: publish a message to the MQTT broker of ``mqtt_url`` (group ``net``; issue 18).

Offered only while ``mqtt_url`` is set, and it runs only in the owner's turns (the
owner's chat, the console, the heartbeat, the owner's jobs: ``mimi.policy``): a message
on the home's broker can switch things. Limits: a topic of at most
``_TOOL_MQTT_TOPIC_MAX_BYTES`` without wildcards (``+``, ``#``) or NUL, not starting
with ``$`` (the broker's own); a payload of at most ``_TOOL_MQTT_PAYLOAD_MAX_BYTES``;
``_TOOL_MQTT_PER_TURN`` messages a turn and ``_TOOL_MQTT_PER_MIN`` a minute. Topics mimi
keeps for itself are refused: ``homeassistant/...`` (discovery: a wrong config there
breaks Home Assistant's view) and ``mimi/<id>/...`` (this board's states and commands).
Nothing is queued: when the broker is not connected the call fails and says why.
"""
from micropython import const

from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_TOOL_MQTT_TOPIC_MAX_BYTES = const(128)
_TOOL_MQTT_PAYLOAD_MAX_BYTES = const(1024)
_TOOL_MQTT_PER_TURN = const(10)
_TOOL_MQTT_PER_MIN = const(20)

_times = []  # ticks_ms of the messages of the last minute


def mqtt_publish(args, ctx):
    """``topic``, ``payload`` (text, may be empty), ``retain`` (default false)."""
    from mimi import policy, seam
    from mimi.net import mqtt

    if policy.role(ctx) != 0:
        raise ValueError("only the owner's chat may publish to MQTT")
    topic = args["topic"].strip()
    payload = args.get("payload") or ""
    t = topic.encode()
    if not t or len(t) > _TOOL_MQTT_TOPIC_MAX_BYTES or "+" in topic or "#" in topic or "\0" in topic or \
            topic[0] == "$":
        raise ValueError("topic: 1-%d bytes, no + or # (those are for subscribing), no leading $"
                         % _TOOL_MQTT_TOPIC_MAX_BYTES)
    c = mqtt.client()
    nid = c.id if c is not None else mqtt.node_id()
    if topic.split("/")[0] == "homeassistant" or topic.startswith("mimi/%s/" % nid) or topic == "mimi/" + nid:
        raise ValueError("%s is kept for mimi's own Home Assistant topics" % topic)
    n = len(payload.encode())
    if n > _TOOL_MQTT_PAYLOAD_MAX_BYTES:
        raise ValueError("payload is over %d bytes" % _TOOL_MQTT_PAYLOAD_MAX_BYTES)
    now = seam.ticks_ms()
    while _times and seam.ticks_diff(now, _times[0]) >= 60000:
        _times.pop(0)
    spent = ctx.get("mqtt_sent", 0)
    if spent >= _TOOL_MQTT_PER_TURN or len(_times) >= _TOOL_MQTT_PER_MIN:
        raise ValueError("too many MQTT messages: %d a turn, %d a minute at most" % (
            _TOOL_MQTT_PER_TURN, _TOOL_MQTT_PER_MIN))
    if c is None or c.state != "connected":
        raise ValueError("not connected to the MQTT broker (%s)" % (c.describe() if c else "mqtt_url is not set"))
    retain = args.get("retain") is True
    if not c.publish(topic, payload, retain):
        raise ValueError("the broker connection failed while sending (%s)" % c.describe())
    _times.append(now)
    ctx["mqtt_sent"] = spent + 1
    return "published %d bytes to %s%s" % (n, topic, " (retained)" if retain else "")


def register_all():
    """Register mqtt_publish (group ``net``; offered only while ``mqtt_url`` is set: its
    line in ``tools.jsonl`` says so)."""
    registry.load(("mimi.tools.mqtt_tools",))
