"""Chat commands and what the CLI shares with them (both runtimes)."""
import support

from mimi import commands, config

RUNTIMES = ("cpython", "micropython")


def test_parse_commands():
    assert commands.parse("/model@mimi_bot  gpt-4o ") == ("model", "gpt-4o")
    assert commands.parse("/STATUS") == ("status", "")
    assert commands.parse("hello /model") is None
    assert commands.parse("/") is None
    assert commands.parse("") is None


def test_provider_switch_validates_and_resets_the_model():
    support.fresh_flash()
    config.set("model", "claude-x")
    out = commands.provider("nonsense")
    assert "unknown provider" in out and "openai" in out
    assert config.get("provider") == "anthropic"
    out = commands.provider("OpenAI")
    assert config.get("provider") == "openai" and config.get("model") == ""
    assert "No API key" in out  # none set yet
    assert "already" in commands.provider("openai")
    out = commands.provider("ollama")
    assert "set_base_url" in out
    assert "anthropic" in commands.provider()  # the list of choices
    assert "base URL" in commands.provider("custom")
    out = commands.provider("custom http://192.168.1.30:8000/v1")  # Telegram: name and address at once
    assert config.get("provider") == "custom" and config.get("base_url") == "http://192.168.1.30:8000/v1", out
    config.set("api_key", "sk-ant-FAKE-shared")  # another provider's key is not this one's
    assert "No API key" in commands.provider("openrouter")


def test_model_set_and_show():
    support.fresh_flash()
    assert "default" in commands.model()
    assert commands.model("gpt-4o-mini") == "model set to gpt-4o-mini (provider anthropic)"
    assert config.get("model") == "gpt-4o-mini"
    assert "one word" in commands.model("two words")
    assert config.get("model") == "gpt-4o-mini"
    assert "gpt-4o-mini" in commands.model()


def test_status_has_every_line():
    support.fresh_flash()
    s = commands.status()
    for word in ("mimi ", "LLM: anthropic", "heap:", "flash: ", "KB free", "uptime:", "WiFi:", "Telegram: ", "clock:", "tokens today:"):
        assert word in s, word


def test_run_answers_ours_and_passes_the_rest():
    support.fresh_flash()
    commands.allow("5")  # the owner
    assert commands.run("/help", "telegram", "5").startswith("Commands:")
    assert "/new" in commands.run("/start", "telegram", "5")
    assert commands.run("/status@bot", "telegram", "5").startswith("mimi ")
    assert commands.run("/model gpt-4o", "telegram", "5").startswith("model set to gpt-4o")
    assert commands.run("/weather", "telegram", "5") is None
    assert commands.run("what is /new?", "telegram", "5") is None
    menu = commands.menu()  # the setMyCommands list, from texts.md
    assert [n for n, _ in menu] == ["start", "help", "new", "status", "model", "provider", "memory", "rules"]
    for name, desc in menu:
        assert 1 <= len(desc) <= 256 and name.islower()


def test_memory_and_new_never_raise():
    support.fresh_flash()
    assert isinstance(commands.run("/memory", "telegram", "5"), str)
    assert isinstance(commands.run("/new", "telegram", "5"), str)


def test_only_the_owner_or_the_console_changes_the_llm_settings():
    support.fresh_flash()
    commands.allow("-100500")  # a group first: groups never own
    commands.allow("5")
    commands.allow("6")
    assert commands.owner() == "5"
    config.set("base_url", "http://lan:11434/v1")
    for chat in ("-100500", "6"):  # a group member, another allowed chat
        for cmd in ("/model@mimi_bot gpt-nonexistent", "/provider ollama", "/provider anthropic"):
            assert "Only the owner" in commands.run(cmd, "telegram", chat), (cmd, chat)
        assert "model:" in commands.run("/model", "telegram", chat)  # looking is fine
        assert "provider:" in commands.run("/provider", "telegram", chat)
    assert config.get("model") == "" and config.get("provider") == "anthropic"
    assert config.get("base_url") == "http://lan:11434/v1"  # not wiped
    assert commands.run("/model gpt-4o", "telegram", "5").startswith("model set to gpt-4o")
    assert commands.run("/model claude-x", "cli", config.CLI_CHAT_ID).startswith("model set to claude-x")
    assert config.get("model") == "claude-x"


def test_an_empty_item_in_the_allow_list_and_a_url_with_control_characters():
    support.fresh_flash()
    config.set("allowed_chats", ",123")  # as a hand-made MIMI_ALLOWED_CHATS might leave it
    assert commands.owner() == "123"
    out = commands.provider("custom http://192.168.1.30:8000/v1\r\nX-Evil: 1")
    assert "control characters" in out and config.get("provider") == "anthropic"


def test_heap_shows_the_gc_heap_psram_and_internal_ram():
    support.fresh_flash()
    lines = commands.heap().split("\n")
    assert len(lines) == 3
    assert lines[0] == "heap: n/a" or (" KB used, " in lines[0] and " KB free, " in lines[0] and
                                       ("fixed size" in lines[0] or "can grow by " in lines[0])), lines
    assert lines[1].startswith("PSRAM: ") and lines[1].endswith(" KB free of 2048 KB"), lines
    assert lines[2].startswith("internal RAM: ") and ", largest block " in lines[2], lines
    s = commands.status()
    assert "PSRAM: " in s and "internal RAM: " in s
    support.setenv("MIMI_SIM_PSRAM", "0")
    try:
        assert commands.heap().split("\n")[1] == "PSRAM: none"
    finally:
        support.setenv("MIMI_SIM_PSRAM")
