"""The fake LLMs' image blocks and OpenAI's transcription endpoint are trusted because
the official SDKs send and accept them (host only): what the SDK sends for an image
passes the fakes' checks, a broken image or a text-only model gets the API's 400 as the
SDK's ``BadRequestError``, and ``audio.transcriptions.create`` uploads a file and reads
the text back.
"""
import base64

import anthropic
import openai
import pytest

from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply

JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 3


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


def test_anthropic_sdk_sends_an_image_block(fa):
    c = anthropic.Anthropic(api_key="sk-ant-FAKE", base_url=fa.base_url, max_retries=0)
    fa.script(Reply.text("a cat"))
    r = c.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                     "data": base64.b64encode(JPEG).decode()}},
        {"type": "text", "text": "what is this?"}]}])
    assert r.content[0].text == "a cat" and fa.images == [("image/jpeg", JPEG)]
    for bad in ({"type": "base64", "media_type": "image/tiff", "data": "AAAA"},
                {"type": "base64", "media_type": "image/png", "data": "not base64!"}):
        with pytest.raises(anthropic.BadRequestError):
            c.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [
                {"type": "image", "source": bad}, {"type": "text", "text": "x"}]}])
    fa.vision = False
    with pytest.raises(anthropic.BadRequestError, match="image"):
        c.messages.create(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "text", "text": "x"}]}])


def test_openai_sdk_sends_an_image_url_data_part(fo):
    c = openai.OpenAI(api_key="sk-FAKE", base_url=fo.base_url, max_retries=0)
    fo.script(Reply.text("a cat"))
    url = "data:image/png;base64," + base64.b64encode(JPEG).decode()
    r = c.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "what is this?"}]}])
    assert r.choices[0].message.content == "a cat" and fo.images == [("image/png", JPEG)]
    fo.vision = False
    with pytest.raises(openai.BadRequestError, match="image_url is only supported by certain models"):
        c.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "x"}]}])


def test_openai_sdk_transcribes_through_the_fake(fo):
    c = openai.OpenAI(api_key="sk-FAKE", base_url=fo.base_url, max_retries=0)
    fo.transcript = "turn on the porch light"
    t = c.audio.transcriptions.create(model="gpt-4o-mini-transcribe", file=("voice.ogg", b"OggS-fake", "audio/ogg"))
    assert t.text == "turn on the porch light"
    assert fo.audio == [("gpt-4o-mini-transcribe", "voice.ogg", "audio/ogg", b"OggS-fake")]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(api_key="sk-WRONG", base_url=fo.base_url, max_retries=0).audio.transcriptions.create(
            model="whisper-1", file=("v.ogg", b"x", "audio/ogg"))
