"""The serial console: functions and the mimi> line console (both runtimes).

Nothing here may raise: a wrong argument prints the usage, an error one line.
"""
import support

import mimi
from mimi import app, cli, commands, config
from mimi.storage import cronjobs, memory

RUNTIMES = ("cpython", "micropython")

_lines = []


def _capture():
    support.fresh_flash()
    del _lines[:]
    cli.out = lambda *a: _lines.append(" ".join(str(x) for x in a))
    return _lines


def _text():
    return "\n".join(_lines)


def test_settings_through_the_line_console():
    _capture()
    assert cli.execute("set_tz +01:00")
    assert config.get("tz") == "+01:00"
    cli.execute("set_tz")
    assert "usage: set_tz <offset>" in _text()
    del _lines[:]
    cli.execute("set_tz nowhere")
    assert _text().startswith("error: ") and config.get("tz") == "+01:00"
    cli.execute("set_api_key sk-ant-FAKE-0123456789")
    assert _lines[-1] == "key_anthropic set to ****6789", _lines  # the last 4 characters at most
    cli.execute("set_provider openai")
    cli.execute("set_model gpt-4o-mini")
    cli.execute("set_base_url http://192.168.1.20:11434/v1/")
    cli.execute('set_wifi "my home" "pass word"')
    assert config.get("wifi_ssid") == "my home" and config.get("wifi_pass") == "pass word"
    assert config.get("base_url") == "http://192.168.1.20:11434/v1"
    assert config.get("provider") == "openai" and config.get("model") == "gpt-4o-mini"
    del _lines[:]
    cli.execute("config_show")
    shown = _text()
    assert "****6789" in shown and "sk-a" not in shown and "FAKE-012345" not in shown
    assert "%-16s ****" % "wifi_pass" in _lines and "pass" not in shown.replace("wifi_pass", "").replace("web_password", "")
    assert "my home" in shown
    names = [line.split()[0] for line in _lines]
    assert names == sorted(names) and "tg_token" in names  # the same order on both runtimes
    del _lines[:]
    cli.execute("status")
    assert "FAKE" not in _text() and "pass word" not in _text(), _text()  # /status shows no secret at all
    del _lines[:]
    cli.execute("config_reset model")
    cli.execute("config_show")
    assert "model            - (default: gpt-4.1-mini)" in _text()  # the provider's default is named


def test_wrong_arguments_print_usage_never_a_traceback():
    _capture()
    cli.execute("allow")
    cli.execute("allow 1 2")
    cli.execute("deny abc")
    cli.execute("frobnicate")
    cli.execute('ask "unclosed')
    cli.execute("set_tg_token nonsense")
    cli.execute("set_base_url ftp://x")
    cli.set_wifi()
    cli.set_wifi("a", "b", "c")
    cli.config_reset()
    cli.config_reset("nope")
    cli.tool_exec("get_current_time", "{not json")
    cli.safe_mode("maybe")
    t = _text()
    assert "usage: allow <chat_id>" in t and "unknown command 'frobnicate'" in t
    assert "a chat id is a whole number" in t and "does not look like a bot token" in t
    assert "usage: set_wifi" in t and "no setting 'nope'" in t and "JSON object" in t
    assert "Traceback" not in t
    assert config.get("allowed_chats") == "" and config.get("tg_token") == ""


def test_access_commands():
    _capture()
    cli.execute("allow 42")
    cli.allow(-100123)
    cli.execute("chats")
    assert "42  (owner)" in _text() and "-100123" in _text()
    cli.execute("deny 42")
    assert commands.allowed() == ["-100123"]
    del _lines[:]
    cli.pair()
    assert "pairing code: " in _text()
    code = _text().split("pairing code: ")[1][:6]
    assert commands.try_code("77", code) and commands.is_allowed("77")  # the code printed works


def test_config_reset():
    _capture()
    cli.set_model("x-model")
    cli.execute("config_reset model")
    assert config.get("model") == ""
    cli.set_model("x-model")
    cli.execute("config_reset all")
    assert config.get("model") == ""


def test_files_memory_sessions_skills_cron():
    _capture()
    cli.execute("memory_write # Memory\nThe owner likes tea.")
    assert memory.read_memory() == "# Memory\nThe owner likes tea."
    del _lines[:]
    cli.execute("memory_read")
    assert "likes tea" in _text()
    cli.execute("skill_list")
    cli.execute("session_list")
    assert "no skills" in _text() and "no conversations" in _text()
    cronjobs.add({"kind": "daily", "hhmm": "08:00", "text": "briefing", "chat_id": "42"})
    del _lines[:]
    cli.execute("cron_list")
    assert "daily at 08:00" in _text() and "briefing" in _text()
    cli.execute("skill_show nothing-here")
    assert "error: no such file" in _text()
    from mimi.storage import fs, skills

    fs.write(skills.path("weather"), "# Weather\n\nFetch and present the weather.\n")
    del _lines[:]
    cli.execute("skill_list")
    cli.execute("skill_show weather")
    assert "weather" in _text() and "Fetch and present the weather." in _text()


def test_tool_exec_runs_a_registered_tool():
    _capture()
    cli.execute("tool_exec get_current_time {}")
    assert "unix" in _text() or "not synced" in _text()
    del _lines[:]
    cli.execute("tool_exec no_such_tool")
    assert "unknown tool" in _text()


def test_split_quotes():
    assert cli.split('a "b c" d') == ["a", "b c", "d"]
    assert cli.split("'' x") == ["", "x"]
    assert cli.split("  ") == []
    support.raises(ValueError, cli.split, '"open')


def test_exit_and_help():
    _capture()
    assert cli.execute("exit") is False
    assert cli.execute("# a comment") is True
    cli.execute("help")
    for name in ("set_wifi", "ask", "tool_exec", "heartbeat_trigger", "restart"):
        assert name in _text()
    del _lines[:]
    cli.execute("help ask")
    assert _text().startswith("usage: ask <text...>")


def test_status_heap_wifi():
    _capture()
    cli.execute("status")
    cli.execute("heap_info")
    cli.execute("wifi_scan")
    cli.execute("wifi_status")
    t = _text()
    assert "LLM: " in t and "heap" in t and "mimi-sim-wifi" in t
    assert ("mimi %s on " % mimi.VERSION) in t  # the package's version, package.json's too


Echo = support.Echo


def test_ask_while_the_app_is_stopped_runs_the_agent_here():
    _capture()
    app.forget()
    app._agent_factory[0] = Echo
    try:
        cli.execute("ask what is 2+2?")
    finally:
        app.forget()
    assert _text() == "echo: what is 2+2?"


def test_heartbeat_trigger_without_tasks_makes_no_call():
    _capture()
    app.forget()
    cli.heartbeat_trigger()
    assert "nothing to do" in _text()
    app.forget()


def test_safe_mode_flag():
    _capture()
    from mimi import boot

    cli.execute("safe_mode on")
    assert boot.safe_flag()
    cli.execute("safe_mode off")
    assert not boot.safe_flag()


def test_control_characters_in_settings_are_refused():
    _capture()
    cli.set_base_url("http://192.168.1.20:11434/v1")
    cli.set_model("gpt-4o")
    keep = dict((n, config.get(n)) for n in ("base_url", "model", "tg_token", "wifi_ssid", "tz", "key_anthropic"))
    del _lines[:]
    cli.set_base_url("http://host/\r\nX-Evil:1")
    cli.set_model("x\x00y")
    cli.set_model("gpt\t4")
    cli.set_tg_token("123456:ABCDEFG\n")
    cli.set_api_key("sk-ant-FAKE\r\nX: y")
    cli.set_wifi("home\x00", "pw")
    cli.set_wifi("home", "p\nw")
    cli.set_tz("+01:00\x7f")
    lines = list(_lines)
    assert len(lines) == 8, lines
    for ln in lines:
        assert ln.startswith("error: ") and "control characters" in ln, ln
    assert "set_" not in lines[0] and lines[0].startswith("error: base_url:")
    for n in keep:
        assert config.get(n) == keep[n], n
    assert "A model name is one word" in commands.run("/model x\ty", "cli", config.CLI_CHAT_ID)
    assert config.get("model") == "gpt-4o"


def test_proxy_settings_are_checked_and_the_password_never_shown():
    _capture()
    cli.execute("set_proxy socks5://ann:Fake-pw-42@10.0.0.2:1080")
    assert config.get("proxy") == "socks5://ann:Fake-pw-42@10.0.0.2:1080"
    assert "socks5://ann:****@10.0.0.2:1080" in _text() and "Fake-pw" not in _text()
    del _lines[:]
    cli.execute("set_proxy 10.0.0.2:3128")  # no scheme: refused, the old one kept
    assert _text().startswith("error: proxy is not http://") and config.get("proxy").startswith("socks5://")
    del _lines[:]
    cli.execute("config_show")
    assert "socks5://ann:****@10.0.0.2:1080" in _text() and "Fake-pw" not in _text()
    assert "no_proxy         local" in _text()
    cli.execute("set_no_proxy local,ollama.home")
    assert config.get("no_proxy") == "local,ollama.home"
    cli.execute("set_proxy off")
    assert config.get("proxy") == ""


def test_set_feishu_stores_the_app_masked():
    _capture()
    cli.execute("set_feishu cli_FAKE0001 FAKEsecret0123456789")
    assert config.get("feishu_app_id") == "cli_FAKE0001" and config.get("feishu_app_secret") == "FAKEsecret0123456789"
    assert config.get("feishu_domain") == "https://open.feishu.cn"
    assert "****6789" in _text() and "FAKEs" not in _text()  # the last 4 characters at most
    cli.execute("set_feishu cli_FAKE0002 FAKEsecret https://open.larksuite.com/")
    assert config.get("feishu_domain") == "https://open.larksuite.com"
    del _lines[:]
    cli.execute("set_feishu cli_only")
    assert "usage: set_feishu <app_id> <secret> [domain]" in _text()
    del _lines[:]
    cli.execute("config_show")
    assert "FAKEsecret" not in _text() and "cli_FAKE0002" in _text()
