"""POST /api/update, GET /api/version, GET /update on a real microdot server, driven by
a plain HTTP client (CPython): the body streamed into the slot, each refusal with its
status and a message, the running version untouched by a bad upload."""
import hashlib
import http.client
import json
import os
import time

import pytest
import romfs_maker
import support
from ota_http import PASSWORD, UpdateServer

import mimi_slot
from mimi import ota, ota_image, seam

AUTH = {"Authorization": "Bearer " + PASSWORD}


@pytest.fixture
def server():
    support.fresh_flash()
    mimi_slot.save(None)
    s = UpdateServer()
    yield s
    s.stop()


def _post(server, body, headers, length=None):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    h = dict(headers)
    h["Content-Length"] = str(len(body) if length is None else length)
    c.putrequest("POST", "/api/update")
    for k, v in h.items():
        c.putheader(k, v)
    c.endheaders()
    c.send(body)
    r = c.getresponse()
    raw = r.read()
    out = r.status, json.loads(raw) if r.getheader("Content-Type") == "application/json" else {"text": raw}
    c.close()
    return out


def _get(server, path, headers=AUTH):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    out = r.status, r.getheader("Content-Type"), r.read()
    c.close()
    return out


def test_an_upload_lands_in_the_other_slot_and_the_board_would_switch(server):
    img = romfs_maker.mimi_image("v9-http", pad=60000)  # streamed by microdot (over 16 KB)
    status, answer = _post(server, img, dict(AUTH, **{"X-Update-SHA256": hashlib.sha256(img).hexdigest()}))
    assert status == 200, answer
    assert answer == {"version": "v9-http", "previous": ota.running_version(), "restarting": True}
    deadline = time.monotonic() + 5
    while not server.applied and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.applied == ["v9-http"]  # after the answer went out
    with open(seam.real_path("/ota1/mimi/build.txt")) as f:
        assert f.read() == "v9-http\n"
    status, ctype, body = _get(server, "/api/version")
    info = json.loads(body)
    assert status == 200 and ctype == "application/json"
    assert info["running"] == ota.running_version() and info["max_bytes"] == ota_image.OTA_FILES_MAX_BYTES


def test_refusals_say_why_and_leave_everything_as_it_was(server):
    img = romfs_maker.mimi_image("v10")
    sha = hashlib.sha256(img).hexdigest()
    assert _post(server, img, {"X-Update-SHA256": sha})[0] == 401
    assert _post(server, img, dict(AUTH, Authorization="Bearer wrong", **{"X-Update-SHA256": sha}))[0] == 401
    status, answer = _post(server, img, dict(AUTH, **{"X-Update-SHA256": "1" * 64}))
    assert status == 400 and "SHA-256 mismatch" in answer["error"]
    status, answer = _post(server, img, dict(AUTH, **{"X-Update-SHA256": "xyz"}))
    assert status == 400 and "64 hex digits" in answer["error"]
    status, answer = _post(server, b"x" * 100, dict(AUTH, **{"X-Update-SHA256": sha}),
                           length=ota_image.OTA_FILES_MAX_BYTES + 1)
    assert status == 413 and "the update slot holds %d" % ota_image.OTA_FILES_MAX_BYTES in answer["error"]
    assert _get(server, "/api/version", headers={})[0] == 401
    assert not os.path.exists(seam.real_path("/ota1/mimi")) and mimi_slot.load() == {}
    assert server.applied == []


def test_a_cut_upload_changes_nothing_and_the_next_one_goes_through(server):
    # Over microdot's max_body_length (16 KB), as every real image: streamed, not read first.
    img = romfs_maker.mimi_image("v11", pad=40000)
    sha = hashlib.sha256(img).hexdigest()
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    c.putrequest("POST", "/api/update")
    for k, v in dict(AUTH, **{"X-Update-SHA256": sha, "Content-Length": str(len(img))}).items():
        c.putheader(k, v)
    c.endheaders()
    c.send(img[:len(img) // 3])
    c.sock.shutdown(1)  # the sender stops half way (its side closed, as a dropped link)
    r = c.getresponse()
    assert r.status == 400 and "cut short" in json.loads(r.read())["error"]
    c.close()
    assert not os.path.exists(seam.real_path(ota_image.OTA_INCOMING))
    assert not os.path.exists(seam.real_path("/ota1/mimi")) and server.applied == []
    status, answer = _post(server, img, dict(AUTH, **{"X-Update-SHA256": sha}))
    assert status == 200 and answer["version"] == "v11"


def test_the_page_has_a_file_field_and_the_routes_it_calls(server):
    status, ctype, body = _get(server, "/update", headers={})
    assert status == 200 and ctype.startswith("text/html")
    page = body.decode()
    assert 'type="file"' in page and "/api/update" in page and "X-Update-SHA256" in page and "/api/version" in page


def test_micropython_itself_only_where_the_table_has_ota_slots(server):
    import _esp32_partition as esp32_part
    import esp32
    from test_ota_firmware import _app

    img = _app(size=30000)
    headers = dict(AUTH, **{"X-Update-SHA256": hashlib.sha256(img).hexdigest()})
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    c.request("POST", "/api/firmware", body=img, headers=headers)
    r = c.getresponse()
    assert r.status == 400 and "no OTA app slots" in json.loads(r.read())["error"]
    c.close()
    assert json.loads(_get(server, "/api/version")[2])["firmware_slot"] is None
    esp32.Partition = esp32_part.Partition  # the stand-in, for this test only
    esp32_part.SIM_OTA_BYTES = 65536
    try:
        assert json.loads(_get(server, "/api/version")[2])["firmware_slot"] == "ota_1"
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        c.request("POST", "/api/firmware", body=img, headers=headers)
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["version"] == "v1.28.0-mimi"
        c.close()
        deadline = time.monotonic() + 5
        while not server.firmware and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.firmware == ["v1.28.0-mimi"]
    finally:
        esp32_part.SIM_OTA_BYTES = None
        del esp32.Partition
