"""The bot reuses its connections (issue 12, item 4): after the first turn, a chat of
text and tool turns opens no new connection to the Bot API or the LLM while the servers
keep them open, on both runtimes. (``tools/bench_connections.py`` prints the figures.)"""
import pytest

from host_sim.fakes.llm import Reply
from host_sim.harness import Sim


@pytest.mark.parametrize("runtime", ["cpython", "micropython"])
def test_a_steady_chat_opens_no_new_connections(runtime):
    sim = Sim(runtime=runtime).start()
    try:
        sim.send("hello")
        sim.wait_texts(1)
        tg, llm = sim.tg.accepted, sim.llm.accepted
        assert tg >= 2 and llm == 1  # the long poll's and the other calls'; the LLM's
        for i in range(4):
            if i % 2:
                sim.llm.script(Reply.tools([("get_current_time", {})]), Reply.text("tool turn %d" % i))
            else:
                sim.llm.script(Reply.text("text turn %d" % i))
            sim.send("message %d" % i)
            sim.wait_texts(2 + i)
        assert sim.texts()[-1] == "tool turn 3"
        assert len(sim.llm_requests()) == 7
        assert (sim.tg.accepted, sim.llm.accepted) == (tg, llm)
    finally:
        sim.stop()
