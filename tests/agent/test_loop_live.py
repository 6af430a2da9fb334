"""The agent end to end against the fake LLM servers, under CPython and MicroPython."""
import os

import pytest

import mpcase
from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_loop_live.py")


@pytest.fixture(scope="module")
def env():
    fa, fo = FakeAnthropic(api_key="sk-FAKE-0123456789").start(), FakeOpenAI(api_key="sk-FAKE-0123456789").start()
    yield {"MIMI_T_ANTHROPIC": fa.url, "MIMI_T_OPENAI": fo.url, "MIMI_TESTS": os.path.dirname(HERE)}
    fa.stop()
    fo.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from mimi.llm import common
    import mimi.llm as llm
    real = common._sleep_ms
    try:
        mpcase.run_cpython(CASES, name)
    finally:
        common._sleep_ms = real
        llm.reset()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out
