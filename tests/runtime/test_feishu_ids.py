"""Feishu chat ids across the shared parts (both runtimes): access and the owner,
sessions, routing (a reply, a job's, the owner's heartbeat), send_message and cron_add."""
import support

from mimi import app, boot, bus, commands, config
from mimi.storage import cronjobs, sessions
from mimi.tools import cron_tools, messaging

RUNTIMES = ("cpython", "micropython")

P = "fs_ou_5a1b2c3d4e5f60718293a4b5c6d7e8f9"  # a person (open_id), made up
G = "fs_oc_0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # a group (chat_id), made up


def test_allow_owner_and_groups():
    support.fresh_flash()
    assert commands.is_group(G) and not commands.is_group(P) and commands.is_group("-100")
    assert "owner" not in commands.allow(G)  # a group never owns
    assert "owner" in commands.allow(P) and commands.owner() == P
    assert commands.is_allowed(P) and commands.is_allowed(G) and not commands.is_allowed("fs_ou_other")
    for bad in ("fs_xx_1", "fs_ou_", "fs_ou_a b", "fs_ou_a,b", "fs_ou_" + "a" * 40, "fs_ou_\u00e9"):
        support.raises(ValueError, commands.allow, bad)
    c = commands.code()
    assert c == commands.code()  # the code in force, not a new one (a second channel's banner)
    assert commands.try_code("fs_ou_new", c) and commands.is_allowed("fs_ou_new") and commands.code() != c
    assert "owner is now fs_ou_new" in commands.deny(P)  # the next person allowed
    assert sessions.key_for("feishu", P) == P and sessions.path_for(P).endswith("/" + P + ".jsonl")


def test_routing_to_the_feishu_channel():
    support.fresh_flash()
    config.set("feishu_app_id", "cli_fake")
    config.set("feishu_app_secret", "FAKE")
    if app.running():
        app.stop()
    app.forget()
    boot.state["safe"] = False
    assert app.init(agent_factory=support.Echo)
    fs = app.state["feishu"]
    assert fs is not None and len(fs.bufs[0]) == 16384
    assert app.route({"channel": "feishu", "chat_id": P, "text": "hi", "kind": "text"})
    assert app.route({"channel": "feishu", "chat_id": P, "text": "", "kind": "typing"})
    assert app.route({"channel": "cron", "chat_id": G, "text": "briefing", "kind": "text"})
    assert app.route({"channel": "heartbeat", "chat_id": P, "text": "water the plants", "kind": "text"})
    assert app.route({"channel": "heartbeat", "chat_id": P, "text": "HEARTBEAT_OK", "kind": "text"})
    assert [i[:2] for i in fs.outq] == [[P, "hi"], [G, "briefing"], [P, "water the plants"]]
    assert app.state["telegram"].outq == []
    app.forget()
    config.set("feishu_app_id", "")
    assert app.init(agent_factory=support.Echo) and app.state["feishu"] is None  # no app: no channel, no buffers
    assert app.route({"channel": "feishu", "chat_id": P, "text": "hi", "kind": "text"})  # dropped, logged
    app.forget()


def test_send_message_and_cron_add_name_feishu_by_the_id():
    support.fresh_flash()
    commands.allow(P)
    b = bus.Bus(4, 4)
    commands.allow("42")
    config.set("owner_chat", "42")  # the owner's turn may reach another chat (docs/trust.md)
    ctx = {"channel": "telegram", "chat_id": "42", "bus": b}
    assert "feishu chat " + P in messaging.send_message({"text": "hello", "chat_id": P}, ctx)
    m = b.outbound.get(0)
    assert m["channel"] == "feishu" and m["chat_id"] == P
    support.raises(ValueError, messaging.send_message, {"text": "x", "chat_id": "fs_ou_stranger"}, ctx)
    ctx = {"channel": "feishu", "chat_id": P, "bus": b}
    r = cron_tools.cron_add({"kind": "every", "every_s": 3600, "text": "stretch"}, ctx)
    assert r.startswith("added job")
    job = cronjobs.list()[-1]
    assert job["chat_id"] == P and job["channel"] == "feishu"
