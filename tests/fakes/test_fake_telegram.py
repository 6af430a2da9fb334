"""The fake Telegram Bot API is trusted because python-telegram-bot accepts it (host only).

Every test talks to the fake through PTB's ``Bot`` with ``base_url`` pointed at it, so
the wire format (URLs, form-encoded parameters, JSON answers, error bodies) is checked by
a real client, and PTB's objects check the update and message shapes.
"""
import asyncio
import threading
import time

import pytest
import telegram
from telegram import error as tgerr

from host_sim.fakes.telegram import FakeTelegram

TOKEN = "123456:FAKE-token"
EMOJI = "\U0001F600"


@pytest.fixture
def tg():
    fake = FakeTelegram(token=TOKEN, username="mimi_test_bot").start()
    yield fake
    fake.stop()


def run(tg, fn, token=TOKEN):
    async def main():
        bot = telegram.Bot(token, base_url=tg.url + "/bot")
        async with bot:
            return await fn(bot)

    return asyncio.run(main())


def _secs(v):
    return v.total_seconds() if hasattr(v, "total_seconds") else v


def test_get_me_through_ptb(tg):
    me = run(tg, lambda bot: bot.get_me())
    assert me.username == "mimi_test_bot" and me.is_bot and me.id == 123456


def test_wrong_token_is_refused_like_telegram(tg):
    with pytest.raises(tgerr.InvalidToken):
        run(tg, lambda bot: bot.get_me(), token="999:WRONG-token")


def test_injected_update_shapes_parse_as_ptb_objects(tg):
    tg.inject_text(42, "/start@mimi_test_bot hi " + EMOJI + " @mimi_test_bot")
    tg.inject_edited(42, "edited text", message_id=1)
    tg.inject_photo(42, caption="look " + EMOJI)
    tg.inject_sticker(42)
    tg.inject_voice(42)
    tg.inject_location(42)
    tg.inject_group_text(-1001234, "@mimi_test_bot what time is it?")
    tg.inject_group_text(-1001234, "and now?", reply_to_bot=True)
    tg.inject_service(-1001234, "new_chat_members")
    tg.inject_callback_query(42, data="yes")

    ups = run(tg, lambda bot: bot.get_updates(timeout=0))
    assert len(ups) == 10
    m = ups[0].message
    ents = m.parse_entities()
    assert sorted(ents.values()) == ["/start@mimi_test_bot", "@mimi_test_bot"]  # UTF-16 offsets right
    assert m.chat.type == "private" and m.from_user.id == 42
    assert ups[1].edited_message.text == "edited text" and ups[1].edited_message.edit_date
    assert ups[2].message.caption == "look " + EMOJI and ups[2].message.photo[-1].width == 800
    assert ups[3].message.sticker.emoji == EMOJI
    assert ups[4].message.voice.duration == 3
    assert ups[5].message.location.latitude == pytest.approx(52.52)
    g = ups[6].message
    assert g.chat.type == "supergroup" and g.chat.id == -1001234
    assert list(g.parse_entities().values()) == ["@mimi_test_bot"]
    assert ups[7].message.reply_to_message.from_user.username == "mimi_test_bot"
    assert ups[8].message.new_chat_members[0].first_name == "Bob"
    assert ups[9].callback_query.data == "yes" and ups[9].callback_query.message.chat.id == 42
    ids = [u.update_id for u in ups]
    assert ids == sorted(ids) and len(set(ids)) == 10


def test_offset_confirms_and_confirmed_updates_are_forgotten(tg):
    tg.inject_text(1, "a")
    tg.inject_text(1, "b")

    async def fn(bot):
        first = await bot.get_updates(timeout=0, limit=1)
        assert [u.message.text for u in first] == ["a"]
        again = await bot.get_updates(timeout=0)  # nothing confirmed yet: both again
        assert [u.message.text for u in again] == ["a", "b"]
        rest = await bot.get_updates(offset=first[0].update_id + 1, timeout=0)
        assert [u.message.text for u in rest] == ["b"]
        done = await bot.get_updates(offset=rest[0].update_id + 1, timeout=0)
        assert done == ()
        # an older offset cannot bring confirmed updates back
        old = await bot.get_updates(offset=first[0].update_id, timeout=0)
        assert old == ()

    run(tg, fn)
    assert tg.pending() == []


def test_long_poll_waits_and_wakes_on_a_new_update(tg):
    async def fn(bot):
        t0 = time.time()
        empty = await bot.get_updates(timeout=1)
        waited = time.time() - t0
        assert empty == () and 0.9 <= waited < 3
        threading.Timer(0.3, lambda: tg.inject_text(5, "late")).start()
        t0 = time.time()
        got = await bot.get_updates(timeout=10, read_timeout=15)
        assert [u.message.text for u in got] == ["late"] and time.time() - t0 < 3

    run(tg, fn)


def test_allowed_updates_filters_and_is_remembered(tg):
    tg.inject_edited(3, "x")
    tg.inject_text(3, "y")

    async def fn(bot):
        got = await bot.get_updates(timeout=0, allowed_updates=["message"])
        assert [u.message.text for u in got] == ["y"]
        got = await bot.get_updates(timeout=0)  # the filter stays
        assert [u.message.text for u in got] == ["y"]

    run(tg, fn)
    assert tg.allowed_updates == ["message"]


def test_send_message_html_gives_entities(tg):
    async def fn(bot):
        return await bot.send_message(42, "<b>bold</b> " + EMOJI + " <i>it</i> &lt;x&gt; "
                                      '<a href="https://example.org">link</a>',
                                      parse_mode="HTML")

    m = run(tg, fn)
    assert m.text == "bold " + EMOJI + " it <x> link"
    ents = m.parse_entities()
    assert [(e.type, v) for e, v in sorted(ents.items(), key=lambda kv: kv[0].offset)] == [
        ("bold", "bold"), ("italic", "it"), ("text_link", "link")]
    assert tg.texts(42) == [m.text]


def test_send_message_pre_with_language(tg):
    m = run(tg, lambda bot: bot.send_message(1, '<pre><code class="language-python">x = 1</code></pre>',
                                             parse_mode="HTML"))
    assert m.entities[0].type == "pre" and m.entities[0].language == "python"


def test_bad_html_is_refused_with_telegrams_words(tg):
    with pytest.raises(tgerr.BadRequest) as e:
        run(tg, lambda bot: bot.send_message(1, "a <foo> b", parse_mode="HTML"))
    assert "can't parse entities" in str(e.value).lower()
    assert 'unsupported start tag "foo" at byte offset 2' in str(e.value).lower()
    with pytest.raises(tgerr.BadRequest) as e:
        run(tg, lambda bot: bot.send_message(1, "<b>open", parse_mode="HTML"))
    assert "can't find end tag corresponding to start tag b" in str(e.value).lower()
    # the same text without parse_mode is fine
    assert run(tg, lambda bot: bot.send_message(1, "a <foo> b")).text == "a <foo> b"


def test_too_long_and_empty_messages_are_refused(tg):
    with pytest.raises(tgerr.BadRequest) as e:
        run(tg, lambda bot: bot.send_message(1, EMOJI * 2049))  # 4098 UTF-16 units
    assert "too long" in str(e.value).lower()
    ok = run(tg, lambda bot: bot.send_message(1, EMOJI * 2048))
    assert ok.text == EMOJI * 2048
    assert run(tg, lambda bot: bot.send_message(1, "<b>x</b>" + "y" * 4095, parse_mode="HTML")).text
    with pytest.raises(tgerr.BadRequest) as e:
        run(tg, lambda bot: bot.send_message(1, "<b> </b>", parse_mode="HTML"))
    assert "empty" in str(e.value).lower()


def test_429_carries_retry_after(tg):
    tg.fail_429("sendMessage", retry_after=3)
    with pytest.raises(tgerr.RetryAfter) as e:
        run(tg, lambda bot: bot.send_message(1, "hi"))
    assert _secs(e.value.retry_after) == 3
    assert run(tg, lambda bot: bot.send_message(1, "hi")).text == "hi"  # only once


def test_webhook_conflict_then_delete_webhook(tg):
    tg.set_webhook()
    with pytest.raises(tgerr.Conflict) as e:
        run(tg, lambda bot: bot.get_updates(timeout=0))
    assert "webhook is active" in str(e.value)
    assert run(tg, lambda bot: bot.delete_webhook()) is True
    assert run(tg, lambda bot: bot.get_updates(timeout=0)) == ()


def test_a_second_poller_ends_the_first_with_409(tg):
    results = {}

    def first():
        try:
            run(tg, lambda bot: bot.get_updates(timeout=5, read_timeout=10))
            results["first"] = "returned"
        except tgerr.Conflict as e:
            results["first"] = str(e)

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.5)
    run(tg, lambda bot: bot.get_updates(timeout=0))
    t.join(10)
    assert "terminated by other getUpdates request" in results["first"]


def test_dropped_connection_is_a_network_error(tg):
    tg.drop("getMe")
    with pytest.raises(tgerr.NetworkError):
        run(tg, lambda bot: bot.get_me())
    assert run(tg, lambda bot: bot.get_me()).username == "mimi_test_bot"


def test_commands_actions_callbacks(tg):
    cmds = [telegram.BotCommand("start", "Start"), telegram.BotCommand("new", "Fresh session")]

    async def fn(bot):
        assert await bot.set_my_commands(cmds) is True
        got = await bot.get_my_commands()
        assert [(c.command, c.description) for c in got] == [("start", "Start"), ("new", "Fresh session")]
        assert await bot.send_chat_action(42, "typing") is True
        assert await bot.answer_callback_query("cbq-1") is True
        with pytest.raises(tgerr.BadRequest):
            await bot.set_my_commands([telegram.BotCommand("Bad-Name", "x")])

    run(tg, fn)
    assert tg.commands[1]["command"] == "new"
    assert [c.method for c in tg.sent][-3:] == ["getMyCommands", "sendChatAction", "answerCallbackQuery"]


def test_json_body_is_accepted_too(tg):
    import json
    import urllib.request

    req = urllib.request.Request(tg.api_url + "/sendMessage", method="POST",
                                 data=json.dumps({"chat_id": 7, "text": "<i>j</i>", "parse_mode": "HTML"}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        body = json.loads(r.read())
    assert body["ok"] and body["result"]["text"] == "j"
    raw = urllib.request.urlopen(tg.api_url + "/getMe", timeout=5).read()
    assert raw.startswith(b'{"ok":true')
