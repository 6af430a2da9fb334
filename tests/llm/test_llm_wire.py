"""Providers at the edge: internal messages -> each wire format, replies -> internal form,
think-tag stripping, UTF-16 repair, retry timing, error texts, run-time switching."""
import json

from mimi import config, log
from mimi.llm import common, wire
from mimi.tools import registry
import mimi.llm as llm
import support

RUNTIMES = ("cpython", "micropython")

HISTORY = [
    {"role": "user", "content": "read two files", "ts": 1},
    {"role": "assistant", "content": "Sure.", "ts": 2, "tool_calls": [
        {"id": "t1", "name": "read_file", "input": {"path": "/data/a"}},
        {"id": "t2", "name": "read_file", "input": {}, "error": "arguments were not valid JSON: x"}]},
    {"role": "tool", "tool_call_id": "t1", "name": "read_file", "content": "AAA", "is_error": False, "ts": 3},
    {"role": "tool", "tool_call_id": "t2", "name": "read_file", "content": "Error: bad args", "is_error": True,
     "ts": 3},
    {"role": "assistant", "content": "", "ts": 4},  # an empty turn: dropped
    {"role": "assistant", "content": "A is AAA", "ts": 5},
    {"role": "user", "content": "thanks \"quoted\" ü 😀", "ts": 6},
]
SYSTEM = "rules\n\t\"quotes\" \\ back ü 中文 😀\x01" * 40
TOOL = registry.Tool("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                                  "required": ["path"]}, lambda a, c: "x", "file")


def _body(p, *args):
    """The request body provider ``p`` writes for ``args`` (system, messages, tools, max_tokens)."""
    parts = []
    wire.body(parts.append, p, *args)
    data = b"".join(p.encode() if isinstance(p, str) else bytes(p) for p in parts)
    return json.loads(data)


def test_anthropic_body():
    p = common.Provider("anthropic", "anthropic", "https://api.anthropic.com/", "sk-ant-FAKE", "claude-x")
    assert p.url == "https://api.anthropic.com/v1/messages"
    h = p.headers
    assert h["x-api-key"] == "sk-ant-FAKE" and h["anthropic-version"] == "2023-06-01"
    sysbuf = bytearray(SYSTEM.encode())
    b = _body(p, memoryview(sysbuf), HISTORY, [TOOL], 500)
    assert b["model"] == "claude-x" and b["max_tokens"] == 500
    assert b["system"] == SYSTEM
    assert b["tools"] == [{"name": "read_file", "description": "Read a file", "input_schema": TOOL.schema}]
    m = b["messages"]
    assert [x["role"] for x in m] == ["user", "assistant", "user", "assistant", "user"]
    assert m[0]["content"] == "read two files"
    assert m[1]["content"][0] == {"type": "text", "text": "Sure."}
    assert m[1]["content"][1] == {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "/data/a"}}
    assert m[1]["content"][2]["input"] == {}
    assert m[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "AAA"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "Error: bad args", "is_error": True}]
    assert m[3]["content"] == [{"type": "text", "text": "A is AAA"}]
    assert m[4]["content"] == "thanks \"quoted\" ü 😀"
    assert "ts" not in json.dumps(m)


def test_anthropic_user_text_after_results_joins_that_message():
    msgs = HISTORY[:4] + [{"role": "user", "content": "and?"}]
    b = _body(common.Provider("anthropic", "a", "http://h", "k", "m"), None, msgs, None, 10)
    m = b["messages"]
    assert [x["role"] for x in m] == ["user", "assistant", "user"]
    assert m[2]["content"][-1] == {"type": "text", "text": "and?"}
    assert "system" not in b and "tools" not in b


def test_openai_body():
    p = common.Provider("openai", "openai", "https://api.openai.com/v1/", "sk-FAKE", "gpt-x")
    assert p.url == "https://api.openai.com/v1/chat/completions"
    assert p.headers["authorization"] == "Bearer sk-FAKE"
    assert "authorization" not in common.Provider("openai", "ollama", "http://h/v1", "", "m", False).headers
    b = _body(p, memoryview(SYSTEM.encode()), HISTORY, [TOOL], 300)
    assert b["max_completion_tokens"] == 300 and "max_tokens" not in b
    other = _body(common.Provider("openai", "ollama", "http://h/v1", "", "m", False), None, HISTORY[:1], None, 77)
    assert other["max_tokens"] == 77 and other["messages"] == [{"role": "user", "content": "read two files"}]
    assert b["tools"] == [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                                            "parameters": TOOL.schema}}]
    m = b["messages"]
    assert [x["role"] for x in m] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert m[0]["content"] == SYSTEM
    calls = m[2]["tool_calls"]
    assert calls[0] == {"id": "t1", "type": "function", "function": {"name": "read_file",
                                                                      "arguments": '{"path": "/data/a"}'}
                        } or json.loads(calls[0]["function"]["arguments"]) == {"path": "/data/a"}
    assert isinstance(calls[1]["function"]["arguments"], str)
    assert m[3] == {"role": "tool", "tool_call_id": "t1", "content": "AAA"}
    assert m[5] == {"role": "assistant", "content": "A is AAA"}


def _pa(d):
    return wire.parse(d, "anthropic", "anthropic")


def _po(d):
    return wire.parse(d, "openai", "openai")


def test_anthropic_parse():
    r = _pa({"content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hi "},
                                     {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
                         "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4,
                                                              "cache_read_input_tokens": 5}})
    assert r == {"text": "Hi", "tool_calls": [{"id": "toolu_1", "name": "f", "input": {"a": 1}}],
                 "stop": "tool_use", "usage": (15, 4)}
    for reason, ours in (("end_turn", "end"), ("stop_sequence", "end"), ("max_tokens", "max_tokens"),
                         ("model_context_window_exceeded", "max_tokens"), ("refusal", "refusal"),
                         ("pause_turn", "pause_turn"), ("something_new", "end")):
        assert _pa({"content": [], "stop_reason": reason})["stop"] == ours
    support.raises(common.LLMError, _pa, {"type": "error"})


def _oai(msg, finish="stop", usage=None):
    return {"choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage}


def test_openai_parse_tool_calls_reasoning_and_think():
    r = _po(_oai({"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": [1, 2]}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{oops"}},
        {"type": "function", "function": {"name": "h", "arguments": ""}}]}, "tool_calls",
        {"prompt_tokens": 9, "completion_tokens": 3}))
    assert r["stop"] == "tool_use" and r["usage"] == (9, 3) and r["text"] == ""
    c = r["tool_calls"]
    assert c[0] == {"id": "c1", "name": "f", "input": {"x": [1, 2]}}
    assert c[1]["input"] == {} and c[1]["error"].startswith("arguments were not valid JSON")
    assert c[2] == {"id": "call_2", "name": "h", "input": {}}
    r = _po(_oai({"content": "", "reasoning_content": "the answer is 4"}))
    assert r["text"] == "the answer is 4"
    r = _po(_oai({"content": "<think>plan\nsecret</think>\n\nHello!", "reasoning_content": "x"}))
    assert r["text"] == "Hello!"
    r = _po(_oai({"content": "ok", "tool_calls": [{"id": "a", "function": {"name": "f",
                                                                                      "arguments": "{}"}}]}))
    assert r["stop"] == "tool_use"  # servers that say "stop" with tool calls
    for reason, ours in (("length", "max_tokens"), ("content_filter", "refusal"), ("stop", "end")):
        assert _po(_oai({"content": "x"}, reason))["stop"] == ours
    assert _po(_oai({"content": "[1]"}))["usage"] == (0, 0)
    support.raises(common.LLMError, _po, {"error": "x"})


def test_malformed_text_fields_are_a_clear_error_and_content_parts_are_joined():
    for bad in ({"content": [{"type": "text", "text": 5}], "stop_reason": "end_turn"},
                {"content": [{"type": "text", "text": ["a"]}]}, {"content": ["text"]}, {"content": "hello"}):
        e = support.raises(common.LLMError, _pa, bad)
        assert e.user_message == "anthropic sent a reply without content" and e.retryable, bad
    for bad in ({"content": 5}, {"content": [{"type": "text", "text": 5}]}, {"content": ["a"]},
                {"content": "", "reasoning": {"effort": "low"}}, {"content": {"a": 1}}):
        e = support.raises(common.LLMError, _po, _oai(bad))
        assert e.user_message == "openai sent a reply without content", bad
    # content parts, as some compatible servers send them: the text parts joined
    r = _po(_oai({"content": [{"type": "text", "text": "Hello "}, {"type": "image_url", "image_url": {}},
                              {"type": "text", "text": "<think>x</think>world"}]}))
    assert r["text"] == "Hello world" and r["stop"] == "end"
    assert _pa({"content": [{"type": "text", "text": "ok"}], "usage": [1, 2]})["usage"] == (0, 0)
    assert _pa({"content": [{"type": "tool_use", "id": "t", "name": 7, "input": {}}]})["tool_calls"][0]["name"] == "7"


def test_strip_think():
    assert wire.strip_think("a<think>x</think>b<think>y</think>c") == "abc"
    assert wire.strip_think("<think>never closed") == ""
    assert wire.strip_think("reasoning without opening</think>answer") == "answer"
    assert wire.strip_think("  plain  ") == "plain"
    assert wire.strip_think("") == ""


def test_repair_utf16_pairs_left_by_micropython_json():
    s = json.loads('"a\\ud83d\\ude00b\\u00e9"')
    assert wire.repair_utf16(s) == "a😀bé"
    assert wire.repair_utf16("plain é 中") == "plain é 中"
    lone = json.loads('"x\\ud83dy"')
    fixed = wire.repair_utf16(lone)
    assert fixed.encode() in (b"x\xef\xbf\xbdy", b"x?y")


def _parse_raw(raw, protocol):
    """Parse a raw reply as ``Provider.chat`` does (escape check on the bytes, then ``parse``)."""
    return wire.parse(json.loads(raw), protocol, protocol, common._utf16_escapes(bytearray(raw), len(raw)))


def test_emoji_in_tool_arguments_is_one_character():
    # Servers escape an emoji as a surrogate pair; MicroPython's json.loads splits it into
    # two lone halves, which Telegram and the APIs refuse (invalid UTF-8). Every string
    # of the arguments, at any depth, comes out whole.
    want = {"text": "hi \U0001F600", "lines": ["\U0001F34E", {"x": "caf\u00e9 \U0001F600"}], "n": 3}
    r = _parse_raw(b'{"content":[{"type":"tool_use","id":"t","name":"send_message","input":{"text":"hi \\ud83d\\ude00",'
                   b'"lines":["\\ud83c\\udf4e",{"x":"caf\\u00e9 \\ud83d\\ude00"}],"n":3}}],'
                   b'"stop_reason":"tool_use"}', "anthropic")
    assert r["tool_calls"][0]["input"] == want
    assert r["tool_calls"][0]["input"]["text"].encode() == b"hi \xf0\x9f\x98\x80"
    # OpenAI: the arguments are a JSON string inside the JSON, escaped twice (or once)
    for args in (b'"{\\"text\\": \\"hi \\\\ud83d\\\\ude00\\"}"', b'"{\\"text\\": \\"hi \\ud83d\\ude00\\"}"'):
        r = _parse_raw(b'{"choices":[{"message":{"content":"sent \\ud83d\\ude00","tool_calls":[{"id":"c",'
                       b'"function":{"name":"send_message","arguments":' + args + b'}}]}}]}', "openai")
        assert r["tool_calls"][0]["input"] == {"text": "hi \U0001F600"}, args
        assert r["text"] == "sent \U0001F600"


def _args(raw):
    c = _po(_oai({"content": None, "tool_calls": [{"id": "c", "function": {"name": "f",
                                                                                  "arguments": raw}}]}))
    c = c["tool_calls"][0]
    return c["input"], c.get("error")


def test_tool_call_arguments():
    assert _args('{"a": 1}') == ({"a": 1}, None)
    assert _args("") == ({}, None)
    assert _args(None) == ({}, None)
    assert _args({"b": 2}) == ({"b": 2}, None)
    v, err = _args("[1, 2]")
    assert v == {} and "object" in err
    v, err = _args('{"a": ')
    assert v == {} and "not valid JSON" in err


def test_backoff_follows_the_sdk_policy():
    for attempt, hi in ((0, 500), (1, 1000), (2, 2000), (5, 8000), (9, 8000)):
        for _ in range(20):
            ms = common._wait_ms(attempt)
            assert hi * 3 // 4 - 1 <= ms <= hi, (attempt, ms)
    assert common._wait_ms(0, {"retry-after": "2"}) == 2000
    assert common._wait_ms(0, {"retry-after-ms": "150", "retry-after": "9"}) == 150
    assert 374 <= common._wait_ms(0, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) <= 500  # a date: backoff
    assert 374 <= common._wait_ms(0, {}) <= 500
    # odd values: never an OverflowError, never a wait outside 0 .. a day; inf and nan count as absent
    for h, want in (({"retry-after": "inf"}, None), ({"retry-after": "-inf"}, None), ({"retry-after": "1e400"}, None),
                    ({"retry-after": "nan"}, None), ({"retry-after-ms": "inf", "retry-after": "3"}, 3000),
                    ({"retry-after-ms": "1e30"}, 86400000), ({"retry-after": "-5"}, 0), ({"retry-after-ms": "-1000"}, 0),
                    ({"retry-after": "9999"}, 9999000), ({"retry-after": "  3  "}, 3000), ({"retry-after": ""}, None)):
        ms = common._wait_ms(0, h)
        assert ms == want if want is not None else 374 <= ms <= 500, (h, ms)


class _R:
    def __init__(self, status, body, headers=None):
        self.status = status
        self.body = memoryview(body)
        self.headers = headers or {}

    def json(self):
        return json.loads(bytes(self.body))


def test_error_texts_and_retry_classes():
    cases = [
        (401, b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', False,
         "API key was rejected (401)"),
        (403, b'{"error":{"type":"permission_error"}}', False, "(403)"),
        (404, b'{"error":{"message":"model: claude-x"}}', False, "not found (404)"),
        (400, b'{"error":{"type":"invalid_request_error","message":"max_tokens: too big"}}', False,
         "refused (400): the reply length is not accepted by that model"),  # a known reason, not the words
        (429, b'{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}', False, "no credit"),
        (429, b'{"error":{"type":"rate_limit_error"}}', True, "rate limited"),
        (529, b'{"error":{"type":"overloaded_error"}}', True, "overloaded (529)"),
        (500, b"<html>oops</html>", True, "server error (500)"),
        (503, b"", True, "server error (503)"),
        (408, b"", True, "(408)"),
        (409, b"", True, "(409)"),
    ]
    for status, body, retry, text in cases:
        e = common._status_error(_R(status, body), "anthropic")
        assert e.retryable == retry, status
        assert text in e.user_message, (status, e.user_message)
        assert e.status == status
    assert not common._status_error(_R(500, b"", {"x-should-retry": "false"}), "x").retryable
    assert common._status_error(_R(400, b"", {"x-should-retry": "true"}), "x").retryable
    # The server's own words never reach the chat: a proxy may echo the key (issue 14, item 10).
    # The console gets them, with the key hidden and the surrogate pair made one character.
    got = []
    saved = log.warn
    log.warn = lambda tag, msg, *a: got.append(msg % a)
    try:
        e = common._status_error(_R(400, b'{"error":{"message":"prompt is too long; your key '
                                          b'sk-ant-api03-FAKEfakeFAKEfake0123 was sent \\ud83d\\ude00"}}'), "x")
        plain = common._status_error(_R(400, b'{"error":{"message":"Bearer abcdefghijklmnopqrstuvwxyz"}}'), "x")
    finally:
        log.warn = saved
    assert e.user_message == "the request was refused (400): the conversation is too long for the model " \
                             "(/new starts afresh)", e.user_message
    assert plain.user_message == "the request was refused (400)"
    assert "FAKE" not in got[0] and "[redacted]" in got[0] and got[0].endswith("was sent \U0001F600"), got
    assert "abcdefghijklmnop" not in got[1], got


def test_switching_provider_model_and_base_url_persists():
    support.fresh_flash()
    llm.reset()
    p = llm.current()
    assert (p.name, p.protocol, p.base_url) == ("anthropic", "anthropic", "https://api.anthropic.com")
    config.set("api_key", "sk-ant-FAKE-shared")
    llm.set_key("sk-FAKE-openai", "openai")
    p = llm.switch("openai")
    assert (p.name, p.protocol, p.model) == ("openai", "openai", "gpt-4.1-mini")
    assert p.headers["authorization"] == "Bearer sk-FAKE-openai"
    p = llm.switch(model="gpt-5")
    assert p.model == "gpt-5"
    config._cache.clear()  # as after a reboot
    llm.reset()
    assert (llm.current().name, llm.current().model) == ("openai", "gpt-5")
    p = llm.switch("ollama", base_url="http://192.168.1.20:11434/v1")
    assert p.base_url == "http://192.168.1.20:11434/v1" and p.model == "qwen3:8b"
    assert "sk-" not in llm.describe()
    p = llm.switch("anthropic")
    assert p.base_url == "https://api.anthropic.com" and p.model == "claude-sonnet-4-5"
    # no key of its own: none sent (a shared api_key would go to whichever company is chosen)
    assert not p.headers.get("x-api-key") and "sk-" not in str(p.headers)
    e = support.raises(common.LLMError, p.chat, "sys", [{"role": "user", "content": "hi"}])
    assert "no API key" in e.user_message
    assert llm.switch(base_url="http://127.0.0.1:9/v1").url == "http://127.0.0.1:9/v1/messages"  # not /v1/v1
    llm.switch(base_url="")  # back to the preset's
    e = support.raises(ValueError, llm.switch, "nope")
    assert "unknown provider" in str(e)
    e = support.raises(ValueError, llm.switch, "custom")
    assert "base URL" in str(e)
    support.raises(ValueError, llm.switch, None, None, "ftp://x")
    assert llm.current().name == "anthropic"  # nothing changed by the refused switches
    p = llm.switch("custom", "my-model", "https://llm.example.test/v1")
    assert (p.protocol, p.url) == ("openai", "https://llm.example.test/v1/chat/completions")
    llm.switch("openai")
    llm.switch(base_url="http://192.168.1.30:8000/v1")
    p = llm.switch("custom")  # the address set just before is kept: custom has no preset
    assert p.url == "http://192.168.1.30:8000/v1/chat/completions"
    config.set("provider", "bogus")
    llm.reset()
    assert llm.current().name == "anthropic"


def test_missing_key_is_a_clear_error_before_any_request():
    support.fresh_flash()
    llm.reset()
    e = support.raises(common.LLMError, llm.current().chat, "sys", [{"role": "user", "content": "hi"}])
    assert "no API key" in e.user_message


def test_surrogate_escapes_are_detected_in_the_raw_reply():
    for raw, want in ((b'{"t":"a\\ud83d\\ude00"}', True), (b'{"t":"\\uD83D\\uDE00"}', True),
                      (b'{"t":"\\u00e9 \\ud7ff"}', False), (b'{"t":"plain"}', False), (b'\\ud', False)):
        buf = bytearray(raw) + bytearray(8)
        assert common._utf16_escapes(buf, len(raw)) == want, raw
