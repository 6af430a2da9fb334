"""The fake Bot API's real-chat shapes (topics, albums, replies with quotes, migration,
files, a blocked user) are trusted because python-telegram-bot accepts them (host only).

Every update the fake writes is parsed with PTB's ``Update.de_json``; files are fetched
with PTB's ``get_file`` and ``download_as_bytearray``; the errors become PTB's own
exceptions (``ChatMigrated`` with the new id, ``Forbidden``, ``BadRequest``).
"""
import asyncio

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


def run(tg, fn):
    async def main():
        bot = telegram.Bot(TOKEN, base_url=tg.url + "/bot", base_file_url=tg.url + "/file/bot")
        async with bot:
            return await fn(bot)

    return asyncio.run(main())


def updates(tg):
    return run(tg, lambda bot: bot.get_updates(timeout=0))


def test_topics_albums_replies_migration_parse_as_ptb_updates(tg):
    t = tg.add_topic(-1009)
    tg.inject_topic_text(-1009, t, "@mimi_test_bot in the topic")
    tg.inject_album(42, ["one", None, "three " + EMOJI])
    said = {"message_id": 5, "from": dict(tg.me), "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "date": 1, "text": "the long answer " * 10}
    tg.inject_reply(42, "why?", to=said, quote="long answer")
    tg.inject_voice_file(42, b"OggS-fake")
    tg.migrate(-555, -100555)
    got = updates(tg)
    assert len(got) == 8
    m = got[0].message
    assert m.is_topic_message and m.message_thread_id == t and m.chat.is_forum
    assert m.reply_to_message.forum_topic_created.name == "topic"
    album = [u.message for u in got[1:4]]
    assert len({a.media_group_id for a in album}) == 1 and album[0].media_group_id
    assert [a.caption for a in album] == ["one", None, "three " + EMOJI]
    assert album[0].photo[-1].file_size > album[0].photo[0].file_size
    r = got[4].message
    assert r.reply_to_message.from_user.id == tg.me["id"] and r.quote.text == "long answer" and r.quote.is_manual
    assert got[5].message.voice.mime_type == "audio/ogg"
    assert got[6].message.migrate_to_chat_id == -100555 and got[6].message.chat.type == "group"
    assert got[7].message.migrate_from_chat_id == -555 and got[7].message.chat.id == -100555


def test_files_download_through_ptb(tg):
    data = bytes(range(256)) * 40
    tg.inject_photo_file(42, data, caption="x")
    u = updates(tg)[0]

    async def fetch(bot):
        f = await bot.get_file(u.message.photo[-1].file_id)
        assert f.file_size == len(data) and "/photos/" in f.file_path
        return bytes(await f.download_as_bytearray())

    assert run(tg, fetch) == data
    with pytest.raises(tgerr.BadRequest, match="(?i)invalid file_id"):
        run(tg, lambda bot: bot.get_file("nope"))


def test_topic_sends_and_their_errors(tg):
    t = tg.add_topic(-1009)
    m = run(tg, lambda bot: bot.send_message(-1009, "hi", message_thread_id=t))
    assert m.message_thread_id == t and m.is_topic_message
    for chat, thread in ((-1009, 1), (-1009, t + 1), (42, 3)):  # General, a wrong topic, no topics
        with pytest.raises(tgerr.BadRequest, match="(?i)message thread not found"):
            run(tg, lambda bot: bot.send_message(chat, "x", message_thread_id=thread))
    run(tg, lambda bot: bot.send_chat_action(-1009, "typing", message_thread_id=t))


def test_migrated_group_and_blocked_user_errors(tg):
    tg.migrate(-555, -100555)
    with pytest.raises(tgerr.ChatMigrated) as e:
        run(tg, lambda bot: bot.send_message(-555, "hello"))
    assert e.value.new_chat_id == -100555
    tg.block(42)
    with pytest.raises(tgerr.Forbidden, match="blocked by the user"):
        run(tg, lambda bot: bot.send_message(42, "hello"))
