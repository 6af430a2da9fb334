"""The agent loop: one inbound message at a time, to the end (issue 4, "The agent loop").

For each message from the bus: the hardware fast path (no LLM), else load the chat's
window, build the system prompt, ask the LLM, run the tools it asks for in order, feed
the results back, at most ``AGENT_MAX_ROUNDS`` rounds; then reply on the bus.
- The session is written as the turn goes (the question, each assistant message with its
  tool calls before they run, each result after), so a crash leaves a history that the
  next load repairs (``sessions.repair``: an unanswered call gets an error result).
- Before every request the history is checked again (``sessions.repair``). A tool call
  whose id is missing or already in the window gets a fresh random one (``call_<hex>``).
- RAM stays bounded in a long tool loop: once the model has seen a round's results, they
  are cut to ``SESSION_TOOL_RESULT_MAX_BYTES`` in the working list too (as on flash); the
  history is dropped before a final reply is saved (a long reply is copied while saved).
- The bus hears ``typing`` when work starts and ``idle`` when it ends; a long tool loop
  sends one short ``note``, not one per step.
- Tokens are counted per day (``mimi.llm.usage``).
- Group chats (``msg["is_group"]``) are not offered the ``file``, ``gpio`` and ``cron``
  tools unless the owner allows them (setting ``group_tools``: "file,cron" or "all");
  a call to a tool that was not offered gets an error result, it never runs.
- Each turn has the role of its chat (``mimi.policy``: the owner, a second person, a
  group; a job's turn the role of the chat that made it), put in the tools' ``ctx``; the
  reply of a job made in another chat is marked ``[from ...]``, and a one-off job's session
  is removed after its turn (``once``).
- ``handle`` never raises: a failure becomes one short message to the user, and the log
  gets one line with the tag (nanobot: "a failing turn becomes a short message").
- Real chats (issue 13):
  - A reply cut off by the length limit (stop ``max_tokens``) never runs its calls: their
    arguments may hold half a file, and a cut ``write_file`` would destroy what the file
    held. Each gets an error result asking for smaller pieces, its half arguments are not
    kept, and a second cut reply in the turn ends it with a word to the user.
  - The same call (name and arguments) made ``_AGENT_REPEAT_MAX`` times within the last
    ``_AGENT_REPEAT_WINDOW`` calls of a turn (ZeroClaw's loop detector: 3 in 20) is not
    run: its result tells the model to use what it has; a repeat after that ends the turn
    with a word to the user, so a turn never spends its rounds on one call.
  - A refused turn is kept out of later windows (a ``{"role": "forget"}`` line after it,
    see ``mimi.storage.sessions``: the providers say a refused turn left in the history
    makes every later one refused).
  - DeepSeek's ``reasoning_content`` is kept on the assistant messages of a turn with
    tool calls (cut to ``_AGENT_REASONING_MAX_BYTES``): its API wants it back.
  - A request too long for the model's context is sent once more with only this turn,
    tool results cut (``compact.retry_short``), then the user is told.
  - The chat's summary (``mimi.agent.compact``) is in every turn's system prompt; after
    the reply, at most every ``_AGENT_COMPACT_EVERY_TURNS`` turns of a chat whose history
    is longer than the window, ``compact.update`` brings it up to date. ``compact`` is
    loaded at init (``warm``) when the setting is on, else on a full context, and stays
    (issue 17: unloaded after each use, it was compiled again inside a turn each time).
"""
import os

from micropython import const

from mimi import config, log, policy, seam
from mimi.storage import fs, sessions
from mimi.tools import registry
import mimi.llm as llm
from mimi.llm import usage

# Tunables (config.py holds those shared by several modules and the settings).
_AGENT_POLL_MS = const(500)  # how long run() waits on the inbound queue between stop checks
_AGENT_NOTE_AFTER_ROUNDS = const(3)  # tool rounds before the one progress note...
_AGENT_NOTE_AFTER_MS = const(20000)  # ...or this long into the turn, whichever comes first
_AGENT_HW_NOTES_BYTES = const(2048)  # hardware notes a message may add to the context
_AGENT_GROUP_DENIED = const(("file", "gpio", "cron"))  # tool groups group chats do not get by default
_AGENT_REASONING_MAX_BYTES = const(4096)  # DeepSeek's reasoning_content kept on one message
_AGENT_REPEAT_MAX = const(3)  # the same call this often within the window is not run
_AGENT_REPEAT_WINDOW = const(20)  # calls of a turn looked back on
_AGENT_COMPACT_EVERY_TURNS = const(5)  # one summary call per this many turns of a chat, at most
_AGENT_COMPACT_MIN_FREE_BYTES = const(49152)  # free heap a summary needs (its request, its reply)
_AGENT_COMPACT_ROOMY_BYTES = const(524288)  # a GC heap this large is not counted before a summary

_TAG = const("agent")
# what the user (or, for tool errors, the model) reads, by key (``llm.pick``: one string, RAM)
_MSG = const("|llm Sorry, I could not answer: %s.|mem Sorry, out of memory. Try something shorter, or /new."
             "|bug Sorry, something went wrong (%s).|text I can only read text messages."
             "|note Still working (%d steps: %s)...|offer tool '%s' is not available in this chat"
             "|retry Error: %s. Try again.|max_tokens [My reply was cut off at the length limit: ask me to continue.]"
             "|refusal [The model declined. I left that message out of our conversation: try asking another way.]"
             "|rounds I stopped after %d rounds (%s). Say \"continue\" to go on."
             "|paused the server paused its turn each time"
             "|disk [This chat could not be saved (%s): the flash may be full. /new starts a fresh file; old "
             "archives in /data/sessions/archive can be deleted.]|")
_unsaved = [None]  # the first failed session write of this turn (the agent runs one turn at a time)
_turns = {}  # session key -> turns since its last summary check (RAM: after a reboot, checked at once)
_heap = [None]  # the GC heap's size in bytes, measured at the first summary (0: the runtime cannot say)
_hw = []  # [(fastpath, retrieval)]: the hardware parts (mimi.hw) once imported, (None, None) without them


def _hw_parts():
    """``(fastpath, retrieval)`` from ``mimi.hw``, imported at the first call (not when this
    module is: ``app.init`` loads modules one by one) and kept: an import in every turn
    cost it a search of the name pool (issue 17)."""
    if not _hw:
        try:
            from mimi.hw import fastpath, retrieval
        except ImportError:
            fastpath = retrieval = None
        _hw.append((fastpath, retrieval))
    return _hw[0]


def denied_groups(msg):
    """Tool groups this message's chat may not use (group chats: see the module doc)."""
    out = []
    if msg.get("is_group"):
        allowed = config.get("group_tools").replace(",", " ").split()
        for g in _AGENT_GROUP_DENIED:
            if g not in allowed and "all" not in allowed:
                out.append(g)
    return out


def warm(context):
    """Make, at init, what a turn keeps between turns: the provider and its HTTP client,
    the day's token count, compaction's module (setting ``compact`` on), the skills
    index, the datasheet index and its chunk buffer (one system prompt is built for a
    made-up message). Made during the first turn, each
    would land in the middle of the free heap and split it for good (docs/heap.md)."""
    llm.current()
    usage.today()
    if config.get("compact") != "off":  # compaction's module, kept once loaded: not compiled inside a turn
        from mimi.agent import compact  # noqa: F401
    retrieval = _hw_parts()[1]
    context.build({"channel": "cli", "chat_id": "0", "session": "warm"}, retrieval and (
        lambda room: retrieval.for_message("led pin", min(room, _AGENT_HW_NOTES_BYTES))))


class Agent:
    """Runs inbound messages through the LLM and tools; see the module doc.

    ``bus``: ``mimi.bus.Bus``; ``context``: ``mimi.agent.context.Context`` (``build(msg,
    extra) -> n``, ``view() -> memoryview``, ``buf``: its bytearray, which a summary
    borrows between turns); ``provider``: a function returning the LLM
    provider (default ``mimi.llm.current``, so a switch applies from the next message).
    """

    def __init__(self, bus, context, provider=None):
        self.bus = bus
        self.context = context
        self.provider = provider or llm.current
        self.busy = None  # chat id being worked on, for /status
        self._compact = None  # (key, provider, window_full) for _compact once the turn is answered

    def run(self, stop):
        """Take messages from ``bus.inbound`` until ``stop()`` is true (the agent thread)."""
        log.info(_TAG, "started")
        while not stop():
            msg = self.bus.inbound.get(_AGENT_POLL_MS)
            if msg is not None:
                self.handle(msg)
                msg = None
                seam.collect()  # between turns: the heap is whole again for the next one
        usage.save()
        log.info(_TAG, "stopped")

    def handle(self, msg):
        """Run one inbound message to the end; never raises. Returns the reply text sent."""
        channel = msg.get("channel") or "cli"
        chat = str(msg.get("chat_id", ""))
        self.busy = chat
        self.bus.send(channel, chat, "", "typing")
        _unsaved[0] = None
        self._compact = None
        try:
            reply = self._turn(msg, channel, chat)
        except llm.LLMError as e:
            log.warn(_TAG, "%s: %s", chat, e.user_message)
            reply = llm.pick(_MSG, "llm") % e.user_message
            if msg.get("media") and e.status == 400 and "image" in e.user_message.lower():
                from mimi import commands  # a model without vision refused the image: say so plainly

                reply = commands.text("media_no_vision", self.provider().model)
        except MemoryError:
            seam.collect()
            log.error(_TAG, "%s: no mem", chat)
            reply = llm.pick(_MSG, "mem")
        except Exception as e:  # noqa: BLE001 - a turn must never kill the agent thread
            log.exc(_TAG, chat, e)
            reply = llm.pick(_MSG, "bug") % type(e).__name__
        if msg.get("media"):
            from mimi.agent import media

            media.clean()  # the turn's photos and voice notes leave the flash
        if _unsaved[0] is not None:
            e = _unsaved[0]
            note = llm.pick(_MSG, "disk") % ("no space left" if e.args and e.args[0] == 28 else e)
            reply = reply + "\n\n" + note if reply else note
        if reply and msg.get("by") and msg["by"] != chat:  # a job made in another chat says so
            from mimi import guard

            reply = guard.mark(msg, chat, reply)
        if reply:
            self.bus.send(channel, chat, reply, "text")
        self.bus.send(channel, chat, "", "idle")
        turn = self._compact
        self._compact = None
        if turn:  # after the answer is out: the person does not wait for it
            _compact(*turn, self.context)  # its prompt buffer is free till the next turn: a summary borrows it
        if msg.get("once") and msg.get("session"):  # a finished one-off job: its talk goes with it
            try:
                sessions.delete(msg["session"])
            except (OSError, ValueError) as e:
                log.warn(_TAG, "%s: %s", msg["session"], e)
        self.busy = None
        usage.save(False)
        return reply

    def _turn(self, msg, channel, chat):
        text = msg.get("text") or ""
        key = msg.get("session") or sessions.key_for(channel, chat)
        images = None
        if msg.get("media"):  # photos and voice notes: fetched, transcribed (mimi.agent.media)
            from mimi.agent import media

            text, images, note = media.prepare(msg, self.provider())
            if note:
                return note
        if not text.strip():
            return llm.pick(_MSG, "text")
        fastpath, retrieval = _hw_parts()
        out = fastpath and fastpath.try_handle(msg, denied_groups(msg))
        if out is not None:
            _save(key, {"role": "user", "content": text})
            _save(key, {"role": "assistant", "content": out})
            return out
        messages = sessions.load(key)
        full = sessions.report["start"] > 0  # older messages exist than the window holds
        _add(key, messages, {"role": "user", "content": text})
        if images:
            messages[-1]["images"] = images  # for the requests only: saved above without them
        # hardware notes: a function of the room left in the context, which calls it
        hw = retrieval and (lambda room: retrieval.for_message(text, min(room, _AGENT_HW_NOTES_BYTES)))
        summary = sessions.summary(key)["text"] if _summarised(key) else ""
        if summary:  # what left the window (compact); a chat without one builds as before
            self.context.build(msg, hw, summary=summary)
        else:
            self.context.build(msg, hw)
        summary = hw = None
        system = self.context.view()
        offered = registry.offered(denied_groups(msg))
        tctx = {"channel": channel, "chat_id": chat, "session": key, "bus": self.bus, "is_group": msg.get("is_group"),
                "by": msg.get("by"), "job": msg.get("job"), "role": policy.role(msg)}
        provider = self.provider()
        think = None  # DeepSeek's reasoning_content of the last reply
        refused = False
        recent = []  # (name, sorted arguments) of the turn's last calls, for repeats
        warned = False  # the model was told about a repeat
        cuts = 0  # replies cut off inside a call
        end = None  # the text for the user when the turn must end (cut again, repeated again)
        t0 = seam.ticks_ms()
        noted = False
        ran = []  # the distinct tools run, for the note and the round limit message
        steps = 0
        cap = config.SESSION_TOOL_RESULT_MAX_BYTES
        for rnd in range(config.AGENT_MAX_ROUNDS):
            messages, fixes = sessions.repair(messages)
            if fixes:
                log.warn(_TAG, "%s: fix %d", key, fixes)
            try:
                reply = provider.chat(system, messages, offered, config.LLM_MAX_TOKENS)
            except llm.LLMError as e:
                if not e.too_long:
                    raise
                from mimi.agent import compact  # a full context: once more with only this turn (module doc)

                reply = compact.retry_short(provider, system, messages, offered, e)
            usage.add(reply["usage"])
            calls, out, stop = reply["tool_calls"], reply["text"], reply["stop"]
            think = reply.get("reasoning_content")
            reply = None
            if stop == "refusal":
                calls = None  # nothing of a refused reply runs
            if calls and stop == "max_tokens":  # cut off inside a call: never run it (module doc)
                from mimi import commands  # its texts.md: rare texts read when needed, no RAM in between

                cuts += 1
                for c in calls:
                    c["input"] = {}
                    c["error"] = commands.text("tool_cut", config.LLM_MAX_TOKENS)
                if cuts > 1:
                    end = commands.text("tool_cut_user", calls[0].get("name", ""))
            if calls:
                # A missing or reused id (servers that number calls per reply: call_0 every
                # round) would make repair drop this call and its result: give it a fresh one.
                seen = [x.get("id") for m in messages for x in m.get("tool_calls") or ()]
                for c in calls:
                    if not c.get("id") or not isinstance(c["id"], str) or c["id"] in seen:
                        c["id"] = "call_%08x" % int.from_bytes(os.urandom(4), "big")
                    seen.append(c["id"])
                seen = None
                for m in messages:  # the model has seen these results in full: cut them as on flash
                    b = seam.as_bytes(m.get("content") or "") if m.get("role") == "tool" else ""
                    if len(b) > cap:
                        mark = "\n[result cut to %d bytes]" % cap
                        m["content"] = str(b[:fs.utf8_end(b, cap - len(mark))], "utf-8") + mark
                _add(key, messages, _reasoned({"role": "assistant", "content": out, "tool_calls": calls}, think))
                for c in calls:
                    name = c.get("name", "")
                    steps += 1
                    if name not in ran:
                        ran.append(name)
                    err = c.get("error")  # arguments that were not a JSON object
                    for t in offered:
                        if t.name == name:
                            break
                    else:
                        err = err or llm.pick(_MSG, "offer") % name
                    k = (name, sorted((c.get("input") or {}).items()))
                    recent.append(k)
                    del recent[:-_AGENT_REPEAT_WINDOW]
                    n = recent.count(k)
                    if n >= _AGENT_REPEAT_MAX and not err:  # the same call again: not run (module doc)
                        from mimi import commands

                        err = commands.text("tool_repeat", name, n - 1)
                        if warned:
                            end = commands.text("tool_repeat_user", name)
                        warned = True
                    if err:
                        res = (llm.pick(_MSG, "retry") % err, True)
                    else:
                        log.info(_TAG, "tool %s", name)
                        res = registry.execute(name, c.get("input") or {}, tctx)
                    _add(key, messages, {"role": "tool", "tool_call_id": c["id"], "name": name, "content": res[0],
                                         "is_error": res[1]})
                if not noted and (rnd + 1 >= _AGENT_NOTE_AFTER_ROUNDS or
                                  seam.ticks_diff(seam.ticks_ms(), t0) >= _AGENT_NOTE_AFTER_MS):
                    noted = True
                    self.bus.send(channel, chat, llm.pick(_MSG, "note") % (steps, ", ".join(ran[:6])), "note")
                if end:  # cut again, or a repeat after the note: the person hears why
                    out = end
                    think = None
                    break
            elif stop == "pause_turn":  # the server paused its own loop: send the turn back to go on
                if out:
                    _add(key, messages, {"role": "assistant", "content": out})
            else:
                refused = stop == "refusal"
                note = llm.pick(_MSG, stop)  # max_tokens, refusal: the user is told; else None
                if note:
                    out = "%s\n\n%s" % (out, note) if out else note
                out = out or "(no reply)"
                break
        else:
            think = None
            out = llm.pick(_MSG, "rounds") % (config.AGENT_MAX_ROUNDS, "tools: " + ", ".join(ran[:6]) if ran else
                                              llm.pick(_MSG, "paused"))
        messages = None  # not needed any more: room for the copies a long reply costs when saved
        if len(out) > 8192:
            seam.collect()  # a long reply is copied whole while saved: free its parsing's garbage first
        _save(key, _reasoned({"role": "assistant", "content": out}, think if steps else None))
        if refused:  # keep the refused turn out of later windows (sessions' module doc)
            _save(key, {"role": "forget"})
        self._compact = (key, provider, full)
        return out


def _summarised(key):
    """Whether chat ``key`` has a summary (setting ``compact`` not "off"; a person's chat,
    not a cron job's or the heartbeat's, which run unattended)."""
    return config.get("compact") != "off" and key[:5] != "cron_" and key[:3] != "hb_"


def _compact(key, provider, full, context):
    """Bring the summary of chat ``key`` up to date when due: at most every
    ``_AGENT_COMPACT_EVERY_TURNS`` turns, and only when its history is longer than the
    window (``full``); never raises. ``compact`` is loaded by ``warm`` at init (here
    when it was not) and stays (issue 17: unloaded after each use, it was compiled again
    every fifth turn of a long chat, the slowest part of such a turn; resident it holds
    about 3 KB as .py, about 1 KB from ROMFS). A heap under ``_AGENT_COMPACT_ROOMY_BYTES``
    (its size measured once, at the first summary) is collected and counted first: with
    less than ``_AGENT_COMPACT_MIN_FREE_BYTES`` free the summary is skipped, as the next
    turn matters more (a summary that failed for memory there split the heap until turns
    failed too). A larger heap (the board's 2 MB) is neither: ``gc.mem_free`` walks the
    whole heap (about 2 M instructions at 2 MB), and the turn's garbage is collected when
    the call needs room. A summary that runs out of memory anyway is skipped and logged.
    """
    if not _summarised(key):
        return
    if len(_turns) > 16 and key not in _turns:
        _turns.clear()  # bounded: a dropped count only brings a check forward
    n = _turns.get(key, _AGENT_COMPACT_EVERY_TURNS - 1) + 1  # after a reboot: checked at once
    _turns[key] = 0 if n >= _AGENT_COMPACT_EVERY_TURNS and full else n
    if _turns[key]:
        return
    if _heap[0] is None:
        seam.collect()
        free = seam.mem_free()
        _heap[0] = free + seam.mem_alloc() if free is not None else 0
    if _heap[0] and _heap[0] < _AGENT_COMPACT_ROOMY_BYTES:
        seam.collect()
        free = seam.mem_free()
        if free < _AGENT_COMPACT_MIN_FREE_BYTES:
            log.warn(_TAG, "%s: no summary: %d B free", key, free)
            return
    try:
        from mimi.agent import compact

        compact.update(key, provider, context.buf)
    except MemoryError:  # its garbage first: the line logged needs room too
        compact = None
        seam.collect()
        log.warn(_TAG, "%s: no summary: no mem", key)
    except Exception as e:  # noqa: BLE001 - a summary is a bonus: the chat goes on without it
        log.warn(_TAG, "%s: no summary: %s", key, getattr(e, "user_message", None) or repr(e))


def _reasoned(m, think):
    """``m`` with DeepSeek's ``reasoning_content`` (capped) when the reply had one."""
    if think is not None:
        b = seam.as_bytes(think)
        m["reasoning_content"] = think if len(b) <= _AGENT_REASONING_MAX_BYTES else str(
            b[:fs.utf8_end(b, _AGENT_REASONING_MAX_BYTES)], "utf-8")
    return m


def _save(key, m):
    """Append ``m`` to the session; a failed write (a full flash) is logged and remembered
    for the reply's note, and the turn goes on: an answer is never lost for its history."""
    try:
        sessions.append(key, m)
    except OSError as e:
        if _unsaved[0] is None:
            log.warn(_TAG, "%s: not saved: %s", key, e)
            _unsaved[0] = e


def _add(key, messages, m):
    """Stamp ``m``, append it to the working list and save it to the session."""
    m["ts"] = seam.time_s()
    messages.append(m)
    _save(key, m)
