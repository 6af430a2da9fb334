"""The agent loop: one inbound message at a time, to the end (issue 4, "The agent loop").

For each message from the bus: the hardware fast path (no LLM), else load the chat's
window, build the system prompt, ask the LLM, run the tools it asks for in order, feed
the results back, at most ``AGENT_MAX_ROUNDS`` rounds; then reply on the bus.
- The session is written as the turn goes (the question, each assistant message with its
  tool calls before they run, each result after), so a crash leaves a history that the
  next load repairs (``sessions.repair``: an unanswered call gets an error result).
- Before every request the history is checked again (``sessions.repair``).
- RAM stays bounded in a long tool loop: once the model has seen a round's results, they
  are cut to ``SESSION_TOOL_RESULT_MAX_BYTES`` in the working list too (as on flash).
- The bus hears ``typing`` when work starts and ``idle`` when it ends; a long tool loop
  sends one short ``note``, not one per step.
- Tokens are counted per day (``mimi.llm.usage``).
- Group chats (``msg["is_group"]``) are not offered the ``file``, ``gpio`` and ``cron``
  tools unless the owner allows them (setting ``group_tools``: "file,cron" or "all");
  a call to a tool that was not offered gets an error result, it never runs.
- ``handle`` never raises: a failure becomes one short message to the user, and the log
  gets one line with the tag (nanobot: "a failing turn becomes a short message").
"""
from mimi import config, log, seam
from mimi.storage import sessions
from mimi.tools import registry
import mimi.llm as llm
from mimi.llm import usage

TAG = "agent"
_CUT_MARK = "\n[result cut to %d bytes in history]"


def denied_groups(msg):
    """Tool groups this message's chat may not use (group chats: see the module doc)."""
    if not msg.get("is_group"):
        return ()
    allowed = config.get("group_tools").replace(",", " ").split()
    if "all" in allowed:
        return ()
    return tuple(g for g in config.AGENT_GROUP_DENIED if g not in allowed)


def _shrink(m):
    """A tool result message cut to the history cap (the model has seen it in full)."""
    c = m.get("content") or ""
    cap = config.SESSION_TOOL_RESULT_MAX_BYTES
    b = c.encode()
    if len(b) <= cap:
        return m
    mark = _CUT_MARK % cap
    end = max(0, cap - len(mark))
    while end > 0 and (b[end] & 0xC0) == 0x80:
        end -= 1
    m = dict(m)
    m["content"] = b[:end].decode() + mark
    return m


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
        log.info(TAG, "agent loop started")
        while not stop():
            msg = self.bus.inbound.get(config.AGENT_POLL_MS)
            if msg is not None:
                self.handle(msg)
                msg = None
                seam.collect()  # between turns: the heap is whole again for the next one
        usage.save()
        log.info(TAG, "agent loop stopped")

    def handle(self, msg):
        """Run one inbound message to the end; never raises. Returns the reply text sent."""
        channel = msg.get("channel") or "cli"
        chat = str(msg.get("chat_id", ""))
        self.busy = chat
        self.bus.send(channel, chat, "", "typing")
        try:
            reply = self._turn(msg, channel, chat)
        except llm.LLMError as e:
            log.warn(TAG, "chat %s: %s", chat, e.user_message)
            reply = "Sorry, I could not answer: %s." % e.user_message
        except MemoryError:
            seam.collect()
            log.error(TAG, "chat %s: out of memory", chat)
            reply = "Sorry, I ran out of memory on that one. Try a shorter request, or /new to start afresh."
        except Exception as e:  # noqa: BLE001 - a turn must never kill the agent thread
            log.exc(TAG, "chat %s: turn failed" % chat, e)
            reply = "Sorry, something went wrong on the device (%s). Try again." % type(e).__name__
        if reply:
            self.bus.send(channel, chat, reply, "text")
        self.bus.send(channel, chat, "", "idle")
        self.busy = None
        usage.save(False)
        return reply

    def _turn(self, msg, channel, chat):
        text = msg.get("text") or ""
        key = msg.get("session") or sessions.key_for(channel, chat)
        if not text.strip():
            return "I can only read text messages."
        fast = _fast_path(msg)
        if fast is not None:
            sessions.append(key, {"role": "user", "content": text})
            sessions.append(key, {"role": "assistant", "content": fast})
            return fast
        history = sessions.load(key)
        question = {"role": "user", "content": text, "ts": seam.time_s()}
        sessions.append(key, question)
        messages = history
        messages.append(question)
        history = None
        self.context.build(msg, _hw_notes(text))
        system = self.context.view()
        offered = registry.offered(denied_groups(msg))
        names = [t.name for t in offered]
        tctx = {"channel": channel, "chat_id": chat, "session": key, "bus": self.bus}
        provider = self.provider()
        t0 = seam.ticks_ms()
        noted = False
        tools_run = []
        for rnd in range(config.AGENT_MAX_ROUNDS):
            messages, fixes = sessions.repair(messages)
            if fixes:
                log.warn(TAG, "history for %s needed %d repair(s)", key, fixes)
            reply = provider.chat(system, messages, offered, config.LLM_MAX_TOKENS)
            usage.add(reply["usage"])
            calls = reply["tool_calls"]
            if calls:
                am = {"role": "assistant", "content": reply["text"], "tool_calls": calls, "ts": seam.time_s()}
                messages.append(am)
                sessions.append(key, am)
                for i in range(len(messages) - 1):  # the model has seen older results in full
                    if messages[i].get("role") == "tool":
                        messages[i] = _shrink(messages[i])
                for c in calls:
                    out, err = self._run_tool(c, names, tctx)
                    tools_run.append(c.get("name", "?"))
                    rm = {"role": "tool", "tool_call_id": c["id"], "name": c.get("name", ""), "content": out,
                          "is_error": err, "ts": seam.time_s()}
                    messages.append(rm)
                    sessions.append(key, rm)
                if not noted and (rnd + 1 >= config.AGENT_NOTE_AFTER_ROUNDS or
                                  seam.ticks_diff(seam.ticks_ms(), t0) >= config.AGENT_NOTE_AFTER_MS):
                    noted = True
                    self.bus.send(channel, chat, _note(tools_run), "note")
                continue
            stop = reply["stop"]
            out = reply["text"]
            if stop == "pause_turn":  # the server paused its own loop: send the turn back to go on
                if out:
                    am = {"role": "assistant", "content": out, "ts": seam.time_s()}
                    messages.append(am)
                    sessions.append(key, am)
                continue
            out = _final_text(out, stop)
            sessions.append(key, {"role": "assistant", "content": out, "ts": seam.time_s()})
            return out
        out = ("I stopped after %d rounds of tool calls without finishing (%s). Say \"continue\" to let me go on, "
               "or narrow the request." % (config.AGENT_MAX_ROUNDS, _tool_list(tools_run)))
        sessions.append(key, {"role": "assistant", "content": out, "ts": seam.time_s()})
        return out

    def _run_tool(self, call, offered_names, tctx):
        """Run one tool call; ``(result text, is_error)``. Never raises."""
        name = call.get("name", "")
        if call.get("error"):
            return ("Error: %s. Call %s again with a valid JSON object as arguments." % (call["error"], name), True)
        if name not in offered_names:
            return ("Error: tool '%s' is not available in this chat." % name, True)
        log.info(TAG, "tool %s", name)
        return registry.execute(name, call.get("input") or {}, tctx)


def _final_text(text, stop):
    if stop == "max_tokens":
        return (text + "\n\n" if text else "") + "[My reply was cut off: it reached the length limit. " \
            "Ask me to continue, or for a shorter answer.]"
    if stop == "refusal":
        return (text + "\n\n" if text else "") + "[The model declined to answer this.]"
    return text or "(no reply)"


def _tool_list(names):
    seen = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return ", ".join(seen[:6]) or "no tools"


def _note(names):
    return "Still working on it (%d steps so far: %s)..." % (len(names), _tool_list(names))


def _fast_path(msg):
    """The hardware fast path (``mimi.hw.fastpath``), when that part is installed."""
    try:
        from mimi.hw import fastpath
    except ImportError:
        return None
    return fastpath.try_handle(msg)


def _hw_notes(text):
    """Hardware notes for this message (``mimi.hw.retrieval``), when that part is
    installed: a function of the room left in the context, which calls it."""
    try:
        from mimi.hw import retrieval
    except ImportError:
        return None
    return lambda room: retrieval.for_message(text, min(room, config.AGENT_HW_NOTES_BYTES))
