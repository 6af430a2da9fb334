"""The Telegram channel's real wire against the fake Bot API primed with faults: answers
that are not the Bot API's JSON, answers that trickle in, an update over the poll buffer,
replies that render to empty text (host only; each case of
``cases_tg_live.py`` runs under CPython in process and under MicroPython).
"""
import os

import pytest

import mpcase
from host_sim.fakes.telegram import FakeTelegram

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases_tg_live.py")
SLOW_OK = b'{"ok":true,"result":true}' + b" " * 200  # trickled at 50 ms a byte: 11 s


def _garbage(fake):
    fake.answer_raw("getMe", 200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
    for body in (b"<html>proxy</html>", b"[1,2,3]", b"null", b'{"ok":true,"result":[{"update_id":'):
        fake.answer_raw("getUpdates", 200, body)
    fake.inject_text(42, "hello")


def _big(fake):
    fake.inject_text(42, "\u0436" * 4000)  # 24 KB as Telegram writes it (non-ASCII escaped)
    fake.inject_text(43, "after")


PREPARE = {
    "test_replies_that_render_empty_still_say_something": lambda fake: None,
    "test_an_update_over_the_poll_buffer_is_skipped_and_the_next_one_handled": _big,
    "test_garbage_answers_then_the_message_arrives": _garbage,
    "test_a_trickling_send_gives_up_at_the_deadline":
        lambda fake: fake.answer_raw("sendMessage", 200, SLOW_OK, gap_s=0.05),
    "test_a_trickling_poll_gives_up_at_its_deadline":
        lambda fake: fake.answer_raw("getUpdates", 200, b'{"ok":true,"result":[]}' + b" " * 200, gap_s=0.05),
}

CHECK = {
    "test_replies_that_render_empty_still_say_something":
        lambda fake: fake.texts(42) == ["```\n```", "(no reply)", "# \n##", "(no reply)"],
    "test_an_update_over_the_poll_buffer_is_skipped_and_the_next_one_handled":
        lambda fake: len(fake.texts(42)) == 1 and "too long" in fake.texts(42)[0] and not fake.pending(),
    "test_a_trickling_send_gives_up_at_the_deadline": lambda fake: fake.texts(42) == ["x"],
}


@pytest.fixture
def fake():
    f = FakeTelegram().start()
    yield f
    f.stop()


@pytest.mark.parametrize("runtime", ("cpython", "micropython"))
@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_live(name, runtime, fake, monkeypatch):
    PREPARE[name](fake)
    env = {"MIMI_T_TG": fake.url, "MIMI_T_TOKEN": fake.token}
    if runtime == "cpython":
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        mpcase.run_cpython(CASES, name)
    else:
        ok, out = mpcase.run(CASES, name, env)
        assert ok, out
    assert CHECK.get(name, lambda f: True)(fake), fake.calls
