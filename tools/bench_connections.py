"""New TCP connections per chat turn: the Bot API's and the LLM's (issue 12, item 4).

    python3 tools/bench_connections.py [--runtime cpython|micropython] [--turns N] [--gap S]
                                       [--server-idle S]

Boots the firmware (``host_sim.harness.Sim``: the I/O and agent threads as on the
board) against the fake Telegram and the fake LLM, which count the TCP connections they
accept; on the board each one is a TLS handshake (0.5-1.5 s of CPU). The chat: a message
every ``--gap`` seconds (default: two runs, every 3 s and once a minute), text and tool
turns alternating (a tool turn is two LLM calls, ``get_current_time`` then the answer).
The first turn warms up (getMe, the command menu, the first connections) and is not
counted; the figure is the connections accepted during the next ``--turns`` turns
(default 10 at 3 s, 4 at 60 s), divided by their number. Each run also prints the ratio
to the figure measured before keep-alive (``BEFORE``: every request on its own
connection, measured with this file at commit 852413a). The fakes keep an idle
connection open as long as the client does; ``--server-idle S`` makes them close one
idle for S seconds, as a strict server would (the firmware then opens a fresh one).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim.fakes.llm import Reply  # noqa: E402
from host_sim.harness import Sim  # noqa: E402

# Connections per turn before keep-alive (commit 852413a; CPython and micropython alike):
# the Bot API one per call (poll, typing, reply; at 60 s also an empty poll), the LLM one per call.
BEFORE = {3: (3.0, 1.5), 60: (4.0, 1.5)}


def responder(req):
    """Odd turns call a tool first, even ones answer at once (either wire protocol)."""
    msgs = req["json"]["messages"]
    last = msgs[-1]
    content = last.get("content")
    if last["role"] == "tool" or isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return Reply.text("It is the time the tool said.")
    text = content if isinstance(content, str) else " ".join(
        b.get("text", "") for b in content if isinstance(b, dict))
    n = int(text.split()[-1]) if text.split()[-1:] and text.split()[-1].isdigit() else 0
    if n % 2:
        return Reply.tools([("get_current_time", {})])
    return Reply.text("Noted, turn %d." % n)


def run(runtime, gap_s, turns, server_idle_s=None):
    """Connections per counted turn: (Bot API, LLM)."""
    sim = Sim(runtime=runtime)
    sim.start_fakes()
    sim.llm.responder = responder
    if server_idle_s:  # http.server closes a connection whose next request does not come in time
        sim.tg._server.RequestHandlerClass.timeout = server_idle_s
        sim.llm._httpd.RequestHandlerClass.timeout = server_idle_s
    sim.boot()
    try:
        def turn(i):
            t0 = time.time()
            sim.send("message number %d" % i)
            sim.wait_texts(i + 1, timeout_s=60)
            left = gap_s - (time.time() - t0)
            if left > 0:
                time.sleep(left)

        turn(0)
        tg0, llm0 = sim.tg.accepted, sim.llm.accepted
        for i in range(1, turns + 1):
            turn(i)
        return (sim.tg.accepted - tg0) / turns, (sim.llm.accepted - llm0) / turns
    finally:
        sim.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", default="cpython", choices=("cpython", "micropython"))
    ap.add_argument("--turns", type=int, help="turns counted (default 10 at a 3 s gap, 4 at 60 s)")
    ap.add_argument("--gap", type=float, action="append", help="seconds between messages (default 3 and 60)")
    ap.add_argument("--server-idle", type=float, help="the fakes close a connection idle this many seconds")
    a = ap.parse_args()
    print("new connections per turn, %s (text and tool turns alternating)%s" % (
        a.runtime, ", servers closing idle connections after %g s" % a.server_idle if a.server_idle else ""))
    print("%-18s %8s %8s %8s %14s" % ("a message every", "Bot API", "LLM", "total", "before/after"))
    for gap in a.gap or (3, 60):
        turns = a.turns or (10 if gap < 30 else 4)
        tg, llm = run(a.runtime, gap, turns, a.server_idle)
        before = BEFORE.get(int(gap))
        ratio = "%.1f" % (sum(before) / (tg + llm)) if before and tg + llm else "-"
        if before and not tg + llm:
            ratio = "%.1f / 0" % sum(before)
        print("%-18s %8.2f %8.2f %8.2f %14s" % ("%g s" % gap, tg, llm, tg + llm, ratio))


if __name__ == "__main__":
    main()
