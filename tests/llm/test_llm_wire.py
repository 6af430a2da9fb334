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


# -- what real servers send (issue 13) ---------------------------------------------------

NAMES = ["read_file", "write_file"]


def _pt(content, names=NAMES, finish="stop"):
    return wire.parse(_oai({"role": "assistant", "content": content}, finish), "openai", "ollama", False, names)


def test_tool_calls_written_as_text_run_as_tool_calls():
    forms = [
        'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "/data/a"}}\n</tool_call>',
        '<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"/data/a\\"}"}</tool_call>',  # a JSON string
        '<function_call>{"name": "read_file", "parameters": {"path": "/data/a"}}</function_call>',
        '<tool_call>\n<function=read_file>\n<parameter=path>\n/data/a\n</parameter>\n</function>\n</tool_call>',
        '<function=read_file>{"path": "/data/a"}</function>',
        '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "/data/a"}}]',
        '[TOOL_CALLS]read_file[ARGS]{"path": "/data/a"}',
        '<|python_tag|>{"name": "read_file", "parameters": {"path": "/data/a"}}<|eom_id|>',
        '{"name": "read_file", "parameters": {"path": "/data/a"}}',
        '```json\n{"name": "read_file", "arguments": {"path": "/data/a"}}\n```',
        '<think>which file?</think><tool_call>{"name": "read_file", "arguments": {"path": "/data/a"}}',  # unclosed
    ]
    for f in forms:
        r = _pt(f)
        assert r["stop"] == "tool_use", f
        assert [(c["name"], c["input"]) for c in r["tool_calls"]] == [("read_file", {"path": "/data/a"})], (f, r)
        assert "error" not in r["tool_calls"][0], f
        assert "<" not in r["text"] and "TOOL_CALLS" not in r["text"] and "{" not in r["text"], (f, r["text"])
    assert _pt(forms[0])["text"] == "Let me look."


def test_text_tool_calls_several_unknown_unreadable_and_plain_json():
    r = _pt('<tool_call>{"name": "read_file", "arguments": {"path": "/a"}}</tool_call>\n'
            '<tool_call>{"name": "write_file", "arguments": {"path": "/b", "content": "x"}}</tool_call> done')
    assert [c["name"] for c in r["tool_calls"]] == ["read_file", "write_file"] and r["text"] == "done"
    r = _pt('[TOOL_CALLS]read_file[ARGS]{"path": "/a"}[TOOL_CALLS]read_file[ARGS]{"path": "/b"}')
    assert [c["input"]["path"] for c in r["tool_calls"]] == ["/a", "/b"]
    r = _pt('<tool_call>{"name": "format_disk", "arguments": {}}</tool_call>')
    assert r["tool_calls"][0]["name"] == "format_disk" and r["text"] == ""  # the agent says it is not offered
    r = _pt('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>')
    c = r["tool_calls"][0]
    assert c["input"] == {} and "could not be read" in c["error"] and r["text"] == ""
    # JSON a person asked for is an answer, not a call: only an offered tool's name makes it one
    for text in ('{"name": "Ada", "age": 36}', '[1, 2]', '{"name": "read_file"', 'plain words'):
        r = _pt(text)
        assert r["tool_calls"] == [] and r["text"] == text and r["stop"] == "end", text
    assert _pt('{"name": "read_file", "arguments": {}}', names=None)["tool_calls"] == []  # no tools offered
    r = _pt("<|python_tag|>print(2 + 2)")  # code for an interpreter: text, not a call
    assert r["tool_calls"] == [] and r["text"] == "print(2 + 2)"
    # native calls win; Anthropic replies are left alone
    r = wire.parse(_oai({"content": '<tool_call>{"name": "write_file", "arguments": {}}</tool_call>', "tool_calls": [
        {"id": "c", "function": {"name": "read_file", "arguments": "{}"}}]}), "openai", "x", False, NAMES)
    assert [c["name"] for c in r["tool_calls"]] == ["read_file"]
    r = wire.parse({"content": [{"type": "text", "text": '{"name": "read_file", "arguments": {}}'}]},
                   "anthropic", "a", False, NAMES)
    assert r["tool_calls"] == []


def test_openai_refusal_field_is_a_refusal():
    r = _po(_oai({"content": None, "refusal": "I can't help with that."}))
    assert r["stop"] == "refusal" and r["text"] == "I can't help with that."
    assert _po(_oai({"content": "fine", "refusal": None}))["stop"] == "end"


def test_an_error_object_in_a_200_is_the_users_message():
    e = support.raises(common.LLMError, _po, {"error": {"code": 502, "message": "Upstream error from FakeProvider: "
                                                        "overloaded", "metadata": {"raw": "x"}}})
    assert e.user_message == "openai reported an error (502)"  # its words: the console only (issue 14)
    assert e.retryable and e.status == 502
    e = support.raises(common.LLMError, _po, {"choices": [{"finish_reason": "error", "message": {"content": ""},
                                                            "error": {"code": 400, "message": "x" * 500}}]})
    assert not e.retryable and len(e.user_message) < 220 and "(400)" in e.user_message
    e = support.raises(common.LLMError, _po, {"error": "quota"})
    assert e.user_message == "openai reported an error" and e.status == 200  # "quota": the console only
    assert _po(_oai({"content": "hi"}))["text"] == "hi"


def test_context_window_errors_are_told_apart():
    cases = [
        (400, b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens '
              b'> 200000 maximum"}}', True),
        (400, b'{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, your messages '
              b'resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}', True),
        (400, b'{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
              b'"type":"exceed_context_size_error"}}', True),
        (413, b'{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}', True),
        (400, b'{"error":{"type":"invalid_request_error","message":"max_tokens: too big"}}', False),
        (429, b'{"error":{"type":"rate_limit_error","message":"too many tokens per minute"}}', False),
    ]
    for status, body, want in cases:
        e = common._status_error(_R(status, body), "x")
        assert e.too_long == want, (status, body)
    assert not common.LLMError("x").too_long


def test_reasoning_content_is_kept_and_sent_back():
    r = _po(_oai({"content": None, "reasoning_content": "", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "{}"}}]}))
    assert r["reasoning_content"] == ""  # an empty one counts too: DeepSeek wants the field
    assert "reasoning_content" not in _po(_oai({"content": "x"}))
    p = common.Provider("openai", "deepseek", "https://api.deepseek.com", "sk-FAKE", "deepseek-v4-flash")
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "reasoning_content": "", "tool_calls": [
                {"id": "c", "name": "f", "input": {}}]},
            {"role": "tool", "tool_call_id": "c", "name": "f", "content": "r"},
            {"role": "assistant", "content": "a", "reasoning_content": "so: a"},
            {"role": "assistant", "content": "b"}]
    m = _body(p, None, msgs, None, 10)["messages"]
    assert m[1]["reasoning_content"] == "" and m[3]["reasoning_content"] == "so: a"
    assert "reasoning_content" not in m[4]
    a = _body(common.Provider("anthropic", "a", "http://h", "k", "m"), None, msgs, None, 10)["messages"]
    assert "reasoning_content" not in json.dumps(a)


def test_images_are_streamed_from_flash_as_blocks_before_the_text():
    import binascii

    root = support.fresh_flash()
    data = bytes(range(256)) * 9 + b"xy"  # 2306 bytes: pieces of 768, padding only at the end
    support.write(root + "/data/state/media_0", data)
    msgs = [{"role": "user", "content": "[photo]\nwhat is it?", "images": [
        {"path": "/data/state/media_0", "mime": "image/png", "size": len(data)}]}]
    b64 = binascii.b2a_base64(data, newline=False).decode()
    for proto in ("anthropic", "openai"):
        p = common.Provider(proto, proto, "http://h/v1", "k", "m")
        writes = []
        wire.body(writes.append, p, "sys", msgs, None, 100)
        again = []
        wire.body(again.append, p, "sys", msgs, None, 100)  # http counts, then sends: the same bytes
        data_out = b"".join([w.encode() if isinstance(w, str) else bytes(w) for w in writes])
        assert data_out == b"".join([w.encode() if isinstance(w, str) else bytes(w) for w in again])
        assert max([len(w) for w in writes]) < 1100  # no piece anywhere near the image's size
        c = json.loads(data_out)["messages"][-1]["content"]
        if proto == "anthropic":
            assert c[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}
        else:
            assert c[0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}}
        assert c[1] == {"type": "text", "text": "[photo]\nwhat is it?"}
    # after tool results (Anthropic): the image joins the results' user message
    p = common.Provider("anthropic", "anthropic", "http://h", "k", "m")
    hist = HISTORY[:4] + [dict(msgs[0])]
    c = _body(p, "s", hist, None, 10)["messages"][-1]["content"]
    assert [b["type"] for b in c] == ["tool_result", "tool_result", "image", "text"]
def _joined(parts):
    return b"".join(p.encode() if isinstance(p, str) else bytes(p) for p in parts)


def test_body_into_a_buffer_is_the_streamed_body_or_none_when_it_does_not_fit():
    # The request body is written into the reply buffer when it fits (encoded once), else
    # streamed (http counts, then sends): both must give the same bytes, for either
    # protocol, with and without a system prompt and tools.
    for proto, name in (("anthropic", "anthropic"), ("openai", "openai"), ("openai", "ollama")):
        p = common.Provider(proto, name, "http://h/v1", "k", "m")
        for system, tools in ((memoryview(SYSTEM.encode()), [TOOL]), (None, None), ("", [TOOL])):
            plain = []
            wire.body(plain.append, p, system, HISTORY, tools, 99)
            want = _joined(plain)
            buf = bytearray(len(want) + 7)
            n = wire.into(buf, p, system, HISTORY, tools, 99)
            assert n == len(want) and bytes(buf[:n]) == want, (proto, name, tools)
            assert ("tools" in json.loads(want)) == bool(tools)
            assert wire.into(bytearray(len(want) - 1), p, system, HISTORY, tools, 99) is None


def _tools(protocol, tools):
    parts = []
    wire.tools_json(parts.append, protocol, tools)
    return json.loads(b"[" + _joined(parts) + b"]")


def _as_api(protocol, t):
    if protocol == "anthropic":
        return {"name": t.name, "description": t.description, "input_schema": t.schema}
    return {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}}


def test_tools_are_copied_from_their_lines_in_either_form():
    # Tools registered from tools.jsonl are written from their lines' bytes, the others
    # encoded: either way each protocol gets its own form of every tool, in order.
    support.fresh_flash()
    registry.clear()
    from mimi.tools import files, gpio

    files.register_all()
    gpio.register_all()
    registry.register(registry.Tool("web_like", "An inline tool", TOOL.schema, lambda a, c: "", "net"))
    t = registry.offered(())
    assert len([x for x in t if x.cut]) == len(t) - 1 and t[-1].cut is None  # both kinds
    for proto in ("anthropic", "openai"):
        assert _tools(proto, t) == [_as_api(proto, x) for x in t]
        assert _tools(proto, t[:1]) == [_as_api(proto, t[0])]
    registry.clear()


def test_a_line_in_another_order_is_encoded_instead():
    root = support.fresh_flash()
    registry.clear()
    saved = registry.SPECS
    registry.SPECS = root + "/tools.jsonl"
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    support.write(registry.SPECS, '{"name":"get_current_time","group":"time","description":"Now",'
                                  '"input_schema":{"type":"object","properties":{"q":{"type":"string"}},'
                                  '"required":["q"]},"module":"mimi.tools.clock"}\n')
    try:
        from mimi.tools import clock

        clock.register_all()
        t = registry.offered(())
        assert t[0].cut is None and t[0].description == "Now"
        for proto in ("anthropic", "openai"):
            assert _tools(proto, t) == [_as_api(proto, t[0])]
    finally:
        registry.SPECS = saved
        registry.clear()


def test_long_texts_are_written_in_slices_and_read_back_whole():
    # A user text and tool results longer than a slice (1 KB) are escaped piece by piece
    # (no whole copy in the heap): the server must still read them back unchanged.
    long = "line \"q\" \\ ü 中文 😀\x01\n" * 200
    msgs = [{"role": "user", "content": long},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "read_file", "input": {}}]},
            {"role": "tool", "tool_call_id": "t1", "content": long, "is_error": True},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": long[:10]}]
    for proto, name in (("anthropic", "anthropic"), ("openai", "openai")):
        p = common.Provider(proto, name, "https://example.invalid/", "sk-FAKE", "m")
        m = _body(p, "s", msgs, None, 9)["messages"]
        if proto == "anthropic":
            assert m[0]["content"] == long
            assert m[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": long, "is_error": True}]
        else:
            assert m[1]["content"] == long  # after the system message
            assert m[3] == {"role": "tool", "tool_call_id": "t1", "content": long}
        assert m[-1]["content"] == long[:10]
