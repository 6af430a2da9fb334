"""The offline default's model stand-in: a few rules, not a model, that show the machinery.

``think(request_json) -> {"text": str, "calls": [(tool name, input dict), ...]}`` reads a
request as the firmware sends it, in either wire format (Anthropic Messages or OpenAI
Chat Completions: ``normalise`` tells them apart), and answers as a model would, through
the tools the request offers:

- "remember (that) X" (also "note that X", "don't forget X"): adds "- X" under
  "## Owner" in /data/memory/MEMORY.md with ``edit_file``; when that heading is gone it
  reads the file (``read_file``) and writes it back with the line added (``write_file``).
  The next turn's system prompt carries the file, so "what do you remember?" shows it.
- a question about the time or date: calls ``get_current_time`` and answers with its result.
- "remind me every day at 8 (am|pm) to X": calls ``cron_add`` (a daily job) and says what it did;
  "remind me in N seconds|minutes to X": a job that runs once (``at``: the board's local
  time, from the system prompt's UTC offset; whole minutes, so the first minute at least
  N from now).
- a scheduled job that has come due (the firmware's ``cron`` text of texts.md, with the
  job's text): answers with the reminder itself, which goes to the chat that made it.
- "what do you remember" / "what do you know about me": quotes the memory section of the
  system prompt it received (no tool: the firmware put it there).
- anything else: says what it is and what to try, and what the request held (tools offered,
  messages of history, bytes of system prompt).

Every text starts with ``MARK``, so nobody takes it for a real model. The fake LLM servers
(``host_sim/fakes/llm.py``) serve it as their ``responder``; see ``host_sim/chat.py``.
"""
import json
import os
import re
import time

MARK = "[offline stand-in, not a real model]"
MEMORY_PATH = "/data/memory/MEMORY.md"
_ANCHOR = "## Owner\n"
_MAX_ROUNDS = 4  # tool rounds in one turn before it gives up and says so

_REMEMBER = re.compile(r"^\s*(?:please\s+)?(?:remember|note|don'?t forget|do not forget)\b\s*(?:that\s+|:\s*)?(.+)$",
                       re.I | re.S)
_REMIND = re.compile(r"\bremind me\b.*?\b(?:every day|daily)\s+at\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s+(?:to\s+)?(.+)$",
                     re.I)
# Automations (issue 18): "which rules do you have?", "what is the chip's temperature?",
# "every 10 minutes tell me the chip temperature" (a rule the board runs without a model).
_RULES = re.compile(r"\b(?:which|what|list|show)\b.*\brules?\b|^/?rules\??$", re.I)
_TEMP = re.compile(r"\btemperature\b|温度", re.I)
_EVERY = re.compile(r"\bevery\s+(\d{1,4})\s*(m|min|mins|minutes?|h|hours?)\b", re.I)
_REMIND_IN = re.compile(r"\bremind me\b.*?\bin\s+(\d{1,4})\s*(s|sec|secs|seconds?|m|min|mins|minutes?)\s+(?:to\s+)?(.+)$",
                        re.I)
_REMINDER = re.compile(r"^Remind the owner to (.+?)(?: \(send_message\))?$", re.S)
_TIME = re.compile(r"\b(time|date|day|today|clock|hour)\b", re.I)
_RECALL = re.compile(r"\bwhat\b.*\b(remember|know about me|memory)\b", re.I)
_SECTIONS = ("\n# Recent daily notes", "\n# Your skills", "\n# This turn", "\n# For this message")


def _text_of(content):
    """The text of a message's content: a str, or a list of blocks / parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for b in content:
        if isinstance(b, dict) and b.get("type") in ("text", "input_text"):
            out.append(b.get("text", ""))
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            out.append(_text_of(b.get("content")))
    return "".join(out)


def normalise(req):
    """A request body (dict) in either wire format as ``(system, messages, tool names)``.

    ``messages``: dicts ``{"role": "user"|"assistant"|"tool", "text", "calls":
    [(id, name, input)], "call_id", "name", "is_error"}`` in order; a tool result's
    ``name`` comes from the call it answers.
    """
    msgs = []
    names = {}
    system = req.get("system")
    if isinstance(system, list):
        system = _text_of(system)
    system = system or ""
    for m in req.get("messages") or []:
        role = m.get("role")
        content = m.get("content")
        if role == "system":  # OpenAI puts the system prompt first among the messages
            system = _text_of(content)
        elif role == "tool":  # OpenAI tool result
            cid = m.get("tool_call_id")
            msgs.append({"role": "tool", "text": _text_of(content), "call_id": cid, "name": names.get(cid),
                         "is_error": False, "calls": []})
        elif role == "assistant":
            calls = []
            for tc in m.get("tool_calls") or []:  # OpenAI
                fn = tc.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                calls.append((tc.get("id"), fn.get("name"), args))
            if isinstance(content, list):  # Anthropic blocks
                for b in content:
                    if b.get("type") == "tool_use":
                        calls.append((b.get("id"), b.get("name"), b.get("input") or {}))
            for cid, name, _ in calls:
                names[cid] = name
            msgs.append({"role": "assistant", "text": _text_of(content), "calls": calls})
        elif isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            for b in content:  # Anthropic: one user message of tool results
                if b.get("type") == "tool_result":
                    cid = b.get("tool_use_id")
                    msgs.append({"role": "tool", "text": _text_of(b.get("content")), "call_id": cid,
                                 "name": names.get(cid), "is_error": bool(b.get("is_error")), "calls": []})
                elif b.get("type") == "text" and b.get("text"):
                    msgs.append({"role": "user", "text": b["text"], "calls": []})
        else:
            msgs.append({"role": "user", "text": _text_of(content), "calls": []})
    tools = []
    for t in req.get("tools") or []:
        tools.append(t.get("name") or t.get("function", {}).get("name"))
    return system, msgs, tools


def _memory_section(system):
    """The MEMORY.md part of the system prompt ("" when the prompt has none)."""
    i = system.find("(/data/memory/MEMORY.md)\n")
    if i < 0:
        return ""
    start = i + len("(/data/memory/MEMORY.md)\n")
    end = len(system)
    for head in _SECTIONS:
        j = system.find(head, start)
        if 0 <= j < end:
            end = j
    return system[start:end]


def _due_job_pattern():
    """A regex for the message a due job gives the model: the ``## cron`` text of the
    firmware's texts.md ("[scheduled job %s, %s; your reply goes to this chat] %s"), its
    three fields as groups (id, when, the job's text)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "firmware", "mimi", "texts.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    template = lines[lines.index("## cron") + 1]
    return re.compile("^" + "(.+?)".join(re.escape(part) for part in template.split("%s")) + "$", re.S)


_DUE = _due_job_pattern()


_OFFSET = re.compile(r"\(UTC([+-])(\d\d):(\d\d)")


def _local_minute(system, epoch_s):
    """"YYYY-MM-DD HH:MM" of the first whole minute at or after ``epoch_s`` in the board's
    local time: the UTC offset its system prompt gives ("Local time: ... (UTC+08:00, ...";
    mimi.clock.describe), else UTC. The board's clock is this machine's: the stand-in runs
    beside it."""
    m = _OFFSET.search(system)
    off = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 3600 + int(m.group(3)) * 60) if m else 0
    t = time.gmtime((int(epoch_s) + 59) // 60 * 60 + off)
    return "%04d-%02d-%02d %02d:%02d" % t[:5]


def _say(text, calls=()):
    return {"text": MARK + " " + text if text else "", "calls": list(calls)}


def _fact(user_text):
    m = _REMEMBER.match(user_text or "")
    if not m:
        return None
    fact = " ".join(m.group(1).split()).rstrip(".")
    return fact or None


def think(req):
    """Answer one request (its JSON body, either protocol): ``{"text", "calls"}``."""
    system, msgs, tools = normalise(req)
    if not tools and "running summary" in system:  # the agent's compaction call (mimi.agent.compact)
        asked = [ln[6:].strip() for ln in (msgs[-1]["text"] if msgs else "").splitlines() if ln[:6] == "User: "]
        return _say("You asked about: " + "; ".join(a[:60] for a in asked[-8:]) + "." if asked else "")
    # This turn: the last user message and what followed it (tool calls and results).
    start = 0
    for k in range(len(msgs) - 1, -1, -1):
        if msgs[k]["role"] == "user":
            start = k
            break
    user = msgs[start]["text"] if msgs else ""
    turn = msgs[start + 1:]
    rounds = sum(1 for m in turn if m["role"] == "assistant" and m["calls"])
    last = turn[-1] if turn and turn[-1]["role"] == "tool" else None
    fact = _fact(user)

    if last is not None:
        return _after_tool(last, fact, rounds, tools)
    due = _DUE.match(user.strip())
    if due:
        jid, when, what = due.groups()
        m = _REMINDER.match(what.strip())
        return _say("Reminder: %s (scheduled job %s, %s)" % (m.group(1) if m else what.strip(), jid, when))
    if fact:
        return _remember(fact, system, tools)
    if _RECALL.search(user):
        mem = [ln[2:] for ln in _memory_section(system).splitlines() if ln.startswith("- ")]
        if not mem:
            return _say("My system prompt has no lines in /data/memory/MEMORY.md yet. "
                        "Say \"remember that ...\" and I will write one there.")
        return _say("From /data/memory/MEMORY.md, which the firmware put in my system prompt:\n"
                    + "\n".join("- " + ln for ln in mem))
    m = _REMIND.search(user)
    if m:
        if "cron_add" not in tools:
            return _say("The cron tools are not offered in this chat, so I cannot set a reminder here.")
        h = int(m.group(1)) % 12 + (12 if (m.group(3) or "").lower() == "pm" else 0) if m.group(3) else int(m.group(1))
        what = " ".join(m.group(4).split()).rstrip(".")
        return _say("", [("cron_add", {"kind": "daily", "hhmm": "%02d:%02d" % (h, int(m.group(2) or 0)),
                                       "text": "Remind the owner to " + what + " (send_message)"})])
    m = _REMIND_IN.search(user)
    if m:
        if "cron_add" not in tools:
            return _say("The cron tools are not offered in this chat, so I cannot set a reminder here.")
        n = int(m.group(1)) * (60 if m.group(2).lower().startswith("m") else 1)
        what = " ".join(m.group(3).split()).rstrip(".")
        return _say("", [("cron_add", {"kind": "at", "at": _local_minute(system, time.time() + n),
                                       "text": "Remind the owner to " + what + " (send_message)"})])
    m = _EVERY.search(user)
    if m and _TEMP.search(user) and "rule_add" in tools:
        n = int(m.group(1)) * (3600 if m.group(2).lower().startswith("h") else 60)
        return _say("", [("rule_add", {"name": "chip temperature every %s%s" % (m.group(1), m.group(2)[0].lower()),
                                       "when": {"every_s": n},
                                       "do": [{"message": "The chip is at {mcu} °C ({time})"}]})])
    if _RULES.search(user.strip()) and "rule_list" in tools:
        return _say("", [("rule_list", {})])
    if _TEMP.search(user) and "sensor_read" in tools:
        return _say("", [("sensor_read", {"sensor": "mcu"})])
    if _TIME.search(user):
        if "get_current_time" not in tools:
            return _say("The get_current_time tool is not offered here, so I cannot tell the time.")
        return _say("", [("get_current_time", {})])
    return _say("I am not a model, just a few rules that show how mimi works. "
                "Try \"remember that my cat is called Miso\", \"what time is it?\", "
                "\"what do you remember?\", \"remind me every day at 8 to water the plants\", \"what is the chip's "
                "temperature?\", \"every 10 minutes tell me the chip temperature\" (a rule the board runs itself) or "
                "\"which rules do you have?\". This request carried %d tools, %d messages of history "
                "and a system prompt of %d bytes. With an API key (MIMI_API_KEY) a real model answers."
                % (len(tools), len(msgs) - 1, len(system.encode())))


def _remember(fact, system, tools):
    line = "- " + fact + "\n"
    if _ANCHOR.strip() in _memory_section(system) and "edit_file" in tools:
        return _say("", [("edit_file", {"path": MEMORY_PATH, "old_text": _ANCHOR, "new_text": _ANCHOR + line})])
    if "read_file" in tools and "write_file" in tools:
        return _say("", [("read_file", {"path": MEMORY_PATH})])
    return _say("The file tools are not offered in this chat, so I cannot write to memory here.")


def _after_tool(last, fact, rounds, tools):
    name, result = last["name"], last["text"]
    failed = last["is_error"] or result.lower().startswith("error")
    if rounds >= _MAX_ROUNDS:
        return _say("I stop here after %d tool calls; the last one (%s) said: %s" % (rounds, name, result[:200]))
    if name == "get_current_time":
        if failed:
            return _say("get_current_time failed: %s" % result[:200])
        return _say("get_current_time says:\n%s" % result.strip())
    if name == "rule_add":
        if failed:
            return _say("rule_add refused it: %s" % result[:200])
        return _say("rule_add says: %s\nThe board runs it from now on without me (no model call); "
                    "/rules lists it, /rules pause <id> pauses it." % result.strip())
    if name in ("rule_list", "sensor_read"):
        return _say("%s says:\n%s" % (name, result.strip()))
    if name == "cron_add":
        if failed:
            return _say("cron_add refused it: %s" % result[:200])
        return _say("cron_add says: %s\nWhen it is due the firmware hands the job's text to the model as a "
                    "message, and the answer (here: the reminder) comes to this chat. cron_list shows it, "
                    "cron_remove deletes it." % result.strip())
    if fact and name == "edit_file" and failed and "read_file" in tools and "write_file" in tools:
        return _say("", [("read_file", {"path": MEMORY_PATH})])
    if fact and name == "read_file":
        content = "" if failed else result
        if content and not content.endswith("\n"):
            content += "\n"
        return _say("", [("write_file", {"path": MEMORY_PATH, "content": content + "- " + fact + "\n"})])
    if fact and name in ("edit_file", "write_file"):
        if failed:
            return _say("I could not write to memory: %s" % result[:200])
        return _say("Noted: \"%s\" is now a line in /data/memory/MEMORY.md (%s did it). That file is in "
                    "my system prompt from the next message on: ask \"what do you remember?\"" % (fact, name))
    return _say("The tool %s answered: %s" % (name, result[:300]))
