"""Client half of the providers' live tests (run under CPython and MicroPython by
``test_llm_live.py``) against the fake Anthropic (MIMI_T_ANTHROPIC) and OpenAI
(MIMI_T_OPENAI) servers, which the cases script through ``fakectl``."""
import os

from mimi import config, seam
from mimi.llm import common
from mimi.tools import registry
import fakectl
import support

KEY_A = "sk-ant-FAKE-0123456789"
KEY_O = "sk-FAKE-0123456789"
SYSTEM = "You are mimi.\n\"Quotes\", back\\slash, tabs\t, ü, 中文, 😀 " * 200  # about 12 KB
TOOL = registry.Tool("read_file", "Read a file under /data", {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, None, "file")
USER = [{"role": "user", "content": "hello", "ts": 1}]
_waits = []


def _a():
    url = os.getenv("MIMI_T_ANTHROPIC")
    fakectl.reset(url)
    return url, common.Provider("anthropic", "anthropic", url, KEY_A, "claude-test")


def _o():
    url = os.getenv("MIMI_T_OPENAI")
    fakectl.reset(url)
    return url, common.Provider("openai", "openai", url + "/v1", KEY_O, "gpt-test")


def _fast_retries():
    """Record the retry waits instead of sleeping them (and keep the attempts quick)."""
    del _waits[:]
    common._sleep_ms = lambda ms: _waits.append(ms)
    common.init(8192)


def _sys():
    buf = bytearray(16384)
    b = SYSTEM.encode()
    buf[:len(b)] = b
    return memoryview(buf)[:len(b)]


def test_anthropic_tool_round_trip_on_the_wire():
    support.fresh_flash()
    _fast_retries()
    url, p = _a()
    fakectl.script(url, fakectl.reply("tools", text="Looking.", calls=[["read_file", {"path": "/data/a"}],
                                                                        ["read_file", {"path": "/data/b"}]]),
                   fakectl.reply("text", text="Both files say hi.", usage=[120, 8]))
    r = p.chat(_sys(), USER, [TOOL], 256)
    assert r["stop"] == "tool_use" and r["text"] == "Looking."
    calls = r["tool_calls"]
    assert [c["input"] for c in calls] == [{"path": "/data/a"}, {"path": "/data/b"}]
    msgs = USER + [{"role": "assistant", "content": r["text"], "tool_calls": calls}]
    for c in calls:
        msgs.append({"role": "tool", "tool_call_id": c["id"], "name": c["name"], "content": "hi", "is_error": False})
    r2 = p.chat(_sys(), msgs, [TOOL], 256)  # the fake's strict checks accept the conversation
    assert r2 == {"text": "Both files say hi.", "tool_calls": [], "stop": "end", "usage": (120, 8)}
    reqs = fakectl.requests(url)
    assert len(reqs) == 2
    h = reqs[0]["headers"]
    assert h["x-api-key"] == KEY_A and h["anthropic-version"] == "2023-06-01"
    assert reqs[0]["path"] == "/v1/messages"
    assert reqs[0]["json"]["system"] == SYSTEM
    assert reqs[0]["json"]["max_tokens"] == 256
    assert reqs[1]["json"]["messages"][2]["content"][1]["tool_use_id"] == calls[1]["id"]


def test_openai_tool_round_trip_bad_arguments_and_reasoning():
    _fast_retries()
    url, p = _o()
    fakectl.script(url, fakectl.reply("tools", calls=[["read_file", {"path": "/data/a"}], ["read_file", "{bad json"]]),
                   fakectl.reply("text", text="", reasoning="thought it through: 42"),
                   fakectl.reply("text", text="The answer.", reasoning="secret", reasoning_in_tags=True))
    r = p.chat(_sys(), USER, [TOOL])
    assert r["stop"] == "tool_use"
    good, bad = r["tool_calls"]
    assert good["input"] == {"path": "/data/a"} and "error" not in good
    assert bad["input"] == {} and "not valid JSON" in bad["error"]
    msgs = USER + [{"role": "assistant", "content": "", "tool_calls": r["tool_calls"]},
                   {"role": "tool", "tool_call_id": good["id"], "name": "read_file", "content": "A"},
                   {"role": "tool", "tool_call_id": bad["id"], "name": "read_file", "content": "Error: " + bad["error"],
                    "is_error": True}]
    assert p.chat(_sys(), msgs, [TOOL])["text"] == "thought it through: 42"
    r = p.chat(_sys(), msgs, [TOOL])
    assert r["text"] == "The answer." and "secret" not in r["text"]
    reqs = fakectl.requests(url)
    assert reqs[0]["headers"]["authorization"] == "Bearer " + KEY_O
    assert reqs[0]["path"] == "/v1/chat/completions"
    sent = reqs[1]["json"]["messages"]
    assert sent[0] == {"role": "system", "content": SYSTEM}
    assert isinstance(sent[2]["tool_calls"][1]["function"]["arguments"], str)
    assert reqs[0]["json"]["tools"][0]["function"]["parameters"]["required"] == ["path"]


def test_stop_reasons_both_protocols():
    _fast_retries()
    for make in (_a, _o):
        url, p = make()
        for stop in ("max_tokens", "refusal", "pause_turn", "end"):
            fakectl.script(url, fakectl.reply("text", text="partial", stop=stop))
            got = p.chat("s", USER)["stop"]
            want = "end" if (stop == "pause_turn" and p.protocol == "openai") else stop
            assert got == want, (p.protocol, stop, got)


def test_retries_429_then_529_then_success_honouring_retry_after():
    _fast_retries()
    url, p = _a()
    fakectl.script(url, fakectl.reply("error", status=429, retry_after_ms=1234),
                   fakectl.reply("error", status=529), fakectl.reply("text", text="finally"))
    assert p.chat("s", USER)["text"] == "finally"
    assert len(fakectl.requests(url)) == 3
    assert _waits[0] == 1234
    assert 375 <= _waits[1] <= 1000  # backoff for the second retry: 1 s less up to 25 %


def test_retries_stop_after_three_attempts():
    _fast_retries()
    url, p = _o()
    fakectl.script(url, *[fakectl.reply("error", status=500)] * 3)
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert e.retryable and e.status == 500 and "server error (500)" in e.user_message
    assert len(fakectl.requests(url)) == 3 and len(_waits) == 2


def test_not_retried_401_403_404_400_and_insufficient_quota():
    _fast_retries()
    for make in (_a, _o):
        url, p = make()
        for status, kind, text in ((401, None, "API key was rejected (401)"), (403, None, "(403)"),
                                   (404, None, "not found (404)"), (400, None, "refused (400)"),
                                   (429, "insufficient_quota", "no credit left")):
            fakectl.reset(url)
            fakectl.script(url, fakectl.reply("error", status=status, err_kind=kind))
            e = support.raises(common.LLMError, p.chat, "s", USER)
            assert text in e.user_message, e.user_message
            assert not e.retryable
            assert len(fakectl.requests(url)) == 1
            assert "sk-" not in e.user_message and "Traceback" not in e.user_message
    assert not _waits


def test_long_retry_after_is_not_waited_for():
    _fast_retries()
    url, p = _a()
    fakectl.script(url, fakectl.reply("error", status=429, retry_after=120))
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert "120 s" in e.user_message and "try again later" in e.user_message
    assert not _waits and len(fakectl.requests(url)) == 1
    # absurd values: a day at most in the message; inf is no value at all (the backoff)
    fakectl.reset(url)
    fakectl.script(url, fakectl.reply("error", status=429, retry_after_ms="1e30"))
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert e.user_message.endswith("try again later (in 86400 s)"), e.user_message
    fakectl.reset(url)
    fakectl.script(url, fakectl.reply("error", status=529, retry_after="inf"),
                   fakectl.reply("error", status=529, retry_after_ms="-inf"), fakectl.reply("text", text="ok"))
    assert p.chat("s", USER)["text"] == "ok"
    assert len(_waits) == 2 and 375 <= _waits[0] <= 500 and 750 <= _waits[1] <= 1000


def test_connection_errors_are_retried_then_explained():
    _fast_retries()
    p = common.Provider("anthropic", "anthropic", os.getenv("MIMI_T_DEAD"), KEY_A, "m")
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert "could not reach 127.0.0.1" in e.user_message, e.user_message
    assert e.retryable and len(_waits) == 2


def test_slow_reply_times_out_and_malformed_json_is_retried():
    _fast_retries()
    url, p = _o()
    real = config.LLM_TIMEOUT_MS
    config.LLM_TIMEOUT_MS = 300
    try:
        fakectl.reset(url)
        fakectl.script(url, *[fakectl.reply("text", text="late", delay_s=1.5)] * 3)
        e = support.raises(common.LLMError, p.chat, "s", USER)
        # Connected and sent, then silence: said as such, and not tried three times over
        # (issue 13: the user hears within 2 minutes, not after 3 reads of 120 s).
        assert "127.0.0.1 did not answer within 1 s" == e.user_message, e.user_message
        assert len(fakectl.requests(url)) == 1 and not _waits
    finally:
        config.LLM_TIMEOUT_MS = real
    url, p = _a()
    fakectl.script(url, fakectl.reply("malformed"), fakectl.reply("text", text="clean"))
    assert p.chat("s", USER)["text"] == "clean"
    assert len(_waits) >= 1


def test_chunked_replies_and_one_over_the_buffer():
    _fast_retries()
    url, p = _a()
    fakectl.script(url, fakectl.reply("text", text="chunk " * 500, chunked=True))
    assert p.chat("s", USER)["text"] == ("chunk " * 500).strip()
    fakectl.script(url, fakectl.reply("text", text="x" * 9000))
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert "larger than the 8 KB" in e.user_message
    url, p = _o()
    # The fake (like Python servers) escapes non-ASCII: 6 bytes of JSON per "ü", 12 per emoji.
    fakectl.script(url, fakectl.reply("text", text="ü😀" * 400, chunked=True))
    assert p.chat("s", USER)["text"] == "ü😀" * 400


def test_wrong_key_reaches_the_user_as_401_without_the_key():
    _fast_retries()
    url = os.getenv("MIMI_T_ANTHROPIC_STRICTKEY")
    fakectl.reset(url)
    p = common.Provider("anthropic", "anthropic", url, "sk-ant-WRONG-key", "m")
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert e.user_message == "the API key was rejected (401)"


def test_response_buffer_is_reused_between_calls():
    _fast_retries()
    buf = common.init()
    url, p = _a()
    fakectl.script(url, fakectl.reply("text", text="one"), fakectl.reply("text", text="two"))
    p.chat("s", USER)
    assert common.init() is buf
    assert p.chat("s", USER)["text"] == "two"
    seam.collect()


def test_refusals_context_errors_and_errors_in_a_200_on_the_wire():
    _fast_retries()
    url, p = _o()
    fakectl.script(url, fakectl.reply("text", text="I can't help with that.", stop="refusal"),
                   fakectl.reply("body_error", code=400, message="Provider returned error"))
    r = p.chat("s", USER)
    assert r["stop"] == "refusal" and r["text"] == "I can't help with that."
    e = support.raises(common.LLMError, p.chat, "s", USER)
    assert e.user_message == "openai reported an error (400)" and not e.retryable  # its words: the console only
    for make in (_a, _o):
        url, p = make()
        fakectl.config(url, context_tokens=100)
        e = support.raises(common.LLMError, p.chat, "s", [{"role": "user", "content": "x" * 1000}])
        assert e.too_long and e.status == 400 and "(400)" in e.user_message, e.user_message
        fakectl.reset(url)
        fakectl.script(url, fakectl.reply("error", status=400, message="max_tokens: too big"))
        assert not support.raises(common.LLMError, p.chat, "s", USER).too_long


def test_the_body_is_the_same_from_the_buffer_and_streamed():
    # A body that fits the reply buffer is written there and sent at once; one that does
    # not is streamed (counted, then sent). The server must get the same request either way.
    got = []
    for size in (65536, 8192):  # the 12 KB system prompt fits the first only
        _fast_retries()
        common.init(size)
        url, p = _o()
        fakectl.script(url, fakectl.reply("text", text="ok %d" % size))
        msgs = USER + [{"role": "assistant", "content": "ü 😀 \"q\"", "ts": 2}, {"role": "user", "content": "again"}]
        assert p.chat(_sys(), msgs, [TOOL], 128)["text"] == "ok %d" % size
        reqs = fakectl.requests(url)
        assert len(reqs) == 1
        got.append(reqs[0]["json"])
    assert got[0] == got[1]
    assert got[0]["messages"][0] == {"role": "system", "content": SYSTEM}
    assert got[0]["tools"][0]["function"]["name"] == "read_file"
    common.init(8192)
