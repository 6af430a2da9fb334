"""Client half of the Feishu channel's live tests: ``test_feishu_live.py`` runs each
function under CPython (in process) and under MicroPython (``mpcase``) against one
``FakeFeishu`` (MIMI_T_FS: its URL; MIMI_T_FS_ID, MIMI_T_FS_SECRET). The case drives the
fake through its ``/_fake/`` control API with mimi's own HTTP client, and the channel
(``mimi.channels.feishu.Feishu``) with ``tick`` until what it waits for happens.
"""
import json
import os

from mimi import bus, commands, config, seam
from mimi.channels.feishu import Feishu
from mimi.net import http
import support

BOT = "ou_bot00000000000000000000000000000"


def _env(name):
    v = os.getenv(name)
    assert v, name + " is not set"
    return v


def _fake(what, body=None):
    r = http.request("POST" if body is not None or what != "state" else "GET", _env("MIMI_T_FS") + "/_fake/" + what,
                     {"Content-Type": "application/json"}, json.dumps(body) if body is not None else None,
                     buf=bytearray(65536))
    assert r.status == 200, r.status
    return r.json()


_n = [0]


def _user():
    """A fresh made-up user per case (the fake is shared)."""
    _n[0] += 1
    return "ou_%s%04d" % ("%08x" % int.from_bytes(os.urandom(4), "big"), _n[0])


def _setup(allow=True, secret=None):
    support.fresh_flash()
    config.reset()
    config.set("feishu_domain", _env("MIMI_T_FS"))
    config.set("feishu_app_id", _env("MIMI_T_FS_ID"))
    config.set("feishu_app_secret", secret or _env("MIMI_T_FS_SECRET"))
    u = _user()
    if allow:
        commands.allow("fs_" + u)
    b = bus.Bus(8, 16)
    ch = Feishu(b)
    return b, ch, u


def _until(ch, cond, ms=8000):
    t0 = seam.ticks_ms()
    while seam.ticks_diff(seam.ticks_ms(), t0) < ms:
        ch.tick(seam.ticks_ms())
        r = cond()
        if r:
            return r
        seam.sleep_ms(10)
    raise AssertionError("timed out; why=%s" % ch.why)


def _sent(to):
    return [m for m in _fake("state")["sent"] if m["receive_id"] == to]


def test_a_private_text_reaches_the_bus_is_acknowledged_and_the_reply_goes_as_a_post():
    b, ch, u = _setup()
    _until(ch, lambda: ch.ws is not None)
    assert ch.me["open_id"] == BOT
    n0 = len(_fake("state")["acks"])
    mid = _fake("inject", {"text": "hello mimi", "sender": u})["message_id"]
    m = _until(ch, lambda: b.inbound.get(0))
    assert m["channel"] == "feishu" and m["chat_id"] == "fs_" + u and m["text"] == "hello mimi"
    assert m["session"] == "fs_" + u and m["message_id"] == mid and m["is_group"] is False
    _until(ch, lambda: len(_fake("state")["acks"]) > n0)  # the fake reads it in its own thread
    acks = _fake("state")["acks"][n0:]
    assert len(acks) == 1 and acks[0]["payload"] == {"code": 200}
    h = dict(acks[0]["headers"])
    assert h["type"] == "event" and "biz_rt" in h
    assert ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": "It is **noon** [ok](https://x.example)",
                       "kind": "text"})
    assert ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": "", "kind": "typing"})  # ignored
    s = _until(ch, lambda: _sent(u))
    assert s[0]["receive_id_type"] == "open_id" and s[0]["msg_type"] == "post"
    para = s[0]["content"]["zh_cn"]["content"][0]
    assert para == [{"tag": "text", "text": "It is "}, {"tag": "text", "text": "noon", "style": ["bold"]},
                    {"tag": "text", "text": " "}, {"tag": "a", "text": "ok", "href": "https://x.example"}], para
    ch.stop()


def test_in_a_group_only_a_mention_counts_and_it_is_removed():
    b, ch, u = _setup(allow=False)
    grp = "oc_" + u[3:]
    commands.allow("fs_" + grp)
    _until(ch, lambda: ch.ws is not None)
    _fake("inject", {"text": "just chatting", "sender": u, "chat_type": "group", "chat_id": grp})
    _fake("inject", {"text": "@_user_1 what time is it, @_user_2?", "sender": u, "chat_type": "group",
                     "chat_id": grp, "mention_bot": True, "mentions": [["@_user_2", "ou_tom", "Tom"]]})
    m = _until(ch, lambda: b.inbound.get(0))
    assert m["text"] == "what time is it, @Tom?" and m["chat_id"] == "fs_" + grp and m["is_group"] is True
    assert b.inbound.get(0) is None  # the one without a mention was not taken
    ch.deliver({"channel": "feishu", "chat_id": "fs_" + grp, "text": "noon", "kind": "text"})
    s = _until(ch, lambda: _sent(grp))
    assert s[0]["receive_id_type"] == "chat_id"
    ch.stop()


def test_a_message_sent_again_is_taken_once_and_acknowledged_twice():
    b, ch, u = _setup()
    _until(ch, lambda: ch.ws is not None)
    n0 = len(_fake("state")["acks"])
    mid = "om_again%s" % u[3:]
    _fake("inject", {"text": "once", "sender": u, "message_id": mid})
    _fake("inject", {"text": "once", "sender": u, "message_id": mid})
    _until(ch, lambda: len(_fake("state")["acks"]) >= n0 + 2)
    assert [m["text"] for m in support.take_all(b.inbound)] == ["once"]
    ch.stop()


def test_an_event_in_parts_and_a_post_message_are_read():
    b, ch, u = _setup()
    _until(ch, lambda: ch.ws is not None)
    long = "grüße " * 500
    _fake("inject", {"text": long, "sender": u, "parts": 3})
    m = _until(ch, lambda: b.inbound.get(0))
    assert m["text"] == long.strip()
    post = {"title": "Plan", "content": [[{"tag": "text", "text": "buy "}, {"tag": "a", "text": "milk",
                                                                           "href": "https://shop.example"}],
                                         [{"tag": "img", "image_key": "img_1"}],
                                         [{"tag": "text", "text": "today"}]]}
    _fake("inject", {"message_type": "post", "content": post, "sender": u})
    m = _until(ch, lambda: b.inbound.get(0))
    assert m["text"] == "Plan\nbuy milk (https://shop.example)\ntoday", m["text"]
    _fake("inject", {"message_type": "image", "content": {"image_key": "img_2"}, "sender": u})
    s = _until(ch, lambda: _sent(u))
    assert s[0]["msg_type"] == "text" and "text only" in s[0]["content"]["text"]
    ch.stop()


def test_a_stranger_is_told_its_id_and_pairs_with_the_code():
    b, ch, u = _setup(allow=False)
    commands.allow(123)  # someone else owns it already: no banner code in the way
    _until(ch, lambda: ch.ws is not None)
    _fake("inject", {"text": "hi", "sender": u})
    s = _until(ch, lambda: _sent(u))
    assert ("fs_" + u) in s[0]["content"]["text"] and s[0]["msg_type"] == "text"
    code = commands.new_code()
    _fake("inject", {"text": code, "sender": u})
    _until(ch, lambda: len(_sent(u)) >= 2)
    assert commands.is_allowed("fs_" + u) and commands.owner() == "123"
    assert b.inbound.get(0) is None
    _fake("inject", {"text": "/help", "sender": u})  # commands are answered by the channel
    _until(ch, lambda: len(_sent(u)) >= 3)
    assert "/status" in _sent(u)[2]["content"]["text"]
    ch.stop()


def test_pings_go_out_on_the_servers_interval_and_the_pong_config_is_taken():
    b, ch, u = _setup()
    p0 = _fake("state")["pings"]
    _until(ch, lambda: ch.ws is not None)
    assert ch.conf["PingInterval"] == 1  # from the endpoint's ClientConfig
    _until(ch, lambda: _fake("state")["pings"] >= p0 + 2, 6000)  # the first at once, then every second
    ch.stop()


def test_a_dropped_connection_is_made_again_and_events_still_come():
    b, ch, u = _setup()
    c0 = _fake("state")["connections"]
    _until(ch, lambda: ch.ws is not None and _fake("state")["connections"] == c0 + 1)  # the fake holds it too
    _fake("kick", {"code": 1001})
    _until(ch, lambda: ch.ws is None)
    assert ch.errors == 1 and "1001" in ch.why, ch.why
    _until(ch, lambda: ch.ws is not None and _fake("state")["connections"] == c0 + 2)
    _fake("inject", {"text": "still there?", "sender": u})
    assert _until(ch, lambda: b.inbound.get(0))["text"] == "still there?"
    ch.stop()


def test_the_token_is_renewed_before_it_expires_and_after_a_refusal():
    b, ch, u = _setup()
    _until(ch, lambda: ch.ws is not None)
    _fake("inject", {"text": "x", "sender": u})
    _until(ch, lambda: b.inbound.get(0))
    t0 = _fake("state")["token_calls"]
    tok = ch.token
    ch.token_end = seam.ticks_add(seam.ticks_ms(), 500000)  # ends within 10 minutes: renewed first
    ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": "one", "kind": "text"})
    _until(ch, lambda: _sent(u))
    assert _fake("state")["token_calls"] == t0 + 1 and ch.token != tok
    _fake("expire", {})  # Feishu says 99991663: fetched again, the chunk sent
    ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": "two", "kind": "text"})
    _until(ch, lambda: len(_sent(u)) >= 2, 10000)
    assert _fake("state")["token_calls"] == t0 + 2 and ch.dropped == 0
    ch.stop()


def test_a_refused_post_goes_as_text_and_a_long_reply_in_parts():
    b, ch, u = _setup()
    _until(ch, lambda: ch.ws is not None)
    _fake("inject", {"text": "x", "sender": u})
    _until(ch, lambda: b.inbound.get(0))
    _fake("fail", {"path": "/open-apis/im/v1/messages", "code": 230001, "msg": "invalid content"})
    ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": "**plain** now", "kind": "text"})
    s = _until(ch, lambda: _sent(u))
    assert s[0]["msg_type"] == "text" and s[0]["content"]["text"] == "**plain** now"
    long = ("word " * 1500).strip()  # 7499 characters: two chunks
    ch.deliver({"channel": "feishu", "chat_id": "fs_" + u, "text": long, "kind": "text"})
    _until(ch, lambda: len(_sent(u)) >= 3)
    s = _sent(u)
    parts = ["".join(e["text"] for e in p) for p in s[1]["content"]["zh_cn"]["content"]] + \
        ["".join(e["text"] for e in p) for p in s[2]["content"]["zh_cn"]["content"]]
    assert "".join(parts).replace(" ", "") == long.replace(" ", "")
    ch.stop()


def test_a_wrong_secret_is_reported_and_waits_long():
    b, ch, u = _setup(secret="wrong-secret")
    _until(ch, lambda: ch.errors)
    assert ch.ws is None and "10014" in ch.why
    assert seam.ticks_diff(ch.connect_at, seam.ticks_ms()) > 60000
    assert ch.describe().startswith("not connected")
