"""Providers against the fake Anthropic and OpenAI servers, under CPython and MicroPython.

The fakes run in this process; each case of ``cases_llm_live.py`` runs in process
(CPython) and in a ``micropython`` subprocess (``mpcase``), scripting the fakes over their
control API. The fakes themselves are vouched for by the official SDKs
(tests/fakes/test_fake_llm_sdk.py).
"""
import os
import socket

import pytest

import mpcase
from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_llm_live.py")


@pytest.fixture(scope="module")
def env():
    fa, fo = FakeAnthropic().start(), FakeOpenAI().start()
    strict = FakeAnthropic(api_key="sk-ant-FAKE-0123456789").start()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    yield {"MIMI_T_ANTHROPIC": fa.url, "MIMI_T_OPENAI": fo.url, "MIMI_T_ANTHROPIC_STRICTKEY": strict.url,
           "MIMI_T_DEAD": "http://127.0.0.1:%d" % dead}
    for f in (fa, fo, strict):
        f.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from mimi.llm import common
    real = common._sleep_ms
    try:
        mpcase.run_cpython(CASES, name)
    finally:
        common._sleep_ms = real
        import mimi.llm as llm
        llm._buf = None


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out


def test_a_call_and_its_retries_share_one_answer_budget(env, monkeypatch):
    """Issue 13, item 13: a server that takes the request and stays silent is told to the
    user within the call's budget (110 s; here cut to 0.6 s, which only CPython can patch:
    MicroPython inlines the const), however long the read timeout; and no retry starts
    without time left for it."""
    import sys

    sys.path.insert(0, HERE)
    import fakectl
    from mimi import config
    from mimi.llm import LLMError, common

    monkeypatch.setattr(common, "_LLM_ANSWER_MS", 600)
    monkeypatch.setattr(common, "_sleep_ms", lambda ms: None)
    monkeypatch.setattr(config, "LLM_TIMEOUT_MS", 120000)
    url = env["MIMI_T_OPENAI"]
    p = common.Provider("openai", "openai", url + "/v1", "sk-FAKE-0123456789", "gpt-test")
    fakectl.reset(url)
    fakectl.script(url, *[fakectl.reply("text", text="late", delay_s=3)] * 3)
    with pytest.raises(LLMError) as e:
        p.chat("s", [{"role": "user", "content": "hello", "ts": 1}])
    assert e.value.user_message == "127.0.0.1 did not answer within 1 s"
    assert len(fakectl.requests(url)) == 1
    fakectl.reset(url)
    fakectl.script(url, *[fakectl.reply("error", status=503)] * 3)
    with pytest.raises(LLMError) as e:
        p.chat("s", [{"role": "user", "content": "hello", "ts": 1}])
    assert "(503)" in e.value.user_message and len(fakectl.requests(url)) == 1
