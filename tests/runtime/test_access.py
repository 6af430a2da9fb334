"""Allow list, owner, pairing codes (both runtimes; the stranger reply limit is in
tests/channels/test_telegram_channel.py)."""
import support

from mimi import config
from mimi.channels import access

RUNTIMES = ("cpython", "micropython")


def test_closed_by_default_and_allow_deny():
    support.fresh_flash()
    assert access.allowed() == [] and not access.is_allowed("5")
    assert "owner" in access.allow(5)
    assert access.is_allowed("5") and access.owner() == "5"
    assert "already" in access.allow("5")
    access.allow("-100200")
    assert access.allowed() == ["5", "-100200"]
    assert access.owner() == "5"  # the first stays owner
    assert "owner is now -100200" in access.deny("5")
    assert access.allowed() == ["-100200"] and access.owner() == "-100200"
    assert "was not allowed" in access.deny("77")
    support.raises(ValueError, access.allow, "12ab")
    support.raises(ValueError, access.allow, "")
    assert not access.is_allowed("junk")


def test_allow_list_survives_a_reboot():
    support.fresh_flash()
    access.allow(123456789012)  # over 32 bits
    config._cache.clear()  # as after a reset: read back from the store
    assert access.allowed() == ["123456789012"]


def test_pairing_code_works_once():
    support.fresh_flash()
    code = access.new_code()
    assert len(code) == 6 and code.isdigit()
    for _ in range(config.TG_PAIR_TRIES):
        assert not access.try_code("9", "hello")  # not a code: not a try either
    assert access.try_code("9", " %s " % code)
    assert access.is_allowed("9") and access.owner() == "9"
    assert not access.try_code("10", code)  # used up
    assert not access.is_allowed("10")


def test_pairing_code_is_void_after_wrong_tries():
    support.fresh_flash()
    code = access.new_code()
    wrong = "%06d" % ((int(code) + 1) % 1000000)
    for _ in range(config.TG_PAIR_TRIES):
        assert not access.try_code("9", wrong)
    assert not access.try_code("9", code)  # even the right code is refused now
    assert not access.is_allowed("9")
    code = access.new_code()  # a new one works
    assert access.try_code("9", code) and access.is_allowed("9")
