"""Client half of the Telegram channel's live tests: the channel with its real wire (mimi's
HTTP client) against the fake Bot API that ``test_telegram_live.py`` started and primed
with faults. Each function runs under CPython (in process) and MicroPython (``mpcase``).
Parameters from the environment: MIMI_T_TG (the fake's base URL), MIMI_T_TOKEN.
"""
import os

import support

from mimi import bus, commands, config, seam
from mimi.channels.telegram import Telegram

_SAVED = {}


def _set(**kw):
    """Change config tunables for this case (``_restore`` puts them back: CPython runs the
    cases in the test process)."""
    for k in kw:
        _SAVED.setdefault(k, getattr(config, k))
        setattr(config, k, kw[k])


def _restore():
    for k in _SAVED:
        setattr(config, k, _SAVED[k])
    _SAVED.clear()


def _channel(allowed=("42",)):
    support.fresh_flash()
    config.set("tg_api_base", os.getenv("MIMI_T_TG"))
    config.set("tg_token", os.getenv("MIMI_T_TOKEN"))
    for c in allowed:
        commands.allow(c)
    b = bus.Bus(8, 16)
    return b, Telegram(b)


def _run_until(tg, done, real_ms=20000):
    """Tick with a clock that jumps past every back-off, until ``done()`` or ``real_ms``."""
    t = seam.ticks_ms()
    t0 = t
    while not done():
        assert seam.ticks_diff(seam.ticks_ms(), t0) < real_ms, "not done in time"
        tg.tick(t)
        t = seam.ticks_add(t, config.TG_BACKOFF_MAX_MS + 1)
        seam.sleep_ms(5)


def test_garbage_answers_then_the_message_arrives():
    _set(TG_POLL_TIMEOUT_S=1)
    try:
        b, tg = _channel()
        got = []

        def done():
            m = b.inbound.get(0)
            if m is not None:
                got.append(m)
            return got

        _run_until(tg, done)
        assert got[0]["text"] == "hello" and tg.errors == 5, tg.errors
    finally:
        _restore()


def test_a_trickling_send_gives_up_at_the_deadline():
    _set(TG_CALL_DEADLINE_MS=1500, TG_SEND_TIMEOUT_MS=1000, TG_POLL_TIMEOUT_S=1)
    try:
        b, tg = _channel()
        t = seam.ticks_ms()
        tg.tick(t)  # getMe, the menu, the first poll
        tg.deliver({"channel": "telegram", "chat_id": "42", "text": "x", "kind": "text"})
        t0 = seam.ticks_ms()
        tg.tick(t)  # the send: its answer trickles for 10 s
        spent = seam.ticks_diff(seam.ticks_ms(), t0)
        assert spent < 5000, spent
        assert len(tg.outq) == 1 and tg.outq[0][2] == 1  # one failed try, kept
        _run_until(tg, lambda: not tg.outq)  # the next try is answered at once
        assert tg.dropped == 0
    finally:
        _restore()


def test_a_trickling_poll_gives_up_at_its_deadline():
    _set(TG_POLL_DEADLINE_MS=2000, TG_SEND_TIMEOUT_MS=1000, TG_POLL_TIMEOUT_S=1)
    try:
        b, tg = _channel()
        t0 = seam.ticks_ms()
        t = t0
        while not tg.errors:
            assert seam.ticks_diff(seam.ticks_ms(), t0) < 8000, "the poll was not given up"
            tg.tick(t)
            seam.sleep_ms(20)
        assert tg.poll is None
    finally:
        _restore()


def test_an_update_over_the_poll_buffer_is_skipped_and_the_next_one_handled():
    _set(TG_POLL_TIMEOUT_S=1)
    try:
        b, tg = _channel(("42", "43"))
        got = []

        def done():
            m = b.inbound.get(0)
            if m is not None:
                got.append(m)
            return got and not tg.outq

        _run_until(tg, done)
        assert [(m["chat_id"], m["text"]) for m in got] == [("43", "after")]
        assert tg.errors == 0
    finally:
        _restore()


def test_replies_that_render_empty_still_say_something():
    _set(TG_POLL_TIMEOUT_S=1)
    try:
        b, tg = _channel()
        for t in ("```\n```", "\u2028", "# \n## \n", "\u2028\u3000\u00a0"):
            tg.deliver({"channel": "telegram", "chat_id": "42", "text": t, "kind": "text"})
        _run_until(tg, lambda: not tg.outq)
        assert tg.dropped == 0
    finally:
        _restore()
