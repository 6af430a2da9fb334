"""Long conversations: a running summary of what left the window, and a shorter request
when the model's context is full (issue 13, items 14 and 15).

Compaction (nanobot, PicoClaw, ZeroClaw and exoclaw keep one too). A request carries the
last 20 messages of a chat (``mimi.storage.sessions``); what is older would be lost to
the model. So at the end of a turn, at most every ``_COMPACT_EVERY_TURNS`` turns of a
chat and only once its history is longer than the window, the model is asked in one
small extra call (no tools, at most ``_COMPACT_MAX_TOKENS``) to fold the messages before
the newest ``_COMPACT_KEEP_MSGS`` into the summary so far: they are summarised before
they leave the window. The transcript it reads is capped (``_COMPACT_INPUT_MAX_BYTES``,
each message ``_COMPACT_LINE_MAX_BYTES``, tool results shorter still), and a refused
turn is never in it. The summary (at most ``_COMPACT_SUMMARY_MAX_BYTES``) is kept in
``/data/sessions/<key>.summary.json`` (``{"text", "upto", "gen"}``: the byte offset
summarised up to, and the session file's ``generation``, since a rotation moves the
offsets) and goes into the system prompt of every later turn of that chat
(``mimi.agent.context``, "Earlier in this chat"). ``/new`` clears it
(``sessions.clear``). The setting ``compact`` ("on", or "off": no calls, no summary)
turns it off. Cron and heartbeat sessions are not summarised (they run unattended).
Cost (``tools/bench_compact.py``, fake LLM's token counts): see the README, "Talking to
it". A failed summary call is logged and tried again at the next due turn; the user
never hears of it.

Shrinking (``shrink``): when a request does not fit the model's context window
(``LLMError.too_long``), the agent retries once with only this turn's messages and every
tool result cut to ``_SHRINK_RESULT_BYTES``.
"""
import json

from micropython import const

from mimi import config, log, seam
from mimi.storage import fs, sessions

# Tunables (config.py holds those shared by several modules and the settings).
_COMPACT_EVERY_TURNS = const(5)  # one summary call per this many turns of a chat, at most
_COMPACT_KEEP_MSGS = const(10)  # the newest messages left out of a summary (still in the window)
_COMPACT_SUMMARY_MAX_BYTES = const(1024)  # the summary kept and given to each turn
_COMPACT_INPUT_MAX_BYTES = const(6144)  # the transcript one summary call reads
_COMPACT_LINE_MAX_BYTES = const(400)  # one message in it (a tool result: a third of this)
_COMPACT_READ_MAX_BYTES = const(4096)  # a stored line longer than this is named, not read
_COMPACT_MAX_TOKENS = const(400)  # the summary call's reply
_SHRINK_RESULT_BYTES = const(512)  # tool results in a request retried for the context window

_TAG = const("compact")
_PROMPT = const("You keep the running summary of a chat between a person and their assistant, mimi. You get the "
                "summary so far and the messages that come after it. Write the new summary: what the assistant "
                "will need later (facts about the person, decisions, promises, open tasks, names, numbers, file "
                "paths), oldest first, in short plain lines, in the chat's language, under 700 characters. Leave "
                "out greetings and small talk. Write only the summary.")
_turns = {}  # session key -> turns since its last summary check (RAM: a reboot checks at the next turn)


def enabled(key):
    """Whether chat ``key`` is summarised: the setting is not "off" and it is a person's chat."""
    return config.get("compact") != "off" and key[:5] != "cron_" and key[:3] != "hb_"


def _state(key):
    """The stored summary ``{"text", "upto", "gen"}`` of ``key`` (empty text when none)."""
    try:
        d = json.loads(fs.read(sessions.summary_path(key), _COMPACT_SUMMARY_MAX_BYTES * 2 + 256)[0])
        if isinstance(d, dict) and isinstance(d.get("text"), str):
            return d
    except (OSError, ValueError):  # none yet, or damaged: start afresh
        pass
    return {"text": "", "upto": 0, "gen": 0}


def summary(key):
    """The summary to give this turn of chat ``key`` ("" when none or compaction is off)."""
    return _state(key)["text"] if enabled(key) else ""


def after_turn(key, provider, window_full):
    """Bring the summary of ``key`` up to date when due (module doc); never raises.

    ``window_full``: the turn's window did not hold the whole history (messages before it
    exist: ``sessions.report["start"] > 0`` after its load). Returns True when a summary
    call was made. Side effects: one LLM call, tokens counted (``usage``), the summary
    file written.
    """
    if not enabled(key):
        return False
    n = _turns.get(key, _COMPACT_EVERY_TURNS - 1) + 1  # after a reboot: check at once
    if len(_turns) > 16 and key not in _turns:
        _turns.clear()  # bounded: a dropped count only brings a check forward
    _turns[key] = n
    if n < _COMPACT_EVERY_TURNS or not window_full:
        return False
    _turns[key] = 0
    try:
        return _update(key, provider)
    except Exception as e:  # noqa: BLE001 - a summary is a bonus: the chat goes on without it
        log.warn(_TAG, "%s: %s", key, getattr(e, "user_message", None) or repr(e))
        return False


def _update(key, provider):
    from mimi.llm import usage

    st = _state(key)
    gen = sessions.generation(key)
    upto = st.get("upto") if st.get("gen") == gen else 0  # rotated or cleared: offsets start again
    sessions.load(key, _COMPACT_KEEP_MSGS)
    cut = sessions.report["start"]
    if not isinstance(upto, int) or cut <= upto:
        return False
    lines = _transcript(sessions.path_for(key), upto, cut)
    if not lines:
        st["upto"], st["gen"] = cut, gen
        fs.write(sessions.summary_path(key), json.dumps(st))
        return False
    ask = "Summary so far:\n%s\n\nThe messages after it:\n%s" % (st["text"] or "(none)", "\n".join(lines))
    lines = None
    reply = provider.chat(_PROMPT, [{"role": "user", "content": ask}], None, _COMPACT_MAX_TOKENS)
    ask = None
    usage.add(reply["usage"])
    text = _cap(reply["text"].strip(), _COMPACT_SUMMARY_MAX_BYTES)
    if not text:
        return True  # nothing usable: the old summary stays, and so does its offset
    fs.write(sessions.summary_path(key), json.dumps({"text": text, "upto": cut, "gen": gen}))
    log.info(_TAG, "%s: %d bytes of summary", key, len(text))
    return True


def _transcript(path, start, end):
    """The messages in bytes ``start``..``end`` of a session file as short lines
    ("User: ...", "Assistant: ...", "(read_file result: ...)"), newest kept within
    ``_COMPACT_INPUT_MAX_BYTES``; a turn before a forget marker is left out."""
    out = []
    total = 0
    turn = 0  # where the current turn's lines start in out
    for b in _lines(path, start, end):
        m = None
        if b is not None:
            try:
                m = json.loads(b)
            except (ValueError, UnicodeError):
                continue
        if m is None:
            t = "(a long message, kept in the chat's file)"
        elif not isinstance(m, dict):
            continue
        else:
            role = m.get("role")
            c = m.get("content")
            c = c if isinstance(c, str) else ""
            if role == "forget":
                for x in out[turn:]:
                    total -= len(x) + 1
                del out[turn:]
                continue
            if role == "user":
                turn = len(out)
                t = "User: " + _cap(c, _COMPACT_LINE_MAX_BYTES)
            elif role == "assistant":
                calls = m.get("tool_calls")
                names = [x.get("name") for x in calls if isinstance(x, dict) and isinstance(x.get("name"), str)] \
                    if isinstance(calls, list) else []
                if not c and not names:
                    continue
                t = "Assistant: " + _cap(c, _COMPACT_LINE_MAX_BYTES) + (
                    " [used %s]" % ", ".join(names) if names else "")
            elif role == "tool":
                t = "(%s result: %s)" % (m.get("name") or "tool", _cap(c, _COMPACT_LINE_MAX_BYTES // 3))
            else:
                continue
        out.append(t)
        total += len(t) + 1
        while total > _COMPACT_INPUT_MAX_BYTES and out:
            total -= len(out.pop(0)) + 1
            turn = max(0, turn - 1)
    return out


def _lines(path, start, end):
    """Each line in bytes ``start``..``end`` of ``path`` (bytes, without the newline), or
    None for one over ``_COMPACT_READ_MAX_BYTES``. Reads ``FS_CHUNK_BYTES`` at a time."""
    f, size = fs.open_read(path)
    try:
        end = min(end, size)
        f.seek(start)
        pos = start
        pend = b""
        long_ = False
        while pos < end:
            chunk = f.read(min(config.FS_CHUNK_BYTES, end - pos))
            if not chunk:
                break
            pos += len(chunk)
            i = 0
            while True:
                j = chunk.find(b"\n", i)
                part = chunk[i:j if j >= 0 else len(chunk)]
                if not long_:
                    if len(pend) + len(part) > _COMPACT_READ_MAX_BYTES:
                        long_ = True
                        pend = b""
                    else:
                        pend += part
                if j < 0:
                    break
                yield None if long_ else pend
                pend = b""
                long_ = False
                i = j + 1
        if pend or long_:
            yield None if long_ else pend
    finally:
        f.close()


def _cap(text, n):
    """``text`` within ``n`` bytes of UTF-8, cut at a character and marked with "..."."""
    b = seam.as_bytes(text)
    if len(b) <= n:
        return text
    return str(b[:fs.utf8_end(b, n - 3)], "utf-8") + "..."


def shrink(messages):
    """A shorter copy of a request's ``messages`` for a model whose context is full: from
    the last user message on (this turn), each tool result cut to ``_SHRINK_RESULT_BYTES``.
    Returns None when that is no shorter (nothing left to take out)."""
    i = len(messages) - 1
    while i > 0 and messages[i].get("role") != "user":
        i -= 1
    out = []
    changed = i > 0
    for m in messages[max(i, 0):]:
        c = m.get("content")
        if m.get("role") == "tool" and isinstance(c, str) and len(seam.as_bytes(c)) > _SHRINK_RESULT_BYTES:
            m = dict(m)
            m["content"] = _cap(c, _SHRINK_RESULT_BYTES - 40) + "\n[result cut: the context was full]"
            changed = True
        out.append(m)
    return out if changed else None
