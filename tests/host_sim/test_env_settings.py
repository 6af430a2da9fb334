"""Settings from the environment: the launcher writes them over the stored ones at boot."""
import json
import os
import signal
import subprocess
import sys
import time

import esp32
import pytest

from host_sim import launcher
from mimi import config, seam

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FULL = {
    "MIMI_TG_TOKEN": "123456:FAKE-token",
    "MIMI_TG_API_BASE": "http://127.0.0.1:8081/",
    "MIMI_PROVIDER": "OpenAI",
    "MIMI_API_KEY": "sk-FAKE",
    "MIMI_MODEL": "gpt-4o-mini",
    "MIMI_LLM_BASE_URL": "http://127.0.0.1:9000/v1",
    "MIMI_ALLOWED_CHATS": " 111, -100222 ,",
    "MIMI_TZ": "+8",
}


def test_every_variable_maps_to_its_setting_normalised():
    got = launcher.settings_from_env(FULL)
    assert got == {
        "tg_token": "123456:FAKE-token",
        "tg_api_base": "http://127.0.0.1:8081",
        "provider": "openai",
        "api_key": "sk-FAKE",
        "model": "gpt-4o-mini",
        "base_url": "http://127.0.0.1:9000/v1",
        "allowed_chats": "111,-100222",
        "tz": "+08:00",
    }
    # Every name is a setting the firmware knows.
    assert set(got) <= set(config.SETTINGS)


def test_unset_and_empty_variables_are_left_out():
    assert launcher.settings_from_env({}) == {}
    assert launcher.settings_from_env({"MIMI_MODEL": "  ", "HOME": "/root"}) == {}


@pytest.mark.parametrize("tz,want", [("+08:00", "+08:00"), ("-5", "-05:00"), ("+0530", "+05:30"),
                                     ("UTC", "+00:00"), ("-09:30", "-09:30")])
def test_time_zone_forms(tz, want):
    assert launcher.settings_from_env({"MIMI_TZ": tz}) == {"tz": want}


@pytest.mark.parametrize("var,value", [("MIMI_TZ", "Asia/Shanghai"), ("MIMI_TZ", "+15:00"), ("MIMI_TZ", "+08:75"),
                                       ("MIMI_ALLOWED_CHATS", "123,@bob"), ("MIMI_PROVIDER", "gemini"),
                                       ("MIMI_LLM_BASE_URL", "localhost:11434"), ("MIMI_API_KEY", "sk bad"),
                                       ("MIMI_TG_API_BASE", "ftp://x.example"), ("MIMI_TG_TOKEN", "garbage"),
                                       ("MIMI_TG_TOKEN", "bot123456789:AAFAKE-fake_FAKEfakeFAKEfakeFAKEfake1"),
                                       ("MIMI_TG_TOKEN", "123456:short"), ("MIMI_TG_TOKEN", "123456:FAKE token!")])
def test_a_bad_value_names_its_variable(var, value):
    with pytest.raises(ValueError) as e:
        launcher.settings_from_env({var: value})
    assert var in str(e.value)


def test_token_alone_resets_the_api_base_and_provider_alone_clears_the_base_url():
    got = launcher.settings_from_env({"MIMI_TG_TOKEN": "1:FAKE-token", "MIMI_PROVIDER": "anthropic"})
    assert got["tg_api_base"] == "https://api.telegram.org"
    assert got["base_url"] is None
    # A base URL given alone leaves the provider as stored.
    assert launcher.settings_from_env({"MIMI_LLM_BASE_URL": "http://127.0.0.1:1/v1"}) == {"base_url": "http://127.0.0.1:1/v1"}


def test_a_real_looking_token_passes_and_custom_needs_its_base_url():
    token = "123456789:AAFAKE-fake_FAKEfakeFAKEfakeFAKEfake1"  # made up, shaped as BotFather's
    assert launcher.settings_from_env({"MIMI_TG_TOKEN": token})["tg_token"] == token
    with pytest.raises(ValueError) as e:
        launcher.settings_from_env({"MIMI_PROVIDER": "custom"})
    assert "MIMI_LLM_BASE_URL" in str(e.value)
    got = launcher.settings_from_env({"MIMI_PROVIDER": "custom", "MIMI_LLM_BASE_URL": "http://127.0.0.1:8000/v1"})
    assert got == {"provider": "custom", "base_url": "http://127.0.0.1:8000/v1"}


def test_the_launch_stops_on_a_bad_token_and_writes_nothing(tmp_path):
    env = dict(os.environ, MIMI_TG_TOKEN="garbage", MIMI_TZ="+08:00")
    p = subprocess.run([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "MIMI_TG_TOKEN: expected a bot token" in p.stderr, p.stderr
    assert not (tmp_path / "nvs.json").exists()


def _fresh():
    root = str(__import__("support").fresh_flash())
    esp32._pending.clear()
    return root


def test_stored_settings_are_what_the_firmware_reads_and_override_old_ones():
    root = _fresh()
    config.set("model", "old-model")
    config.set("base_url", "http://127.0.0.1:5/v1")
    config.set("wifi_ssid", "home")
    stored = launcher.apply_env_settings(root, {"MIMI_MODEL": "claude-test", "MIMI_PROVIDER": "anthropic",
                                                "MIMI_API_KEY": "sk-ant-FAKE"})
    assert stored == ["api_key", "base_url", "key_anthropic", "model", "provider"]
    config._cache.clear()
    assert config.get("model") == "claude-test"
    assert config.get("provider") == "anthropic"
    assert config.get("api_key") == "sk-ant-FAKE"
    assert config.get("base_url") == ""  # cleared: back to the provider's own
    assert config.get("wifi_ssid") == "home"  # untouched
    # The device key names (at most 15 characters), as config.SETTINGS says.
    data = json.load(open(os.path.join(root, "nvs.json")))
    assert "allowed" not in data["mimi"]
    launcher.apply_env_settings(root, {"MIMI_ALLOWED_CHATS": "42"})
    data = json.load(open(os.path.join(root, "nvs.json")))
    assert bytes.fromhex(data["mimi"]["allowed"][1]) == b"42"
    assert seam.store_get("allowed") == "42"


def _key_sent(provider):
    """The key the firmware's provider would send, read from its request headers."""
    from mimi import llm

    config._cache.clear()
    config.set("provider", provider)
    llm.reset()
    h = llm.current().headers
    return h.get("x-api-key") or h.get("authorization", "").replace("Bearer ", "")


def test_the_key_goes_to_the_provider_in_effect_over_a_key_stored_for_it():
    from mimi import llm

    root = _fresh()
    llm.set_key("sk-old-openai", "openai")  # what cli.set_api_key stores
    llm.set_key("sk-old-anthropic", "anthropic")
    config.set("provider", "openai")
    launcher.apply_env_settings(root, {"MIMI_API_KEY": "sk-FAKE-new"})  # provider as stored
    assert _key_sent("openai") == "sk-FAKE-new"
    assert _key_sent("anthropic") == "sk-old-anthropic"
    launcher.apply_env_settings(root, {"MIMI_PROVIDER": "anthropic", "MIMI_API_KEY": "sk-ant-FAKE-2"})
    config._cache.clear()
    assert config.get("provider") == "anthropic" and _key_sent("anthropic") == "sk-ant-FAKE-2"


def test_specs_and_presets_come_from_the_firmware():
    specs = launcher.setting_specs()
    assert specs["allowed_chats"] == config.SETTINGS["allowed_chats"]
    assert set(specs) == set(config.SETTINGS)  # including the keys subsystems add later
    from mimi import llm

    assert set(launcher.providers()) == set(llm.PRESETS)


def _boot_until_started(env, flash):
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "run", "--flash", str(flash)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    deadline = time.time() + 30
    try:
        while time.time() < deadline and p.poll() is None:
            line = p.stdout.readline()
            out += line
            if "[app] started" in line:
                p.send_signal(signal.SIGINT)
                break
        rest, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, out + rest


def test_run_applies_the_environment_at_boot_and_never_prints_a_secret(tmp_path):
    env = dict(os.environ, MIMI_TG_TOKEN="123456:FAKE-secret-token", MIMI_TZ="+08:00")
    rc, out = _boot_until_started(env, tmp_path)
    assert rc == 0, out
    # names the variables set (not what follows from them, tg_api_base), never a value
    assert "settings from the environment: MIMI_TG_TOKEN, MIMI_TZ\n" in out and "FAKE-secret" not in out
    data = json.load(open(tmp_path / "nvs.json"))["mimi"]
    assert bytes.fromhex(data["tg_token"][1]) == b"123456:FAKE-secret-token"
    assert bytes.fromhex(data["tz"][1]) == b"+08:00"


def test_run_refuses_a_bad_value_and_writes_nothing(tmp_path):
    env = dict(os.environ, MIMI_TZ="Europe/Paris", MIMI_MODEL="m")
    p = subprocess.run([sys.executable, "-m", "host_sim", "run", "--flash", str(tmp_path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert "MIMI_TZ" in p.stderr
    assert not (tmp_path / "nvs.json").exists()


@pytest.mark.parametrize("content", ["[1,2]", "{\"mimi\": 3}", "{not json", "\xff\xfe"])
def test_a_damaged_store_is_set_aside_named_and_the_board_starts(content, tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    (flash / "nvs.json").write_bytes(content.encode("latin-1"))
    env = dict(os.environ, MIMI_TZ="+08:00")
    p = subprocess.Popen([sys.executable, "-m", "host_sim", "run", "--flash", str(flash)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    try:
        deadline = time.time() + 30
        while time.time() < deadline and "[app] started" not in out:
            line = p.stdout.readline()
            if not line:
                break
            out += line
        assert "[app] started" in out, out
        p.send_signal(signal.SIGINT)
        out += p.communicate(timeout=20)[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "Traceback" not in out, out
    aside = [f for f in os.listdir(flash) if f.startswith("nvs.json.damaged-")]
    assert len(aside) == 1 and (flash / aside[0]).read_bytes() == content.encode("latin-1")
    assert "settings store %s was damaged" % (flash / "nvs.json") in out and aside[0] in out
    # The board went on with fresh settings, and the environment's were stored.
    assert json.load(open(flash / "nvs.json"))["mimi"]["tz"][0] == "blob"


def test_store_settings_refuses_to_write_over_a_damaged_store(tmp_path):
    (tmp_path / "nvs.json").write_text("[1,2]")
    with pytest.raises(ValueError):
        launcher.store_settings(str(tmp_path), {"tz": "+08:00"})
    assert (tmp_path / "nvs.json").read_text() == "[1,2]"


def test_proxy_variables():
    got = launcher.settings_from_env({"MIMI_PROXY": " socks5://ann:Fake-pw@10.0.0.2:1080 ", "MIMI_NO_PROXY": "local,nas.lan"})
    assert got == {"proxy": "socks5://ann:Fake-pw@10.0.0.2:1080", "no_proxy": "local,nas.lan"}
    assert launcher.settings_from_env({"MIMI_PROXY": "off"}) == {"proxy": ""}
    assert launcher.settings_from_env({"MIMI_PROXY": "http://[::1]:3128"}) == {"proxy": "http://[::1]:3128"}
    for bad in ("10.0.0.2:3128", "socks4://h:1080", "http://h", "http://u:Fake-pw@h:99999"):
        with pytest.raises(ValueError) as e:
            launcher.settings_from_env({"MIMI_PROXY": bad})
        assert "MIMI_PROXY" in str(e.value) and "Fake-pw" not in str(e.value)


def test_the_feishu_variables_and_feishu_chat_ids():
    got = launcher.settings_from_env({"MIMI_FEISHU_APP_ID": "cli_FAKE0001", "MIMI_FEISHU_APP_SECRET": "FAKEsecret",
                                      "MIMI_FEISHU_DOMAIN": "https://open.larksuite.com/",
                                      "MIMI_ALLOWED_CHATS": "fs_ou_ab12, 111,fs_oc_cd34"})
    assert got == {"feishu_app_id": "cli_FAKE0001", "feishu_app_secret": "FAKEsecret",
                   "feishu_domain": "https://open.larksuite.com", "allowed_chats": "fs_ou_ab12,111,fs_oc_cd34"}
    assert config.is_secret("feishu_app_secret") and not config.is_secret("feishu_app_id")
    for bad in ({"MIMI_FEISHU_DOMAIN": "open.feishu.cn"}, {"MIMI_ALLOWED_CHATS": "fs_xx_1"},
                {"MIMI_FEISHU_APP_ID": "cli 1"}):
        with pytest.raises(ValueError) as e:
            launcher.settings_from_env(bad)
        assert next(iter(bad)) in str(e.value)


def test_trust_settings_are_checked_as_choices():
    # flash.sh config and MIMI_* take the owner's choices of docs/trust.md, and nothing else
    assert launcher.check_setting("share_memory", " People ") == "people"
    assert launcher.check_setting("cross_chat", "owner") == "owner"
    for name, bad in (("share_memory", "everyone"), ("cross_chat", "strangers"), ("cross_chat", "")):
        with pytest.raises(ValueError):
            launcher.check_setting(name, bad)


def test_the_web_variables(tmp_path):
    got = launcher.settings_from_env({"MIMI_WEB_PASSWORD": "fake-web-pw", "MIMI_GATEWAY_PORT": " 18790"})
    assert got == {"web_password": "fake-web-pw", "gateway_port": "18790", "web_port": "8080"}  # not the board's 80
    got = launcher.settings_from_env({"MIMI_WEB_PASSWORD": "fake-web-pw", "MIMI_WEB_PORT": "9000"})
    assert got["web_port"] == "9000"
    assert config.is_secret("web_password") and not config.is_secret("web_port")
    for bad in ({"MIMI_WEB_PORT": "80x"}, {"MIMI_GATEWAY_PORT": "70000"}, {"MIMI_WEB_PASSWORD": "short"},
                {"MIMI_WEB_PASSWORD": "has a space in it"}):
        with pytest.raises(ValueError) as e:
            launcher.settings_from_env(bad)
        assert next(iter(bad)) in str(e.value)
    # the simulator makes no password at first start: its store says one was made
    launcher.apply_env_settings(str(tmp_path), {})
    store = json.load(open(tmp_path / launcher.NVS_FILE))[launcher.NVS_NAMESPACE]
    assert bytes.fromhex(store["web_made"][1]).decode() == "1" and "web_password" not in store
