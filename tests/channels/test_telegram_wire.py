"""The Telegram channel's own Bot API wire (``call``, ``updates``, ``_error``) fed answers
as mimi's HTTP client hands them over: status and body bytes, parsed by the runtime's own
JSON (both runtimes). Answers that are not the Bot API's JSON, or carry fields of the
wrong type, are failed calls: backed off, never the end of the I/O thread.
"""
import support

from mimi import bus, commands, config, seam
from mimi.channels.telegram import Telegram, TgError

RUNTIMES = ("cpython", "micropython")

ME = b'{"ok":true,"result":{"id":777,"is_bot":true,"first_name":"mimi","username":"mimi_test_bot"}}'
NONE = b'{"ok":true,"result":[]}'
OK = b'{"ok":true,"result":true}'


class Answer:
    """A finished ``http.Pending``: the body copied into the caller's buffer, cut at its end."""

    def __init__(self, status, body, buf):
        n = min(len(body), len(buf))
        buf[:n] = body[:n]
        self.status = status
        self.raw = body
        self.body = memoryview(buf)[:n]
        self.truncated = len(body) > n

    def finish(self, buf=None, cap=None, want=None, sink=None):
        if sink is not None:  # as http does: the body piece by piece through buf
            k = len(buf)
            for i in range(0, len(self.raw), k):
                piece = memoryview(buf)[:min(k, len(self.raw) - i)]
                piece[:] = self.raw[i:i + len(piece)]
                sink(piece)
            self.body = memoryview(buf)[:0]
            self.truncated = False
        return self

    def ready(self, timeout_ms=0):
        return True

    def expired(self):
        return False

    def close(self):
        pass

    def json(self):
        return seam.loads_view(self.body)


class Wire:
    """Stands in for ``Telegram._post``: scripted answers per method, then a default."""

    def __init__(self):
        self.answers = {}  # method -> [(status, body bytes)]
        self.calls = []  # (method, params)

    def queue(self, method, status, body, times=1):
        self.answers.setdefault(method, []).extend([(status, body)] * times)

    def post(self, method, params, buf, *rest):
        self.calls.append((method, params))
        lst = self.answers.get(method)
        if lst:
            status, body = lst.pop(0)
        else:
            status, body = 200, ME if method == "getMe" else NONE if method == "getUpdates" else OK
        return Answer(status, body, buf)

    def count(self, method):
        n = 0
        for m, _ in self.calls:
            n += m == method
        return n


def setup(allowed=("42",)):
    support.fresh_flash()
    config.set("tg_token", "123456:FAKE-token")
    for c in allowed:
        commands.allow(c)
    b = bus.Bus(8, 16)
    tg = Telegram(b)  # the real wire, with its own buffers
    w = Wire()
    tg._post = w.post
    return b, tg, w


def _update(uid, chat, text):
    return ('{"update_id":%d,"message":{"message_id":%d,"from":{"id":%d,"is_bot":false,"first_name":"A"},'
            '"chat":{"id":%d,"type":"private"},"date":1,"text":"%s"}}' % (uid, uid, chat, chat, text)).encode()


def test_poll_answers_that_are_not_the_bot_apis_json_are_failed_calls():
    b, tg, w = setup()
    garbage = (b"<html><body>502 Bad Gateway</body></html>", b"[1,2,3]", b'"hello"', b"null",
               b'{"ok":true,"result":[{"update_id":', b'{"ok":true,"result":{"a":1}}', b'{"ok":true}')
    for g in garbage:
        w.queue("getUpdates", 200, g)
    w.queue("getUpdates", 200, b'{"ok":true,"result":[' + _update(5000, 42, "after") + b"]}")
    t = seam.ticks_ms()
    for i in range(3 * len(garbage) + 6):  # each tick may start a poll, read it, start the next
        tg.tick(t)
        t += config.TG_BACKOFF_MAX_MS + 1  # past any back-off
    assert tg.errors == len(garbage)
    m = b.inbound.get(0)
    assert m is not None and m["text"] == "after" and tg.offset == 5001


def test_backoff_doubles_while_the_answers_are_garbage():
    b, tg, w = setup()
    w.queue("getUpdates", 200, b"<html>proxy</html>", times=3)
    t = seam.ticks_ms()
    tg.tick(t)  # getMe, first poll
    tg.tick(t + 1)  # its garbage answer
    assert tg.errors == 1 and tg.backoff_ms == 2 * config.TG_BACKOFF_MIN_MS
    n = w.count("getUpdates")
    tg.tick(t + config.TG_BACKOFF_MIN_MS - 10)
    assert w.count("getUpdates") == n  # still waiting


def test_error_answers_with_fields_of_the_wrong_type():
    b, tg, w = setup()
    cases = (
        (500, b'{"ok":false,"error_code":"500","description":"x"}', (500, "x", None)),
        (409, b'{"ok":false,"error_code":409,"description":409}', (409, "HTTP 409", None)),
        (429, b'{"ok":false,"error_code":429,"description":"slow","parameters":[5]}', (429, "slow", None)),
        (429, b'{"ok":false,"error_code":429,"description":"slow","parameters":{"retry_after":[5]}}',
         (429, "slow", None)),
        (429, b'{"ok":false,"error_code":429,"description":"slow","parameters":{"retry_after":"abc"}}',
         (429, "slow", None)),
        (429, b'{"ok":false,"error_code":429,"description":"s","parameters":{"retry_after":1e999}}',
         (429, "s", config.TG_RETRY_AFTER_MAX_S)),
        (429, b'{"ok":false,"error_code":429,"description":"s","parameters":{"retry_after":-3}}', (429, "s", None)),
        (429, b'{"ok":false,"error_code":429,"description":"s","parameters":{"retry_after":2.5}}', (429, "s", 2)),
        (502, b"<html>Bad Gateway</html>", (502, "HTTP 502", None)),
        (400, b'{"ok":false}', (400, "HTTP 400", None)),
        (403, b"[1]", (403, "HTTP 403", None)),
    )
    for status, body, want in cases:
        w.queue("sendMessage", status, body)
        e = support.raises(TgError, tg.call, "sendMessage", {"chat_id": 1, "text": "x"})
        assert e.args == want, (body, e.args)


def test_getme_that_is_not_json_is_a_failed_call():
    b, tg, w = setup()
    w.queue("getMe", 200, b"<html>hello</html>")
    w.queue("getMe", 200, b'{"ok":true,"result":"not a user"}')
    support.raises(OSError, tg.call, "getMe", None, True)
    t = seam.ticks_ms()
    tg.tick(t)  # the second: not a dict
    assert tg.me is None and tg.errors == 1 and w.count("setMyCommands") == 0
    tg.tick(t + config.TG_BACKOFF_MAX_MS)
    assert tg.me["id"] == 777 and w.count("setMyCommands") == 1


def test_odd_poll_errors_do_not_end_the_thread():
    b, tg, w = setup()
    w.queue("getUpdates", 409, b'{"ok":false,"error_code":409,"description":409}')
    w.queue("getUpdates", 429, b'{"ok":false,"error_code":429,"description":"s","parameters":{"retry_after":1e999}}')
    w.queue("getUpdates", 500, b'{"ok":false,"error_code":"500","description":["x"]}')
    t = seam.ticks_ms()
    tg.tick(t)
    tg.tick(t + 1)  # 409 whose description is a number: a conflict, backed off
    assert tg.errors == 1
    n = w.count("getUpdates")
    tg.tick(t + config.TG_CONFLICT_BACKOFF_MS - 100)
    assert w.count("getUpdates") == n
    t += config.TG_CONFLICT_BACKOFF_MS + 1
    tg.tick(t)  # the next poll: 429 with an endless retry_after waits the cap
    tg.tick(t + 1)
    assert tg.errors == 2
    n = w.count("getUpdates")
    tg.tick(t + 1000 * config.TG_RETRY_AFTER_MAX_S - 100)
    assert w.count("getUpdates") == n
    t += 1000 * config.TG_RETRY_AFTER_MAX_S + 10
    tg.tick(t)
    tg.tick(t + 1)
    assert tg.errors == 3


def test_a_reply_that_keeps_failing_is_dropped_after_bounded_tries():
    b, tg, w = setup()
    t = seam.ticks_ms()
    tg.tick(t)
    bad = b'{"ok":false,"error_code":"500","description":17}'
    w.queue("sendMessage", 500, bad, times=config.TG_SEND_TRIES)
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "first", "kind": "text"})
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "second", "kind": "text"})
    for i in range(config.TG_SEND_TRIES + 3):
        t += config.TG_BACKOFF_MAX_MS + 1
        tg.tick(t)
    sent = [p["text"] for m, p in w.calls if m == "sendMessage"]
    assert sent == ["first"] * config.TG_SEND_TRIES + ["second"]
    assert tg.dropped == 1 and tg.outq == []


def test_429_on_send_with_an_endless_retry_after_waits_the_cap():
    b, tg, w = setup()
    t = seam.ticks_ms()
    tg.tick(t)
    w.queue("sendMessage", 429, b'{"ok":false,"error_code":429,"description":"s","parameters":{"retry_after":1e999}}')
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "x", "kind": "text"})
    tg.tick(t + 1)
    tg.tick(t + 1000 * config.TG_RETRY_AFTER_MAX_S - 100)
    assert w.count("sendMessage") == 1
    tg.tick(t + 1000 * config.TG_RETRY_AFTER_MAX_S + 10)
    assert w.count("sendMessage") == 2 and tg.outq == [] and tg.dropped == 0


def test_a_bad_api_base_is_a_failed_call():
    b, tg, w = setup()
    del tg._post  # the real one: the URL is checked before any connection
    config.set("tg_api_base", "ftp://nowhere")
    tg.tick(seam.ticks_ms())
    assert tg.me is None and tg.errors == 1


def test_a_pass_of_calls_ends_well_before_the_watchdog():
    # A tick goes on while it has spent less than TG_CALL_DEADLINE_MS; the last call it
    # starts ends within its deadline (the long poll's within TG_POLL_DEADLINE_MS, and only
    # the first call of a tick reads a poll) plus at most a connection's set-up.
    assert config.TG_POLL_TIMEOUT_S * 1000 + 5000 <= config.TG_POLL_DEADLINE_MS
    worst = max(config.TG_POLL_DEADLINE_MS, 2 * config.TG_CALL_DEADLINE_MS) + config.HTTP_CONNECT_TIMEOUT_MS
    assert worst <= config.APP_WDT_TIMEOUT_MS * 2 // 3, worst


def test_a_tick_that_took_long_leaves_sends_and_typing_to_the_next_pass():
    b, tg, w = setup()
    t = seam.ticks_ms()
    tg.tick(t)
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "", "kind": "typing"})
    tg.deliver({"channel": "telegram", "chat_id": "42", "text": "x", "kind": "text"})
    slow = w.post

    def post(method, params, buf, *rest):  # the poll's answer took the whole budget
        if method == "getUpdates":
            seam.sleep_ms(60)
        return slow(method, params, buf, *rest)

    tg._post = post
    keep = config.TG_CALL_DEADLINE_MS
    config.TG_CALL_DEADLINE_MS = 50
    try:
        tg.tick(t + 1)  # reads the poll (slow), then stops: no new poll, no send, no typing
        assert w.count("sendMessage") == 0 and w.count("sendChatAction") == 0
        n = w.count("getUpdates")
        tg._post = slow
        tg.tick(t + 2)
        assert w.count("sendMessage") == 1 and w.count("sendChatAction") == 1 and w.count("getUpdates") == n + 1
    finally:
        config.TG_CALL_DEADLINE_MS = keep


def test_an_answer_over_the_poll_buffer_is_skipped_by_the_id_it_starts_with():
    b, tg, w = setup(allowed=("42", "43"))
    big = _update(8000, 42, "\\u0436" * 4000)  # 24 KB as Telegram writes it: over the 16 KB buffer
    w.queue("getUpdates", 200, b'{"ok":true,"result":[' + big + b"," + _update(8001, 43, "small") + b"]}")
    w.queue("getUpdates", 200, b'{"ok":true,"result":[' + big + b"]}")  # asked again one at a time
    w.queue("getUpdates", 200, b'{"ok":true,"result":[' + _update(8001, 43, "small") + b"]}")
    t = seam.ticks_ms()
    for i in range(6):
        tg.tick(t + i)
    m = b.inbound.get(0)
    assert m is not None and m["text"] == "small" and m["chat_id"] == "43"
    assert tg.offset == 8002 and tg.errors == 0
    told = [p for m, p in w.calls if m == "sendMessage"]
    assert len(told) == 1 and told[0]["chat_id"] == "42" and "too long" in told[0]["text"]
    offsets = [p["offset"] for m, p in w.calls if m == "getUpdates"]
    assert offsets[:4] == [0, 0, 8001, 8002], offsets


def test_the_id_of_an_update_over_the_buffer_is_looked_for_past_its_start():
    b, tg, w = setup()
    big = (b'{"ok":true,"result":[{"message":{"message_id":1,"from":{"id":42,"first_name":"A"},'
           b'"chat":{"id":42,"type":"private"},"date":1,"caption":"' + b"y" * 2000 + b'"},"update_id":8100,'
           b'"padding":"' + b"z" * 20000 + b'"}]}')
    w.queue("getUpdates", 200, big)
    w.queue("getUpdates", 200, big)
    t = seam.ticks_ms()
    for i in range(4):
        tg.tick(t + i)
    assert tg.offset == 8101 and tg.errors == 0
    assert [p["offset"] for m, p in w.calls if m == "getUpdates"][:3] == [0, 0, 8101]


def _send_all(tg, t, n=10):
    for i in range(n):
        tg.tick(t)
        t += config.TG_BACKOFF_MAX_MS + 1
    return t


def test_a_reply_to_a_group_that_became_a_supergroup_goes_there():
    b, tg, w = setup(allowed=("42", "-555"))
    config.set("owner_chat", "-555")
    t = seam.ticks_ms()
    tg.tick(t)
    w.queue("sendMessage", 400, b'{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded '
                                b'to a supergroup chat","parameters":{"migrate_to_chat_id":-100555}}')
    tg.deliver({"chat_id": "-555", "text": "the answer", "kind": "text"})
    tg.deliver({"chat_id": "-555", "text": "and more", "kind": "text"})
    _send_all(tg, t)
    sent = [p for m, p in w.calls if m == "sendMessage"]
    assert [p["chat_id"] for p in sent] == ["-555", "-100555", "-100555"]
    assert [p["text"] for p in sent][1:] == ["the answer", "and more"]  # nothing lost
    assert commands.allowed() == ["42", "-100555"] and config.get("owner_chat") == "-100555"


def test_a_user_who_blocked_the_bot_gets_nothing_more_until_they_write():
    b, tg, w = setup(allowed=("42", "43"))
    t = seam.ticks_ms()
    tg.tick(t)
    w.queue("sendMessage", 403, b'{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}')
    for text in ("one", "two"):
        tg.deliver({"chat_id": "43", "text": text, "kind": "text"})
    tg.deliver({"chat_id": "42", "text": "to 42", "kind": "text"})
    t = _send_all(tg, t)
    tg.deliver({"chat_id": "43", "text": "three", "kind": "text"})
    tg.deliver({"chat_id": "43", "kind": "typing"})
    t = _send_all(tg, t)
    sent = [(p["chat_id"], p["text"]) for m, p in w.calls if m == "sendMessage"]
    assert sent == [("43", "one"), ("42", "to 42")] and "43" in tg.blocked
    assert not [p for m, p in w.calls if m == "sendChatAction" and p["chat_id"] == "43"]
    w.queue("getUpdates", 200, b'{"ok":true,"result":[' + _update(7000, 43, "back") + b"]}")
    _send_all(tg, t)
    assert "43" not in tg.blocked and b.inbound.get(0)["text"] == "back"


def test_topic_replies_carry_the_thread_and_a_deleted_topic_falls_back_to_the_chat():
    b, tg, w = setup(allowed=("-1009",))
    t = seam.ticks_ms()
    tg.tick(t)
    tg.deliver({"chat_id": "-1009:100", "text": "in the topic", "kind": "text"})
    w.queue("sendMessage", 200, OK)
    w.queue("sendMessage", 400, b'{"ok":false,"error_code":400,"description":"Bad Request: message thread not found"}')
    tg.deliver({"chat_id": "-1009:107", "text": "topic gone", "kind": "text"})
    _send_all(tg, t)
    sent = [p for m, p in w.calls if m == "sendMessage"]
    assert [(p["chat_id"], p.get("message_thread_id")) for p in sent] == [("-1009", 100), ("-1009", 107),
                                                                        ("-1009", None)]
