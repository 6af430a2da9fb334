"""The Telegram side of issue 14, as an attacker would try it (both runtimes): a busy group
cannot starve the owner, a longer @name is not a mention, nothing key-shaped is sent, and
an answer that cannot be parsed is skipped by its update_id however it is spaced."""
import support
import tgfake

from mimi import bus, commands, config, guard, seam
from mimi.channels.telegram import Telegram, number_after

RUNTIMES = ("cpython", "micropython")

OWNER_RESERVE, CHAT_MAX = guard.LIMITS[8], guard.LIMITS[9]
OWNER = 42
GROUP = -100500


def setup(inbound_max=8):
    support.fresh_flash()
    for c in (OWNER, GROUP, 43):
        commands.allow(c)
    b = bus.Bus(inbound_max, 16)
    api = tgfake.FakeApi()
    tg = Telegram(b, api=api)
    now = seam.ticks_ms()
    tg.tick(now)
    return b, api, tg, now


def drain(tg, now, n=20):
    for i in range(n):
        tg.tick(now + i)


def test_a_busy_group_cannot_starve_the_owner():
    b, api, tg, now = setup()
    mentions = [tgfake.text_update(GROUP, "@mimi_test_bot spam %d" % i, chat_type="supergroup", user_id=7 + i)
                for i in range(12)]
    api.answer(*mentions[:6])
    tg.tick(now + 1)
    api.answer(*mentions[6:] + [tgfake.text_update(43, "a second person")])
    tg.tick(now + 2)
    for i in range(8):  # the owner writes while the agent is still on the first message
        api.answer(tgfake.text_update(OWNER, "owner %d" % i))
        tg.tick(now + 3 + i)
    drain(tg, now + 20, 60)  # one reply chunk a tick
    assert tg.outq == []
    got = support.take_all(b.inbound)
    # All of the owner's messages wait for the agent; the others' were refused or pushed out,
    # each refusal told to its sender (none dropped silently), and the owner never told busy.
    assert [m["text"] for m in got] == ["owner %d" % i for i in range(8)], [m["text"] for m in got]
    told = api.texts(GROUP)
    assert len(told) == 12 and all("busy" in t for t in told)
    assert len(api.texts(43)) == 1 and "busy" in api.texts(43)[0]
    assert api.texts(OWNER) == []


def test_the_owners_message_pushes_another_chats_out_of_a_full_queue():
    b = bus.Bus(4, 4)
    support.fresh_flash()
    for i in range(4 - OWNER_RESERVE):
        assert guard.admit(b.inbound, {"channel": "telegram", "chat_id": "7%d" % i}, "42") == (True, None)
    assert guard.admit(b.inbound, {"channel": "telegram", "chat_id": "79"}, "42") == (False, None)  # the reserve
    for i in range(OWNER_RESERVE):
        assert guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42", "n": i}, "42") == (True, None)
    ok, pushed = guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42", "n": 9}, "42")
    assert ok and pushed["chat_id"] == "7%d" % (3 - OWNER_RESERVE)  # the newest of the others
    for i in range(3):
        guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42"}, "42")
    assert guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42"}, "42") == (False, None)  # only own
    assert len(b.inbound) == 4


def test_a_busy_feishu_group_cannot_starve_the_telegram_owner_and_hears_busy_on_feishu():
    # Channels share the inbound queue: the owner's message pushes another channel's out,
    # and that sender is told on its own channel (the bus routes it), not on Telegram.
    b = bus.Bus(4, 4)
    support.fresh_flash()
    for i in range(4 - OWNER_RESERVE):
        assert guard.admit(b.inbound, {"channel": "feishu", "chat_id": "fs_oc_%d" % i}, "42") == (True, None)
    for i in range(OWNER_RESERVE):
        assert guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42", "n": i}, "42") == (True, None)
    ok, pushed = guard.admit(b.inbound, {"channel": "telegram", "chat_id": "42", "n": 9}, "42")
    assert ok and pushed == {"channel": "feishu", "chat_id": "fs_oc_%d" % (3 - OWNER_RESERVE)}
    told = []
    guard.tell_busy("telegram", lambda c, t, plain: told.append((c, t)), b, None, pushed, "busy, try again")
    assert told == []  # another channel's sender: not told on Telegram
    out = support.take_all(b.outbound)
    assert [(m["channel"], m["chat_id"], m["text"]) for m in out] == [
        ("feishu", "fs_oc_%d" % (3 - OWNER_RESERVE), "busy, try again")]
    assert [m["chat_id"] for m in support.take_all(b.inbound)].count("42") == OWNER_RESERVE + 1


def test_a_mention_is_the_bots_own_name_only():
    b, api, tg, now = setup()
    for text in ("@mimi_test_bot_fan what now?", "mail me at x@mimi_test_bot please", "@MIMI_TEST_BOTS hi",
                 "@mimi_test_bot2 hi"):
        api.answer(tgfake.text_update(GROUP, text, chat_type="supergroup", user_id=7))
    api.answer(tgfake.text_update(GROUP, "hey @Mimi_Test_Bot, the time?", chat_type="supergroup", user_id=7),
               tgfake.text_update(GROUP, "(@mimi_test_bot)", chat_type="supergroup", user_id=7))
    drain(tg, now + 1)
    assert [m["text"] for m in support.take_all(b.inbound)] == ["hey , the time?", "()"]
    api.answer(tgfake.text_update(GROUP, "hi @mimi_test_bot_x @mimi_test_bot!", chat_type="supergroup", user_id=7))
    drain(tg, now + 30)
    assert [m["text"] for m in support.take_all(b.inbound)] == ["hi @mimi_test_bot_x !"]  # the second is its name


def test_nothing_shaped_like_a_key_is_sent_to_a_chat():
    b, api, tg, now = setup()
    config.set("key_openai", "sk-proj-FAKEfake0123456789abcd")
    config.set("search_key", "BSAfakefakefakefake12345")
    tg.deliver({"channel": "telegram", "chat_id": str(OWNER), "kind": "text",
                "text": "The proxy said: invalid key sk-proj-FAKEfake0123456789abcd (search BSAfakefakefakefake12345)"})
    tg.queue_text(str(OWNER), "token 123456789:AAFakeFakeFakeFakeFakeFakeFakeFake00", True)
    drain(tg, now + 1)
    sent = " ".join(api.texts(OWNER))
    assert "FAKEfake" not in sent and "BSAfake" not in sent and "AAFake" not in sent, sent
    assert sent.count("[redacted]") == 3


def _answer(tg, raw):
    """What ``Telegram.updates`` makes of a 200 answer ``raw``, read as the wire reads it."""

    class P:
        status = 200

        def finish(self, buf=None, sink=None, **kw):
            for i in range(0, len(raw), 512):  # in pieces, as the socket gives them
                sink(memoryview(raw)[i:i + 512])
            return self

        def json(self):
            return seam.loads_view(self.body)

    return tg.updates(P())


def test_an_update_that_cannot_be_parsed_is_skipped_by_its_id_however_spaced():
    support.fresh_flash()
    tg = Telegram(bus.Bus(4, 4))
    deep = b"[" * 5000 + b"]" * 5000  # deeper than CPython's parser goes
    cases = (
        (b'{"ok":true,"result":[{"update_id":9001,"message":{"message_id":1,"chat":{"id":42,"type":"private"},'
         b'"text":"bad \xff\xfe byte"}}]}', 9001),
        (b'{ "ok" : true , "result" : [ {\n  "update_id" :\t9002 , "message": {"chat": {"id": 42}, "x": ' + deep +
         b'} } ] }', 9002),
    )
    for raw, uid in cases:
        r = _answer(tg, raw)
        if isinstance(r, list):  # this runtime parsed it after all: the update is an ordinary one
            assert r[0]["update_id"] == uid
            continue
        assert number_after(r, b'"update_id" :') == uid, raw[:60]
    assert number_after(b'{"chat" :\n {  "id" : -100123 }', b'"chat" : { "id" :') == -100123
    assert number_after(b'"update_id": "x"', b'"update_id" :') is None
    assert number_after(b'"update_idx": 5', b'"update_id" :') is None


def test_the_channel_goes_past_an_unparsable_update():
    b, api, tg, now = setup()
    raw = b'{ "ok": true, "result": [ { "update_id" :  7777 , "message": {"chat": { "id" : 42 }, "text": "\xff"}}]}'
    api.answers.append(raw)  # as Telegram.updates gives an answer it could not parse
    tg.tick(now + 1)
    api.answers.append(raw)  # asked again one at a time: still unparsable, skipped
    tg.tick(now + 2)
    api.answer(tgfake.text_update(OWNER, "after"))
    drain(tg, now + 3)
    assert api.polls[2].offset == 7778  # confirmed: never asked for again
    assert [m["text"] for m in support.take_all(b.inbound)] == ["after"]
