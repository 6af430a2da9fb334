"""The RAM a photo costs: the smallest MicroPython heap (unix port) in which the channel
and the agent answer a photo of N KB, beside the smallest for a text message, both
through the real wires against the fake Bot API and fake LLM (host only).

    python3 tools/bench_media.py [photo KB, default 256] [openai|anthropic]

A heap that holds the photo would need N KB more than the text turn; streamed (download
to flash in 1 KB pieces, 768-byte pieces base64-encoded into the request), the two differ
by a few KB.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import mpcase  # noqa: E402
from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI, Reply  # noqa: E402
from host_sim.fakes.telegram import FakeTelegram  # noqa: E402

CASES = os.path.join(ROOT, "tests", "channels", "cases_tg_chats_live.py")


def passes(name, heap_kb, provider, photo):
    tg = FakeTelegram().start()
    llm = (FakeOpenAI if provider == "openai" else FakeAnthropic)().start()
    try:
        if photo:
            tg.inject_photo_file(42, photo, caption="what is it?")
        else:
            tg.inject_text(42, "what is it?")
        llm.script(Reply.text("a cat"))
        env = {"MIMI_T_TG": tg.url, "MIMI_T_TOKEN": tg.token, "MIMI_T_PROVIDER": provider, "MIMI_T_LLM": llm.base_url}
        ok, out = mpcase.run(CASES, name, env, heap="%dK" % heap_kb, timeout=120)
        return ok and tg.texts(42) == ["a cat"] and (not photo or llm.images == [("image/jpeg", photo)])
    finally:
        tg.stop()
        llm.stop()


def smallest(name, provider, photo):
    lo, hi = 32, 1024  # KB: lo fails, hi passes
    assert passes(name, hi, provider, photo), "fails even at %d KB" % hi
    while hi - lo > 4:
        mid = (lo + hi) // 2
        if passes(name, mid, provider, photo):
            hi = mid
        else:
            lo = mid
    return hi


def main():
    kb = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    provider = sys.argv[2] if len(sys.argv) > 2 else "openai"
    photo = b"\xff\xd8\xff\xe0" + os.urandom(kb * 1024 - 4)
    t = smallest("test_a_text_turn", provider, None)
    p = smallest("test_a_photo_reaches_the_model_and_the_history_keeps_a_placeholder", provider, photo)
    print("smallest heap, %s, MicroPython unix port: text turn %d KB, turn with a %d KB photo %d KB "
          "(the photo's cost: %d KB, within the 4 KB step)" % (provider, t, kb, p, p - t))


if __name__ == "__main__":
    main()
