"""The footer "tests per interpreter" (tests/conftest.py) counts in pytest's own words."""
import os
import re
import subprocess
import sys

from host_sim import hostenv

TESTS = os.path.join(hostenv.ROOT, "tests")

_SAMPLE = '''
import pytest


def test_passes():
    pass


def test_fails():
    assert False


@pytest.mark.xfail(reason="known", strict=False)
def test_xfails():
    assert False


@pytest.mark.xfail(reason="known", strict=False)
def test_xpasses():
    pass


def test_skips():
    pytest.skip("not here")


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


def test_errors(broken):
    pass
'''


def test_the_tally_uses_the_words_of_pytests_summary(tmp_path):
    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    env = dict(os.environ, PYTHONPATH=TESTS + os.pathsep + hostenv.ROOT)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
                        "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
                       capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    line = [ln for ln in out.splitlines() if ln.startswith("CPython ")]
    assert len(line) == 1 and re.fullmatch(
        r"CPython \d+\.\d+ +6 run: 1 error, 1 failed, 1 passed, 1 skipped, 1 xfailed, 1 xpassed", line[0]), out
    # pytest's own summary says the same.
    summary = out.strip().splitlines()[-1]
    for word in ("1 failed", "1 passed", "1 skipped", "1 xfailed", "1 xpassed", "1 error"):
        assert re.search(r"\b%s\b" % word, summary), summary
