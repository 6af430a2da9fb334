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
