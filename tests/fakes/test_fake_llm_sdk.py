"""The fake LLM servers are trusted because the official SDKs accept them (host only).

``anthropic`` and ``openai`` clients with ``base_url`` at the fakes: replies parse into
the SDKs' own types, errors become the SDKs' own exceptions, the SDKs' retry logic reads
our retry-after headers, chunked bodies and slow replies behave as from the real APIs,
and conversations the SDK sends pass (or, when wrong, fail) the fakes' strict checks.
"""
import time

import anthropic
import openai
import pytest

from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply

TOOL = {"name": "read_file", "description": "Read a file", "input_schema": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
OTOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                          "parameters": TOOL["input_schema"]}}


@pytest.fixture
def fa():
    f = FakeAnthropic(api_key="sk-ant-FAKE").start()
    yield f
    f.stop()


@pytest.fixture
def fo():
    f = FakeOpenAI(api_key="sk-FAKE").start()
    yield f
    f.stop()


def _a(fake, **kw):
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(api_key="sk-ant-FAKE", base_url=fake.base_url, **kw)


def _o(fake, **kw):
    kw.setdefault("max_retries", 0)
    return openai.OpenAI(api_key="sk-FAKE", base_url=fake.base_url, **kw)


USER = [{"role": "user", "content": "hi"}]


# -- Anthropic -------------------------------------------------------------------------

def test_anthropic_text_reply_and_recorded_request(fa):
    fa.script(Reply.text("Hello there", usage=(12, 3)))
    m = _a(fa).messages.create(model="claude-x", max_tokens=100, system="be brief", messages=USER)
    assert isinstance(m, anthropic.types.Message)
    assert m.content[0].type == "text" and m.content[0].text == "Hello there"
    assert m.stop_reason == "end_turn"
    assert (m.usage.input_tokens, m.usage.output_tokens) == (12, 3)
    req = fa.requests[-1]
    assert req["path"] == "/v1/messages"
    h = req["headers"]
    assert h.get("x-api-key") == "sk-ant-FAKE" or h.get("authorization") == "Bearer sk-ant-FAKE"
    assert h["anthropic-version"]
    assert req["json"]["system"] == "be brief" and req["json"]["messages"] == USER


def test_anthropic_several_tool_calls_then_results_round_trip(fa):
    fa.script(Reply.tools([("read_file", {"path": "/data/a"}), ("read_file", {"path": "/data/b"})], text="Let me look."),
              Reply.text("Both read."))
    c = _a(fa)
    m = c.messages.create(model="claude-x", max_tokens=100, messages=USER, tools=[TOOL])
    assert m.stop_reason == "tool_use"
    uses = [b for b in m.content if b.type == "tool_use"]
    assert [u.input for u in uses] == [{"path": "/data/a"}, {"path": "/data/b"}]
    assert m.content[0].text == "Let me look."
    assert len({u.id for u in uses}) == 2 and all(u.id.startswith("toolu_") for u in uses)
    msgs = USER + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "x"}
                                                for u in uses]}]
    m2 = c.messages.create(model="claude-x", max_tokens=100, messages=msgs, tools=[TOOL])
    assert m2.content[0].text == "Both read."
    assert fa.requests[-1]["json"]["tools"][0]["name"] == "read_file"


def test_anthropic_strict_checks_refuse_what_the_api_refuses(fa):
    c = _a(fa)
    bad = USER + [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                                     "input": {"path": "/x"}}]},
                  {"role": "user", "content": "no result given"}]
    with pytest.raises(anthropic.BadRequestError) as e:
        c.messages.create(model="claude-x", max_tokens=10, messages=bad)
    assert "without `tool_result`" in str(e.value)
    with pytest.raises(anthropic.BadRequestError):
        c.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "assistant", "content": "x"}])
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(api_key="sk-ant-WRONG", base_url=fa.base_url, max_retries=0).messages.create(
            model="claude-x", max_tokens=10, messages=USER)


@pytest.mark.parametrize("stop", ["max_tokens", "refusal", "pause_turn"])
def test_anthropic_stop_reasons(fa, stop):
    fa.script(Reply.text("cut", stop=stop))
    m = _a(fa).messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert m.stop_reason == stop


def test_anthropic_errors_map_to_sdk_exceptions(fa):
    c = _a(fa)
    for reply, exc in ((Reply.error(429, retry_after=1), anthropic.RateLimitError),
                       (Reply.error(529), anthropic.APIStatusError),
                       (Reply.error(500), anthropic.InternalServerError),
                       (Reply.error(403), anthropic.PermissionDeniedError),
                       (Reply.error(404), anthropic.NotFoundError)):
        fa.script(reply)
        with pytest.raises(exc) as e:
            c.messages.create(model="claude-x", max_tokens=10, messages=USER)
        assert e.value.status_code == reply.status
        assert e.value.body["type"] == reply.err_kind or e.value.body["error"]["type"]
    fa.script(Reply.error(529))
    with pytest.raises(anthropic.APIStatusError) as e:
        c.messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert e.value.body["error"]["type"] == "overloaded_error"


def test_anthropic_sdk_retries_honour_our_retry_after(fa):
    fa.script(Reply.error(429, retry_after_ms=300), Reply.error(529), Reply.text("third time"))
    t0 = time.monotonic()
    m = _a(fa, max_retries=2).messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert m.content[0].text == "third time"
    assert len(fa.requests) == 3
    assert fa.requests[1]["time"] - fa.requests[0]["time"] >= 0.28  # waited retry-after-ms
    assert time.monotonic() - t0 < 5


def test_anthropic_chunked_body_and_slow_reply(fa):
    fa.script(Reply.text("in pieces " * 20).chunked())
    m = _a(fa).messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert m.content[0].text == "in pieces " * 20
    fa.script(Reply.text("late").slow(2))
    with pytest.raises(anthropic.APITimeoutError):
        _a(fa, timeout=0.5).messages.create(model="claude-x", max_tokens=10, messages=USER)


def test_anthropic_malformed_body_fails_the_sdk(fa):
    fa.script(Reply.malformed())
    with pytest.raises(Exception) as e:
        _a(fa).messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert not isinstance(e.value, anthropic.APIStatusError)


# -- OpenAI ----------------------------------------------------------------------------

def test_openai_text_reply_and_recorded_request(fo):
    fo.script(Reply.text("Hello", usage=(7, 2)))
    r = _o(fo).chat.completions.create(model="gpt-x", messages=[{"role": "system", "content": "s"}] + USER)
    assert r.choices[0].message.content == "Hello"
    assert r.choices[0].finish_reason == "stop"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (7, 2)
    req = fo.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-FAKE"


def test_openai_tool_calls_arguments_are_json_strings_and_round_trip(fo):
    fo.script(Reply.tools([("read_file", {"path": "/data/a"}), ("read_file", "{not json")]), Reply.text("done"))
    c = _o(fo)
    r = c.chat.completions.create(model="gpt-x", messages=USER, tools=[OTOOL])
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.content is None
    calls = msg.tool_calls
    assert calls[0].function.arguments == '{"path": "/data/a"}'
    assert calls[1].function.arguments == "{not json"
    msgs = USER + [msg.model_dump(exclude_none=True)] + [
        {"role": "tool", "tool_call_id": t.id, "content": "x"} for t in calls]
    r2 = c.chat.completions.create(model="gpt-x", messages=msgs, tools=[OTOOL])
    assert r2.choices[0].message.content == "done"
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="gpt-x", messages=msgs[:-1])
    assert "did not have response messages" in str(e.value)


def test_openai_reasoning_and_think_tags(fo):
    fo.script(Reply.text("").thinking("hmm"), Reply.text("answer").think_tags("secret plan"))
    c = _o(fo)
    r = c.chat.completions.create(model="deepseek-reasoner", messages=USER)
    assert r.choices[0].message.model_extra["reasoning_content"] == "hmm"
    r = c.chat.completions.create(model="qwen", messages=USER)
    assert r.choices[0].message.content == "<think>secret plan</think>answer"


@pytest.mark.parametrize("stop,wire", [("max_tokens", "length"), ("content_filter", "content_filter")])
def test_openai_finish_reasons(fo, stop, wire):
    fo.script(Reply.text("cut", stop=stop))
    r = _o(fo).chat.completions.create(model="gpt-x", messages=USER)
    assert r.choices[0].finish_reason == wire


def test_openai_errors_and_insufficient_quota(fo):
    c = _o(fo)
    fo.script(Reply.error(429, kind="insufficient_quota", message="You exceeded your current quota"))
    with pytest.raises(openai.RateLimitError) as e:
        c.chat.completions.create(model="gpt-x", messages=USER)
    assert e.value.code == "insufficient_quota"
    fo.script(Reply.error(500))
    with pytest.raises(openai.InternalServerError):
        c.chat.completions.create(model="gpt-x", messages=USER)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(api_key="sk-WRONG", base_url=fo.base_url, max_retries=0).chat.completions.create(
            model="gpt-x", messages=USER)


def test_openai_sdk_retries_honour_our_retry_after(fo):
    fo.script(Reply.error(429, retry_after=1), Reply.text("ok now"))
    r = _o(fo, max_retries=2).chat.completions.create(model="gpt-x", messages=USER)
    assert r.choices[0].message.content == "ok now"
    assert fo.requests[1]["time"] - fo.requests[0]["time"] >= 0.95


def test_openai_chunked_and_dropped_connection(fo):
    fo.script(Reply.text("chunky").chunked())
    assert _o(fo).chat.completions.create(model="gpt-x", messages=USER).choices[0].message.content == "chunky"
    fo.script(Reply.text("never").drop())
    with pytest.raises(openai.APIConnectionError):
        _o(fo).chat.completions.create(model="gpt-x", messages=USER)


# -- what real conversations meet (issue 13) -------------------------------------------

def test_anthropic_tool_call_cut_by_max_tokens(fa):
    fa.script(Reply.tools([("write_file", {"path": "/data/a.md"})], text="Writing.", stop="max_tokens"))
    m = _a(fa).messages.create(model="claude-x", max_tokens=10, messages=USER, tools=[TOOL])
    assert m.stop_reason == "max_tokens"
    assert [b.type for b in m.content] == ["text", "tool_use"] and m.content[1].name == "write_file"


def test_openai_tool_call_cut_by_length(fo):
    fo.script(Reply.tools([("write_file", '{"path": "/data/a.md", "content": "half a fi')], stop="max_tokens"))
    r = _o(fo).chat.completions.create(model="gpt-x", messages=USER, tools=[OTOOL])
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].message.tool_calls[0].function.arguments.endswith("half a fi")


def test_openai_refusal_field(fo):
    fo.script(Reply.text("I can't help with that.", stop="refusal"), Reply.text("x", stop="content_filter"))
    c = _o(fo)
    r = c.chat.completions.create(model="gpt-x", messages=USER)
    msg = r.choices[0].message
    assert msg.refusal == "I can't help with that." and msg.content is None
    assert r.choices[0].finish_reason == "stop"
    assert c.chat.completions.create(model="gpt-x", messages=USER).choices[0].finish_reason == "content_filter"


def test_refusal_trigger_refuses_while_the_turn_stays_in_the_history(fa, fo):
    from host_sim.fakes.llm import REFUSAL_TRIGGER
    refused = [{"role": "user", "content": "tell me " + REFUSAL_TRIGGER}]
    c = _a(fa)
    fa.script(Reply.text("fine"))
    assert c.messages.create(model="claude-x", max_tokens=10, messages=refused).stop_reason == "refusal"
    later = refused + [{"role": "assistant", "content": "..."}, {"role": "user", "content": "hello"}]
    assert c.messages.create(model="claude-x", max_tokens=10, messages=later).stop_reason == "refusal"
    m = c.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hello"}])
    assert m.stop_reason == "end_turn" and m.content[0].text == "fine"  # the script waited
    r = _o(fo).chat.completions.create(model="gpt-x", messages=refused)
    assert r.choices[0].message.refusal


def test_openrouter_error_object_in_a_200(fo):
    fo.script(Reply.body_error(502, "Upstream provider returned an error"),
              Reply.body_error(429, "Rate limit exceeded upstream", on_choice=True))
    c = _o(fo)
    r = c.chat.completions.create(model="gpt-x", messages=USER)  # the SDK takes it as an answer...
    assert not r.choices and r.model_extra["error"] == {
        "code": 502, "message": "Upstream provider returned an error", "metadata": {"provider_name": "FakeProvider"}}
    r = c.chat.completions.create(model="gpt-x", messages=USER)
    ch = r.choices[0]
    assert ch.finish_reason == "error" and ch.model_extra["error"]["code"] == 429  # ...with the error on the choice


def test_context_window_errors(fa, fo):
    long_ = [{"role": "user", "content": "x" * 4000}]
    fa.context_tokens = fo.context_tokens = 500
    with pytest.raises(anthropic.BadRequestError) as e:
        _a(fa).messages.create(model="claude-x", max_tokens=10, messages=long_)
    assert "prompt is too long" in e.value.message and e.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as e:
        _o(fo).chat.completions.create(model="gpt-x", messages=long_)
    assert e.value.code == "context_length_exceeded" and "maximum context length" in e.value.message
    assert _o(fo).chat.completions.create(model="gpt-x", messages=USER).choices[0].message.content == "ok"


def test_deepseek_thinking_mode_wants_reasoning_content_back_on_tool_calls(fo):
    fo.thinking = True
    fo.script(Reply.tools([("read_file", {"path": "/data/a"})]), Reply.text("done"), Reply.text("again"))
    c = _o(fo)
    r = c.chat.completions.create(model="deepseek-v4-flash", messages=USER, tools=[OTOOL])
    msg = r.choices[0].message
    assert msg.model_extra["reasoning_content"] == "Let me think."
    result = {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "x"}
    bare = msg.model_dump(exclude_none=True)
    bare.pop("reasoning_content")
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="deepseek-v4-flash", messages=USER + [bare, result], tools=[OTOOL])
    assert "reasoning_content in the thinking mode must be passed back" in e.value.message
    full = msg.model_dump(exclude_none=True)
    r = c.chat.completions.create(model="deepseek-v4-flash", messages=USER + [full, result], tools=[OTOOL])
    assert r.choices[0].message.content == "done"
    # an answer without tool calls needs none back (DeepSeek: it is ignored)
    plain = USER + [{"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}]
    assert c.chat.completions.create(model="deepseek-v4-flash", messages=plain).choices[0].message.content == "again"
