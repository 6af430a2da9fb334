"""Allow list, owner, pairing codes (both runtimes; the stranger reply limit is in
tests/channels/test_telegram_channel.py)."""
import support

from mimi import commands, config

RUNTIMES = ("cpython", "micropython")


def test_closed_by_default_and_allow_deny():
    support.fresh_flash()
    assert commands.allowed() == [] and not commands.is_allowed("5")
    assert "owner" in commands.allow(5)
    assert commands.is_allowed("5") and commands.owner() == "5"
    assert "already" in commands.allow("5")
    commands.allow("-100200")
    assert commands.allowed() == ["5", "-100200"]
    assert commands.owner() == "5"  # the first stays owner
    commands.allow("7")
    assert "owner is now 7" in commands.deny("5")  # the next private chat
    assert "owner is now nobody" in commands.deny("7")  # a group never owns
    assert commands.allowed() == ["-100200"] and commands.owner() == ""
    assert "owner" not in commands.allow("-100300")
    assert "owner" in commands.allow("8") and commands.owner() == "8"
    assert "was not allowed" in commands.deny("77")
    support.raises(ValueError, commands.allow, "12ab")
    support.raises(ValueError, commands.allow, "")
    for zero in ("0", "-0", "000"):  # no chat has id 0: it must not become the owner
        support.raises(ValueError, commands.allow, zero)
    assert "0" not in commands.allowed()
    assert not commands.is_allowed("junk")


def test_allow_list_survives_a_reboot():
    support.fresh_flash()
    commands.allow(123456789012)  # over 32 bits
    config._cache.clear()  # as after a reset: read back from the store
    assert commands.allowed() == ["123456789012"]


def test_pairing_code_works_once():
    support.fresh_flash()
    code = commands.new_code()
    assert len(code) == 6 and code.isdigit()
    for _ in range(config.TG_PAIR_TRIES):
        assert not commands.try_code("9", "hello")  # not a code: not a try either
    assert commands.try_code("9", " %s " % code)
    assert commands.is_allowed("9") and commands.owner() == "9"
    assert not commands.try_code("10", code)  # used up
    assert not commands.is_allowed("10")


def test_pairing_code_is_void_after_wrong_tries():
    support.fresh_flash()
    code = commands.new_code()
    wrong = "%06d" % ((int(code) + 1) % 1000000)
    for _ in range(config.TG_PAIR_TRIES):
        assert not commands.try_code("9", wrong)
    assert not commands.try_code("9", code)  # even the right code is refused now
    assert not commands.is_allowed("9")
    code = commands.new_code()  # a new one works
    assert commands.try_code("9", code) and commands.is_allowed("9")
