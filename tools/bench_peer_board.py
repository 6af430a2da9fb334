# The board side of tools/bench_peer.py: one peer's agent, run under
# `micropython -X heapsize=...` against the fake OpenAI server at PEER_URL, on the same
# 20-turn chat (every second turn the model asks for one read_file). Host code, not
# firmware. Prints one line "@@PEER <json>" at the end.
#
# PEER=mimi      MICROPYPATH = host_sim/stubs + firmware; MIMI_FLASH = a seeded flash folder
# PEER=chipclaw  MICROPYPATH = host_sim/stubs + a ChipClaw checkout; PEER_WS = its workspace
# PEER_MODE=cpu   PEER_TURNS turns, CPU (ns, from schedstat) and allocation
#                 (micropython.mem_total()) per turn, normal collector
# PEER_MODE=peak  the same turns with the collector run every 4 KB and the live heap
#                 sampled every millisecond by a second thread
# PEER_MODE=clean the same turns; counts turns that failed (for the smallest heap)
# PEER_MODE=count the same turns and nothing else per turn (no clock reads, no collection of
#                 the harness's own): valgrind's instruction count is the whole process
# PEER_ONLY=text|tool  every turn of that kind (the driver counts instructions per kind)
# PEER_MODE=profile (mimi) the same turns with the steps of a turn timed (ticks_us, wall)
#                 and their allocation counted (mem_total): "profile" in the result
import gc
import json
import os
import sys

import micropython

PEER = os.getenv("PEER")
URL = os.getenv("PEER_URL")
TURNS = int(os.getenv("PEER_TURNS") or "20")
MODE = os.getenv("PEER_MODE") or "cpu"


def cpu_ns():
    """CPU time of this process's threads so far, ns (the first field of schedstat)."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/schedstat" % tid) as f:
            total += int(f.read().split()[0])
    return total


ONLY = os.getenv("PEER_ONLY")  # "text" or "tool": every turn of that kind (instruction counts)


def text_of(i):
    if ONLY == "tool" or (ONLY != "text" and i % 2):
        return "turn %d: what is in my memory file?" % i
    return "turn %d: good morning, how are you?" % i


class Mimi:
    """mimi's agent as mimi.app wires it: the 16 KB context, the tools, warm state."""

    def __init__(self):
        import mimi.llm as llm
        from mimi import config, seam

        self.seam = seam
        seam.set_flash_root(os.getenv("MIMI_FLASH"))
        seam._links = None  # as host_sim/bench_board.py: the unix port's symlink check is the desktop's, not the board's
        llm.init()
        from mimi.agent.context import Context

        self.ctx = Context(config.AGENT_CONTEXT_BYTES)
        for name in getattr(config, "APP_PRELOAD", ()):
            try:
                __import__(name)
            except ImportError:
                pass
            gc.collect()
        from mimi import bus as busmod
        from mimi.agent import loop

        from mimi.tools import registry

        if hasattr(registry, "load_app"):  # as mimi.app.register_tools: modules at first use, unless .py
            registry.load_app()
        else:  # older firmware, for comparing commits
            for name in getattr(config, "APP_TOOL_MODULES", ()):
                try:
                    __import__("mimi.tools." + name, None, None, ("register_all",)).register_all()
                except ImportError:
                    pass
        config.set("owner_chat", "1001")  # the owner's chat, as on a paired board (else a second person's)
        if os.getenv("PEER_COMPACT") == "off":  # the chat without mimi's summaries of older messages
            config.set("compact", "off")
        llm.set_key("sk-FAKE-peer", "openai")
        llm.switch("openai", "bench-model", URL)
        self.bus = busmod.Bus(config.BUS_INBOUND_MAX, config.BUS_OUTBOUND_MAX)
        self.agent = loop.Agent(self.bus, self.ctx)
        if hasattr(loop, "warm"):
            loop.warm(self.ctx)

    def turn(self, i):
        reply = self.agent.handle({"channel": "telegram", "chat_id": "1001", "text": text_of(i),
                                   "session": "tg_1001", "user": "Ann", "message_id": i,
                                   "is_group": False}) or ""
        self.bus.outbound.clear()
        self.seam.collect()  # as Agent.run does between messages
        return not reply.startswith("Sorry")


class ChipClaw:
    """ChipClaw's AgentLoop as its main.py wires it, one message per turn."""

    def __init__(self):
        import asyncio

        from chipclaw.agent.loop import AgentLoop
        from chipclaw.bus.events import InboundMessage
        from chipclaw.bus.queue import MessageBus
        from chipclaw.config import Config
        from chipclaw.providers.http_provider import HTTPProvider
        from chipclaw.session.manager import SessionManager

        self.asyncio = asyncio
        self.Inbound = InboundMessage
        config = Config(os.getenv("PEER_WS") + "/config.json")
        self.bus = MessageBus()
        provider = HTTPProvider(api_key="sk-FAKE-peer", api_base=URL)
        self.agent = AgentLoop(self.bus, provider, SessionManager(config.workspace), config)

    def turn(self, i):
        msg = self.Inbound("uart", "ann", "1001", text_of(i))
        self.asyncio.run(self.agent._handle_message(msg))
        q = self.bus.outbound._queue
        ok = bool(q) and not str(q[-1].content).startswith("Error processing")
        q.clear()
        gc.collect()  # as its run() loop does between messages
        return ok


# The steps of a turn, as (module, function name, label); Context.build is a method.
_STEPS = (("mimi.storage.sessions", "load", "session window (sessions.load)"),
          ("mimi.storage.sessions", "repair", "window repair (sessions.repair)"),
          ("mimi.storage.sessions", "append", "messages to flash (sessions.append)"),
          ("mimi.hw.retrieval", "for_message", "hardware notes (retrieval.for_message)"),
          ("mimi.llm.wire", "into", "request body into the reply buffer (wire.into)"),
          ("mimi.llm.wire", "body", "request body encoded (wire.body: in wire.into, or streamed)"),
          ("mimi.net.http", "request", "HTTP exchange, body included (wall: the fake's reply too)"),
          ("mimi.seam", "loads_view", "reply JSON parsed (seam.loads_view)"),
          ("mimi.llm.wire", "parse", "reply to internal form (wire.parse)"),
          ("mimi.tools.registry", "execute", "tools run (registry.execute)"),
          ("mimi.seam", "collect", "collections (seam.collect)"))


def profile(peer):
    """Wrap the steps of a turn so each call adds its time and allocation to ``acc``."""
    import time

    acc = {}

    def wrap(owner, name, label):
        f = getattr(owner, name)

        def w(*a, **k):
            t0 = time.ticks_us()
            m0 = micropython.mem_total()
            try:
                return f(*a, **k)
            finally:
                e = acc.get(label)
                if e is None:
                    e = acc[label] = [0, 0, 0]
                e[0] += time.ticks_diff(time.ticks_us(), t0)
                e[1] += 1
                e[2] += micropython.mem_total() - m0

        setattr(owner, name, w)

    for mod, name, label in _STEPS:
        m = __import__(mod, None, None, (name,))
        wrap(m, name, label)
    from mimi.agent import context

    wrap(context.Context, "build", "system prompt (Context.build, hardware notes included)")
    return acc


class Sampler:
    """A thread keeping the highest gc.mem_alloc() seen, every millisecond."""

    def __init__(self):
        import _thread
        import time

        self.time = time
        self.on = False
        self.peak = 0
        self.alive = True
        _thread.start_new_thread(self._run, ())

    def _run(self):
        while self.alive:
            if self.on:
                a = gc.mem_alloc()
                if a > self.peak:
                    self.peak = a
            self.time.sleep_ms(1)


_BUILTINS = ("esp32",)  # host_sim/stubs: the stand-in of a built-in module mimi uses (its settings store)


def main():
    held = 0
    if PEER == "mimi":
        import _romfs  # host_sim/stubs: with MIMI_ROMFS_IMAGE, the package from its image

        held = _romfs.mount()  # flash on a board: left out of every figure
    # The stand-ins of the board's own modules (host_sim/stubs: esp32's settings store...)
    # are in the firmware's flash on a board: imported first and left out, as the image is.
    gc.collect()
    a = gc.mem_alloc()
    for name in _BUILTINS if PEER == "mimi" else ():  # ChipClaw imports none of them
        try:
            __import__(name)
        except ImportError:
            pass
    gc.collect()
    held += gc.mem_alloc() - a
    heap_start = gc.mem_alloc() - held
    peer = Mimi() if PEER == "mimi" else ChipClaw()
    gc.collect()
    res = {"peer": PEER, "heap_after_init": gc.mem_alloc() - held, "heap_before_init": heap_start,
           "romfs": held > 0}
    # Two turns (one of each kind) before measuring: first-use compilation and caches.
    ok = peer.turn(-2) and peer.turn(-1)
    cpu, alloc, failed = [], [], 0 if ok else 1
    sampler = Sampler() if MODE == "peak" else None
    prof = profile(peer) if MODE == "profile" else None
    peak = 0
    for i in range(TURNS):
        if MODE == "count":  # valgrind counts the whole process: nothing of the harness's own per turn
            if not peer.turn(i):
                failed += 1
            continue
        gc.collect()
        if sampler:
            sampler.peak = gc.mem_alloc()
            gc.threshold(4096)
            sampler.on = True
        a0 = micropython.mem_total() if hasattr(micropython, "mem_total") else 0
        c0 = cpu_ns()
        if not peer.turn(i):
            failed += 1
        cpu.append(cpu_ns() - c0)
        alloc.append((micropython.mem_total() if hasattr(micropython, "mem_total") else 0) - a0)
        if sampler:
            sampler.on = False
            gc.threshold(-1)
            peak = max(peak, sampler.peak)
    if sampler:
        sampler.alive = False
    if prof is not None:
        res["profile"] = prof
    gc.collect()
    res.update({"turns": TURNS, "failed": failed, "cpu_ns": cpu, "alloc": alloc,
                "peak_heap": peak - held if peak else 0, "heap_between_turns": gc.mem_alloc() - held})
    print("@@PEER " + json.dumps(res))


if __name__ == "__main__":
    try:
        main()
    except MemoryError as e:
        sys.print_exception(e)
        print("@@PEER " + json.dumps({"error": "MemoryError"}))
