"""The fake Feishu is trusted because the official lark-oapi SDK accepts it (host only):
its ws client connects over the long connection, pings and takes the pong's settings,
receives an event (split in parts, too) and acknowledges it; its API client gets a
tenant token and sends text and post messages the fake accepts, and hears the fake's
refusals as Feishu's error codes."""
import json
import threading
import time

import lark_oapi as lark
import pytest
from lark_oapi.api.im.v1 import CreateMessageRequest, CreateMessageRequestBody
from lark_oapi.ws import client as ws_client

from host_sim.fakes.feishu import FakeFeishu

USER = "ou_user0000000000000000000000000001"


@pytest.fixture
def fs():
    f = FakeFeishu(ping_s=1).start()
    yield f
    f.stop()


def test_the_sdk_ws_client_connects_receives_an_event_and_acknowledges_it(fs):
    got = []
    handler = lark.EventDispatcherHandler.builder("", "").register_p2_im_message_receive_v1(
        lambda data: got.append(data)).build()
    cli = lark.ws.Client(fs.app_id, fs.app_secret, event_handler=handler, domain=fs.url,
                         log_level=lark.LogLevel.ERROR, auto_reconnect=False)
    threading.Thread(target=cli.start, daemon=True).start()  # the SDK's loop runs forever
    fs.wait_connected()
    mid = fs.inject_text("hello from the fake")
    acks = fs.wait_acks(1)
    assert got and got[0].event.message.message_id == mid
    assert json.loads(got[0].event.message.content) == {"text": "hello from the fake"}
    assert got[0].event.sender.sender_id.open_id == USER
    a = acks[0]
    assert a["payload"] == {"code": 200}
    assert dict(a["headers"])["type"] == "event" and "biz_rt" in dict(a["headers"])
    # an event in three parts is joined by the SDK and acknowledged once
    mid2 = fs.inject_text("x" * 3000, parts=3)
    fs.wait_acks(2)
    assert got[1].event.message.message_id == mid2
    # pings go out and the pong's ClientConfig is applied
    t0 = time.time()
    while not fs.pings and time.time() - t0 < 5:
        time.sleep(0.05)
    assert fs.pings
    assert cli._ping_interval == 1 and cli._reconnect_interval == fs.config["ReconnectInterval"]


def test_the_sdk_api_client_gets_a_token_and_sends_messages(fs):
    client = lark.Client.builder().app_id(fs.app_id).app_secret(fs.app_secret).domain(fs.url) \
        .log_level(lark.LogLevel.ERROR).build()

    def send(kind, rid, msg_type, content):
        req = CreateMessageRequest.builder().receive_id_type(kind).request_body(
            CreateMessageRequestBody.builder().receive_id(rid).msg_type(msg_type)
            .content(json.dumps(content)).build()).build()
        return client.im.v1.message.create(req)

    r = send("open_id", USER, "text", {"text": "hi"})
    assert r.success(), (r.code, r.msg)
    assert r.data.message_id.startswith("om_") and r.data.msg_type == "text"
    post = {"zh_cn": {"title": "", "content": [[{"tag": "text", "text": "bold", "style": ["bold"]},
                                                {"tag": "a", "text": "link", "href": "https://example.com"}],
                                               [{"tag": "code_block", "language": "PYTHON", "text": "x = 1"}]]}}
    r = send("chat_id", "oc_group000000000000000000000000001", "post", post)
    assert r.success(), (r.code, r.msg)
    assert fs.texts(USER) == ["hi"]
    assert fs.sent[1]["content"] == post
    r = send("chat_id", "oc_group000000000000000000000000001", "post", {"zh_cn": {"content": [[{"tag": "blink"}]]}})
    assert not r.success() and r.code == 230001
    r = send("open_id", "ou_nobody", "text", {"text": "hi"})
    assert not r.success() and r.code == 230013
    assert len(fs.sent) == 2
    tok = [q for q in fs.requests if q["path"].endswith("/tenant_access_token/internal")]
    assert len(tok) == 1  # the SDK caches the token the fake gave


def test_a_wrong_secret_is_refused_as_feishu_does(fs):
    client = lark.Client.builder().app_id(fs.app_id).app_secret("wrong").domain(fs.url) \
        .log_level(lark.LogLevel.ERROR).build()
    req = CreateMessageRequest.builder().receive_id_type("open_id").request_body(
        CreateMessageRequestBody.builder().receive_id(USER).msg_type("text").content('{"text":"x"}').build()).build()
    r = client.im.v1.message.create(req)
    assert not r.success()
    cli = lark.ws.Client(fs.app_id, "wrong", domain=fs.url, log_level=lark.LogLevel.ERROR)
    with pytest.raises(ws_client.ClientException):
        cli._get_conn_url()


def test_an_event_not_acknowledged_is_sent_again():
    import requests
    from lark_oapi.ws.pb.pbbp2_pb2 import Frame
    from websockets.sync.client import connect

    fs = FakeFeishu(redeliver_s=0.3).start()
    try:
        url = requests.post(fs.url + "/callback/ws/endpoint",
                            json={"AppID": fs.app_id, "AppSecret": fs.app_secret}).json()["data"]["URL"]
        with connect(url) as ws:
            fs.wait_connected()
            fs.inject_text("ack me")
            first, again = Frame(), Frame()
            first.ParseFromString(ws.recv(timeout=5))
            again.ParseFromString(ws.recv(timeout=5))  # no ack sent: it comes again
            assert again.payload == first.payload and json.loads(first.payload)["event"]["message"]["content"]
            first.payload = b'{"code": 200}'
            ws.send(first.SerializeToString())
            fs.wait_acks(1)
            try:  # copies sent before the ack arrived
                while True:
                    ws.recv(timeout=0.5)
            except TimeoutError:
                pass
            with pytest.raises(TimeoutError):
                ws.recv(timeout=1)  # acknowledged: no more
    finally:
        fs.stop()
