"""Settings: defaults, persistence, masking (both runtimes)."""
from mimi import config
import support

RUNTIMES = ("cpython", "micropython")


def test_defaults_then_persisted_values():
    support.fresh_flash()
    assert config.get("provider") == "anthropic"
    assert config.get("tg_api_base") == "https://api.telegram.org"
    config.set("provider", "openai")
    config._cache.clear()  # as after a reboot
    assert config.get("provider") == "openai"
    config.reset("provider")
    assert config.get("provider") == "anthropic"


def test_unknown_setting_is_a_clear_error():
    e = support.raises(KeyError, config.get, "nope")
    assert "unknown setting" in str(e)


def test_secrets_are_masked():
    support.fresh_flash()
    config.set("api_key", "sk-ant-FAKE-0123456789")
    assert config.masked("api_key") == "****6789"  # the last 4 at most, never the start
    config.set("tg_token", "123456789:AAH-FAKE-token-x")
    assert config.masked("tg_token") == "****en-x"
    config.set("tg_token", "short-token")  # too short to show any of it
    assert config.masked("tg_token") == "****"
    config.set("wifi_pass", "a long fake password of the home WiFi")  # a password: nothing of it
    assert config.masked("wifi_pass") == "****"
    assert config.masked("provider") == "anthropic"


def test_store_keys_fit_nvs():
    for name in config.SETTINGS:
        assert len(config.SETTINGS[name][0]) <= 15, name
