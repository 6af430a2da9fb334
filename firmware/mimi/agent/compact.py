"""Long conversations: a running summary of what left the window, and a shorter request
when the model's context is full (issue 13, items 14 and 15).

Compaction (nanobot, PicoClaw, ZeroClaw and exoclaw keep one too). A request carries the
last 20 messages of a chat (``mimi.storage.sessions``); what is older would be lost to
the model. So at the end of a turn, at most every ``loop._AGENT_COMPACT_EVERY_TURNS`` (5)
turns of a chat and only once its history is longer than the window, the model is asked in one
small extra call (no tools, at most ``_COMPACT_MAX_TOKENS``) to fold the messages before
the newest ``_COMPACT_KEEP_MSGS`` into the summary so far: they are summarised before
they leave the window. The transcript it reads is capped (``_COMPACT_INPUT_MAX_BYTES``,
each message ``_COMPACT_LINE_MAX_BYTES``, tool results shorter still), and a refused
turn is never in it. The summary (at most ``_COMPACT_SUMMARY_MAX_BYTES``) is kept in
``/data/sessions/<key>.summary.json`` (``{"text", "upto", "gen"}``: the byte offset
summarised up to, and the session file's generation: the number of its newest archive,
since a rotation or a clear moves the offsets) and goes into the system prompt of every later turn of that chat
(``mimi.agent.context``, "Earlier in this chat"). ``/new`` clears it
(``sessions.clear``). The setting ``compact`` ("on", or "off": no calls, no summary)
turns it off. Cron and heartbeat sessions are not summarised (they run unattended). The
agent imports this module only when a summary is due or a context is full.
Cost (``tools/bench_compact.py``, fake LLM's token counts): see the README, "Talking to
it". A failed summary call is logged and tried again at the next due turn; the user
never hears of it.

A full context (``retry_short``): when a request does not fit the model's context window
(``LLMError.too_long``), the agent sends it once more with only this turn's messages and
every tool result cut to ``_SHRINK_RESULT_BYTES``; then the user is told.
"""
import json

from micropython import const

from mimi import config, log, seam
from mimi.storage import fs, sessions

# Tunables (config.py holds those shared by several modules and the settings).
_COMPACT_KEEP_MSGS = const(10)  # the newest messages left out of a summary (still in the window)
_COMPACT_SUMMARY_MAX_BYTES = const(1024)  # the summary kept and given to each turn
_COMPACT_INPUT_MAX_BYTES = const(4096)  # the transcript one summary call reads
_COMPACT_LINE_MAX_BYTES = const(400)  # one message in it (a tool result: a third of this)
_COMPACT_READ_MAX_BYTES = const(4096)  # a stored line longer than this is left out
_COMPACT_MAX_TOKENS = const(400)  # the summary call's reply
_COMPACT_PROMPT_MAX_BYTES = const(2048)  # compact.md, the summary call's instructions
# room the call needs in ``update``'s scratch: instructions, the summary so far, the
# transcript (each of its lines may pass the cap by its prefix and marks) and the headings
_SCRATCH_BYTES = const(_COMPACT_PROMPT_MAX_BYTES + _COMPACT_SUMMARY_MAX_BYTES + _COMPACT_INPUT_MAX_BYTES + 1024)
_SHRINK_RESULT_BYTES = const(512)  # tool results in a request retried for the context window

_TAG = const("compact")
_LONG = const("the request is too long for the model even with the older messages left out (%s); /new starts afresh")
# The summary call's instructions ship beside this module, read only when a call is made.
_PROMPT_PATH = __file__.rsplit("/", 1)[0] + "/compact.md"


def update(key, provider, scratch):
    """Fold what is about to leave chat ``key``'s window into its summary (module doc).
    The agent calls it when due (``loop._compact``). Returns True when a summary call was
    made. ``scratch``: a writable buffer of at least ``_SCRATCH_BYTES`` free for the call
    (the agent's system prompt buffer, between turns): the call's instructions and its
    question are written there, not made as strings (issue 17: they were the peak of a
    turn that summarised). Side effects: one LLM call, its tokens counted (``usage``),
    the summary file written. Raises what ``provider.chat`` and the file system raise
    (the agent logs it: a summary is a bonus, the chat goes on without it)."""
    from mimi.llm import usage

    st = sessions.summary(key)
    gen = sessions._archive_nums(key)  # a rotation or a clear archives the file: a new number
    gen = gen[-1] if gen else 0
    upto = st.get("upto") if st.get("gen") == gen else 0  # rotated or cleared: offsets start again
    sessions.load(key, _COMPACT_KEEP_MSGS)
    cut = sessions.report["start"]
    if not isinstance(upto, int) or upto < 0:  # a damaged summary file: from the start again
        upto = 0
    if cut <= upto:
        return False
    lines = _transcript(sessions.path_for(key), upto, cut)
    st = {"text": st["text"], "upto": cut, "gen": gen}
    called = bool(lines)
    if called:
        if len(scratch) < _SCRATCH_BYTES:
            raise ValueError("a summary needs %d bytes of scratch, got %d" % (_SCRATCH_BYTES, len(scratch)))
        mv = memoryview(scratch)
        with open(_PROMPT_PATH, "rb") as f:
            n = f.readinto(mv[:_COMPACT_PROMPT_MAX_BYTES])
        n = fs.utf8_end(mv[:n], n)
        at = _put(mv, n, "Summary so far:\n")
        at = _put(mv, at, st["text"] or "(none)")
        at = _put(mv, at, "\n\nThe messages after it:")
        for t in lines:  # within _COMPACT_INPUT_MAX_BYTES: the room is there (_SCRATCH_BYTES)
            at = _put(mv, _put(mv, at, "\n"), t)
        lines = None
        reply = provider.chat(mv[:n], [{"role": "user", "content": mv[n:at]}], None, _COMPACT_MAX_TOKENS)
        mv = None
        usage.add(reply["usage"])
        text = _cap(reply["text"].strip(), _COMPACT_SUMMARY_MAX_BYTES)
        if not text:
            return True  # nothing usable: the old summary stays, and so does its offset
        st["text"] = text
    fs.write(sessions.summary_path(key), json.dumps(st))
    return called


def _transcript(path, start, end):
    """The messages in bytes ``start``..``end`` of a session file as short lines
    ("User: ...", "Assistant: ... [used read_file]", "(read_file: ...)"), the newest kept
    within ``_COMPACT_INPUT_MAX_BYTES``; a turn before a forget marker is left out."""
    out = []
    total = 0
    turn = 0  # where the current turn's lines start in out
    for at, b in fs.lines(path, _COMPACT_READ_MAX_BYTES, start):  # a longer line comes in pieces: not JSON, skipped
        if at >= end:
            break
        try:
            m = json.loads(b)
            role, c = m.get("role"), m.get("content")
        except (ValueError, UnicodeError, AttributeError):
            continue
        c = _cap(c if isinstance(c, str) else "", _COMPACT_LINE_MAX_BYTES)
        if role == "forget":
            for x in out[turn:]:
                total -= len(seam.as_bytes(x)) + 1
            del out[turn:]
            continue
        if role == "user":
            turn = len(out)
            t = "User: " + c
        elif role == "assistant":
            calls = m.get("tool_calls")
            t = "Assistant: " + c + (" [used %s]" % ", ".join([str(x.get("name")) for x in calls]) if isinstance(
                calls, list) and calls and isinstance(calls[0], dict) else "")
        elif role == "tool":
            t = "(%s: %s)" % (m.get("name"), _cap(c, _COMPACT_LINE_MAX_BYTES // 3))
        else:
            continue
        out.append(t)
        total += len(seam.as_bytes(t)) + 1  # bytes: the lines are copied into update's scratch
        while total > _COMPACT_INPUT_MAX_BYTES:
            total -= len(seam.as_bytes(out.pop(0))) + 1
            turn = max(0, turn - 1)
    return out


def _put(mv, at, text):
    """Copy ``text``'s UTF-8 into ``mv`` at ``at``; returns where it ends."""
    b = seam.as_bytes(text)
    k = at + len(b)
    mv[at:k] = b
    return k


def _cap(text, n):
    """``text`` within ``n`` bytes of UTF-8, cut at a character and marked with "..."."""
    b = seam.as_bytes(text)
    if len(b) <= n:
        return text
    return str(b[:fs.utf8_end(b, n - 3)], "utf-8") + "..."


def retry_short(provider, system, messages, offered, err):
    """The reply to a request that did not fit the model's context (``err``, an
    ``LLMError`` with ``too_long``): ``messages`` are shortened in place (from the turn's
    question on, each tool result cut to ``_SHRINK_RESULT_BYTES``; the later rounds of
    the turn stay short) and sent once more. Raises ``LLMError`` with a message for the
    user when there is nothing to take out or it still does not fit."""
    from mimi.llm import LLMError

    i = len(messages) - 1  # this turn: from its question on
    while i > 0 and messages[i].get("role") != "user":
        i -= 1
    short = []
    for m in messages[max(i, 0):]:
        c = m.get("content")
        if m.get("role") == "tool" and isinstance(c, str) and len(seam.as_bytes(c)) > _SHRINK_RESULT_BYTES:
            m = dict(m)
            m["content"] = _cap(c, _SHRINK_RESULT_BYTES - 40) + "\n[result cut: the context was full]"
            i = 1
        short.append(m)
    if i <= 0:  # nothing older, no long result: no shorter request to try
        raise LLMError(_LONG % err.user_message, err.status)
    log.warn(_TAG, "context full: %d -> %d messages", len(messages), len(short))
    messages[:] = sessions.repair(short)[0]
    short = None
    try:
        return provider.chat(system, messages, offered, config.LLM_MAX_TOKENS)
    except LLMError as e:
        if e.too_long:
            raise LLMError(_LONG % e.user_message, e.status)
        raise
