"""What compaction costs, in tokens per 100 turns (issue 13, item 15; mimi/agent/compact.py).

    python tools/bench_compact.py [TURNS]        (default 100)

Runs the firmware's agent, context builder and storage under ``micropython`` (the board
side of ``python -m host_sim bench``, its soak mode: a flash seeded from spiffs_seed/,
every second turn a ``read_file`` call before the answer) twice against a fake Anthropic
server: with the setting ``compact`` off, then on. The fake counts tokens as it does for
every reply (``host_sim.fakes.llm``: 4 bytes of the request a token in, 4 bytes of text a
token out), and answers a summary request with a summary of 561 bytes (most of the 700
characters the summary prompt allows: the dearest case). Prints the
requests and tokens of both runs and the difference per 100 turns: the summary calls'
own tokens, and what the summary adds to the prompts of the turns that carry it.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import bench, launcher  # noqa: E402
from host_sim.fakes.llm import FakeAnthropic, Reply  # noqa: E402

SUMMARY = ("- Ann checks the board each morning; she asks what her memory file holds.\n"
           "- MEMORY.md has the headings Owner, People, Plans and Preferences (about 1,200 characters).\n"
           "- She prefers short answers, no emoji, times in 24 h.\n- Anna is her sister; she calls her on Sundays.\n"
           "- Plans: repot the basil on Saturday; water the tomatoes daily at 19:00 (a reminder is set).\n"
           "- The porch light is on GPIO 5; the garden lights follow the timer set last week.\n"
           "- Open: she wants a weekly list of what the board did; not started yet.\n"
           "- Decided: the heartbeat stays at 30 minutes.\n")


def run(turns, compact):
    fake = FakeAnthropic().start()
    tally = []  # (summary call?, tokens in, tokens out) per request

    def responder(req):
        r = Reply.text(SUMMARY) if bench.is_summary_request(req) else bench.responder(req)
        r.usage = (max(1, len(req["body"]) // 4), max(1, len(r.text_.encode()) // 4) + 20 * len(r.calls))
        tally.append((bench.is_summary_request(req), r.usage[0], r.usage[1]))
        return r

    fake.responder = responder
    root = bench.flash()
    launcher.store_settings(root, {"compact": compact})
    try:
        res, out = bench.run_board(fake.base_url, "512K", "soak", turns, root=root)
    finally:
        fake.stop()
    if res is None or res.get("sorry"):
        raise SystemExit("the board run failed:\n" + out[-3000:])
    return tally


def totals(tally, summary):
    rows = [t for t in tally if t[0] == summary]
    return len(rows), sum(t[1] for t in rows), sum(t[2] for t in rows)


def main():
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    per = 100.0 / turns
    off, on = run(turns, "off"), run(turns, "on")
    n0, in0, out0 = totals(off, False)
    n1, in1, out1 = totals(on, False)
    ns, ins, outs = totals(on, True)
    print("compaction, %d turns (every second one with a read_file call), tokens as the fake LLM counts them:" % turns)
    print("  off: %d requests, %d tokens in, %d out" % (n0, in0, out0))
    print("  on:  %d requests + %d summary calls, %d tokens in, %d out" % (n1, ns, in1 + ins, out1 + outs))
    extra_in, extra_out = in1 + ins - in0, out1 + outs - out0
    print("  cost per 100 turns: %d tokens in, %d out (%.1f %% of all tokens)" % (
        extra_in * per, extra_out * per, 100.0 * (extra_in + extra_out) / (in0 + out0)))
    print("    the summary calls: %.1f calls, %d in, %d out; the summary in the turns' prompts: %d in" % (
        ns * per, ins * per, outs * per, (in1 - in0) * per))


if __name__ == "__main__":
    main()
