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

_TAG = const("agent")
# what the user (or, for tool errors, the model) reads, by key (``llm.pick``: one string, RAM)
_MSG = const("|llm Sorry, I could not answer: %s.|mem Sorry, out of memory. Try something shorter, or /new."
             "|bug Sorry, something went wrong (%s).|text I can only read text messages."
             "|note Still working (%d steps: %s)...|offer tool '%s' is not available in this chat"
             "|retry Error: %s. Try again.|max_tokens [My reply was cut off at the length limit: ask me to continue.]"
             "|refusal [The model declined.]|rounds I stopped after %d rounds (%s). Say \"continue\" to go on."
             "|paused the server paused its turn each time"
             "|disk [This chat could not be saved (%s): the flash may be full. /new starts a fresh file; old "
             "archives in /data/sessions/archive can be deleted.]|")
_unsaved = [None]  # the first failed session write of this turn (the agent runs one turn at a time)


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
    the day's token count, the skills index, the datasheet index and its chunk buffer
    (one system prompt is built for a made-up message). Made during the first turn, each
    would land in the middle of the free heap and split it for good (docs/heap.md)."""
    llm.current()
    usage.today()
    try:
        from mimi.hw import retrieval
    except ImportError:
        retrieval = None
    context.build({"channel": "cli", "chat_id": "0", "session": "warm"}, retrieval and (
        lambda room: retrieval.for_message("led pin", min(room, _AGENT_HW_NOTES_BYTES))))


class Agent:
    """Runs inbound messages through the LLM and tools; see the module doc.

    ``bus``: ``mimi.bus.Bus``; ``context``: ``mimi.agent.context.Context`` (``build(msg,
    extra) -> n``, ``view() -> memoryview``); ``provider``: a function returning the LLM
    provider (default ``mimi.llm.current``, so a switch applies from the next message).
    """

    def __init__(self, bus, context, provider=None):
        self.bus = bus
        self.context = context
        self.provider = provider or llm.current
        self.busy = None  # chat id being worked on, for /status

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
        try:
            reply = self._turn(msg, channel, chat)
        except llm.LLMError as e:
            log.warn(_TAG, "%s: %s", chat, e.user_message)
            reply = llm.pick(_MSG, "llm") % e.user_message
        except MemoryError:
            seam.collect()
            log.error(_TAG, "%s: no mem", chat)
            reply = llm.pick(_MSG, "mem")
        except Exception as e:  # noqa: BLE001 - a turn must never kill the agent thread
            log.exc(_TAG, chat, e)
            reply = llm.pick(_MSG, "bug") % type(e).__name__
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
        if not text.strip():
            return llm.pick(_MSG, "text")
        try:  # the hardware parts (mimi.hw), when installed
            from mimi.hw import fastpath, retrieval
        except ImportError:
            fastpath = retrieval = None
        out = fastpath and fastpath.try_handle(msg)
        if out is not None:
            _save(key, {"role": "user", "content": text})
            _save(key, {"role": "assistant", "content": out})
            return out
        messages = sessions.load(key)
        _add(key, messages, {"role": "user", "content": text})
        # hardware notes: a function of the room left in the context, which calls it
        self.context.build(msg, retrieval and (
            lambda room: retrieval.for_message(text, min(room, _AGENT_HW_NOTES_BYTES))))
        system = self.context.view()
        offered = registry.offered(denied_groups(msg))
        tctx = {"channel": channel, "chat_id": chat, "session": key, "bus": self.bus, "is_group": msg.get("is_group"),
                "by": msg.get("by"), "job": msg.get("job"), "role": policy.role(msg)}
        provider = self.provider()
        t0 = seam.ticks_ms()
        noted = False
        ran = []  # the distinct tools run, for the note and the round limit message
        steps = 0
        cap = config.SESSION_TOOL_RESULT_MAX_BYTES
        for rnd in range(config.AGENT_MAX_ROUNDS):
            messages, fixes = sessions.repair(messages)
            if fixes:
                log.warn(_TAG, "%s: fix %d", key, fixes)
            reply = provider.chat(system, messages, offered, config.LLM_MAX_TOKENS)
            usage.add(reply["usage"])
            calls, out, stop = reply["tool_calls"], reply["text"], reply["stop"]
            reply = None
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
                _add(key, messages, {"role": "assistant", "content": out, "tool_calls": calls})
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
                        err = llm.pick(_MSG, "offer") % name
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
            elif stop == "pause_turn":  # the server paused its own loop: send the turn back to go on
                if out:
                    _add(key, messages, {"role": "assistant", "content": out})
            else:
                note = llm.pick(_MSG, stop)  # max_tokens, refusal: the user is told; else None
                if note:
                    out = "%s\n\n%s" % (out, note) if out else note
                out = out or "(no reply)"
                break
        else:
            out = llm.pick(_MSG, "rounds") % (config.AGENT_MAX_ROUNDS, "tools: " + ", ".join(ran[:6]) if ran else
                                              llm.pick(_MSG, "paused"))
        messages = None  # not needed any more: room for the copies a long reply costs when saved
        if len(out) > 8192:
            seam.collect()  # a long reply is copied whole while saved: free its parsing's garbage first
        _save(key, {"role": "assistant", "content": out})
        return out


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
