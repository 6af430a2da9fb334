"""The Feishu channel against the fake Feishu (which lark-oapi vouches for:
tests/fakes/test_fake_feishu_sdk.py), under CPython and under MicroPython; the client
half is ``cases_feishu_live.py``."""
import os

import pytest

import mpcase
from host_sim.fakes.feishu import FakeFeishu

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases_feishu_live.py")


@pytest.fixture(scope="module")
def env():
    fs = FakeFeishu(ping_s=1, reconnect_s=1, reconnect_nonce_s=0).start()
    yield {"MIMI_T_FS": fs.url, "MIMI_T_FS_ID": fs.app_id, "MIMI_T_FS_SECRET": fs.app_secret}
    fs.stop()


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_cpython(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    mpcase.run_cpython(CASES, name)


@pytest.mark.parametrize("name", mpcase.case_names(CASES))
def test_micropython(name, env):
    ok, out = mpcase.run(CASES, name, env)
    assert ok, out
