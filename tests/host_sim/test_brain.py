"""The offline stand-in's rules, on requests in both wire formats."""
import json

import pytest

from host_sim import brain

TOOLS = ["read_file", "write_file", "edit_file", "list_dir", "get_current_time", "memory_search"]
MEMORY = "# Long-term memory\n\n## Owner\n- likes tea\n\n## People\n"
SYSTEM = ("# Who you are\nYou are mimi.\n"
          "\n# Long-term memory (/data/memory/MEMORY.md)\n" + MEMORY +
          "\n# Recent daily notes\n- not a memory line\n\n# This turn\nchannel telegram\n")


def anthropic(turns, system=SYSTEM, tools=TOOLS):
    """turns: ("user", text) | ("call", id, name, input) | ("result", id, text, is_error)."""
    msgs = []
    for t in turns:
        if t[0] == "user":
            msgs.append({"role": "user", "content": t[1]})
        elif t[0] == "call":
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": t[1], "name": t[2], "input": t[3]}]})
        else:
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": t[1], "content": t[2],
                                                      "is_error": t[3]}]})
    return {"model": "m", "max_tokens": 1024, "system": system, "messages": msgs,
            "tools": [{"name": n, "description": "", "input_schema": {"type": "object"}} for n in tools]}


def openai(turns, system=SYSTEM, tools=TOOLS):
    msgs = [{"role": "system", "content": system}]
    for t in turns:
        if t[0] == "user":
            msgs.append({"role": "user", "content": t[1]})
        elif t[0] == "call":
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": t[1], "type": "function", "function": {"name": t[2], "arguments": json.dumps(t[3])}}]})
        else:
            msgs.append({"role": "tool", "tool_call_id": t[1], "content": ("Error: " if t[3] else "") + t[2]})
    return {"model": "m", "messages": msgs,
            "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in tools]}


BOTH = pytest.mark.parametrize("fmt", [anthropic, openai], ids=["anthropic", "openai"])


@BOTH
def test_remember_edits_memory_under_the_owner_heading_then_confirms(fmt):
    r = brain.think(fmt([("user", "Remember that my cat is called Miso.")]))
    assert r["text"] == ""
    assert r["calls"] == [("edit_file", {"path": "/data/memory/MEMORY.md", "old_text": "## Owner\n",
                                         "new_text": "## Owner\n- my cat is called Miso\n"})]
    r = brain.think(fmt([("user", "Remember that my cat is called Miso."),
                         ("call", "t1", "edit_file", r["calls"][0][1]),
                         ("result", "t1", "edited /data/memory/MEMORY.md", False)]))
    assert r["calls"] == []
    assert r["text"].startswith(brain.MARK) and "my cat is called Miso" in r["text"] and "edit_file" in r["text"]


@BOTH
def test_remember_without_the_heading_reads_then_writes_the_whole_file(fmt):
    system = SYSTEM.replace("## Owner\n", "")
    turns = [("user", "note: the wifi is in the attic")]
    r = brain.think(fmt(turns, system=system))
    assert r["calls"] == [("read_file", {"path": "/data/memory/MEMORY.md"})]
    turns += [("call", "a", "read_file", {"path": "/data/memory/MEMORY.md"}), ("result", "a", "# Mem\n- old", False)]
    r = brain.think(fmt(turns, system=system))
    assert r["calls"] == [("write_file", {"path": "/data/memory/MEMORY.md",
                                          "content": "# Mem\n- old\n- the wifi is in the attic\n"})]
    turns += [("call", "b", "write_file", r["calls"][0][1]), ("result", "b", "wrote 40 bytes", False)]
    r = brain.think(fmt(turns, system=system))
    assert "the wifi is in the attic" in r["text"] and r["calls"] == []


@BOTH
def test_a_failed_edit_falls_back_to_read_and_write(fmt):
    turns = [("user", "remember my bike is blue"), ("call", "x", "edit_file", {}),
             ("result", "x", "old_text not found", True)]
    assert brain.think(fmt(turns))["calls"] == [("read_file", {"path": "/data/memory/MEMORY.md"})]


@BOTH
def test_the_time_comes_from_get_current_time(fmt):
    r = brain.think(fmt([("user", "What time is it?")]))
    assert r == {"text": "", "calls": [("get_current_time", {})]}
    r = brain.think(fmt([("user", "What time is it?"), ("call", "c", "get_current_time", {}),
                         ("result", "c", "2026-01-01 08:00 Thursday (UTC+08:00)", False)]))
    assert "2026-01-01 08:00 Thursday" in r["text"] and r["text"].startswith(brain.MARK)


@BOTH
def test_recall_quotes_only_the_memory_section_of_the_system_prompt(fmt):
    r = brain.think(fmt([("user", "hi"), ("user", "What do you remember?")]))
    assert "- likes tea" in r["text"] and "not a memory line" not in r["text"] and not r["calls"]
    r = brain.think(fmt([("user", "what do you remember")], system="# Who you are\n"))
    assert "no lines" in r["text"]


@BOTH
def test_anything_else_says_it_is_not_a_model_and_what_the_request_held(fmt):
    r = brain.think(fmt([("user", "one"), ("user", "Tell me a joke")]))
    assert r["text"].startswith(brain.MARK) and "not a model" in r["text"]
    assert "6 tools" in r["text"] and "1 messages of history" in r["text"]
    assert "%d bytes" % len(SYSTEM.encode()) in r["text"]


@BOTH
def test_tools_not_offered_are_never_called(fmt):
    assert brain.think(fmt([("user", "what time is it")], tools=["read_file"]))["calls"] == []
    r = brain.think(fmt([("user", "remember x")], tools=["get_current_time"]))
    assert r["calls"] == [] and "not offered" in r["text"]


def test_it_stops_after_a_few_tool_rounds():
    turns = [("user", "remember z")]
    for i in range(4):
        turns += [("call", "r%d" % i, "edit_file", {}), ("result", "r%d" % i, "busy", True)]
    r = brain.think(anthropic(turns))
    assert r["calls"] == [] and "stop" in r["text"]


@pytest.mark.parametrize("fmt", [anthropic, openai])
def test_a_daily_reminder_becomes_a_cron_job(fmt):
    tools = TOOLS + ["cron_add"]
    r = brain.think(fmt([("user", "Please remind me every day at 8pm to water the plants.")], tools=tools))
    assert r["calls"] == [("cron_add", {"kind": "daily", "hhmm": "20:00",
                                        "text": "Remind the owner to water the plants (send_message)"})]
    r = brain.think(fmt([("user", "remind me daily at 7:30 stretch"), ("call", "c1", "cron_add", {}),
                         ("result", "c1", "added j3: daily at 07:30", False)], tools=tools))
    assert "added j3" in r["text"] and r["calls"] == []
    r = brain.think(fmt([("user", "remind me every day at 8 to water the plants")]))  # no cron_add offered
    assert r["calls"] == [] and "not offered" in r["text"]


@BOTH
def test_a_reminder_in_some_minutes_is_a_job_that_runs_once(fmt):
    import time

    tools = TOOLS + ["cron_add"]
    system = SYSTEM + "Local time: Monday 2026-01-05 14:30 (UTC+08:00, mode: work).\n"
    before = time.time()
    r = brain.think(fmt([("user", "remind me in 2 minutes to take the bread out")], system=system, tools=tools))
    after = time.time()
    (name, args), = r["calls"]
    assert name == "cron_add" and args["kind"] == "at"
    assert args["text"] == "Remind the owner to take the bread out (send_message)"
    # The first whole minute at least 2 minutes from now, in the board's time zone (UTC+8).
    wants = {time.strftime("%Y-%m-%d %H:%M", time.gmtime((int(t) + 120 + 59) // 60 * 60 + 8 * 3600))
             for t in (before, after)}
    assert args["at"] in wants, (args, wants)


@BOTH
def test_a_due_job_is_answered_with_the_reminder_not_the_generic_text(fmt):
    # The message the firmware's cron service gives the model (texts.md "## cron").
    from mimi import commands

    due = commands.text("cron", "j7", "once", "Remind the owner to water the plants (send_message)")
    r = brain.think(fmt([("user", due)]))
    assert r["calls"] == []
    assert r["text"] == brain.MARK + " Reminder: water the plants (scheduled job j7, once)", r["text"]
    other = commands.text("cron", "j8", "daily at 08:00 (local)", "Check the greenhouse door")
    r = brain.think(fmt([("user", other)]))
    assert "Reminder: Check the greenhouse door (scheduled job j8, daily at 08:00 (local))" in r["text"]
    assert "I am not a model" not in r["text"]


@BOTH
def test_automations_offline_a_sensor_read_a_rule_and_the_rule_list(fmt):
    tools = TOOLS + ["rule_add", "rule_list", "sensor_read"]
    r = brain.think(fmt([("user", "What is the chip's temperature?")], tools=tools))
    assert r["calls"] == [("sensor_read", {"sensor": "mcu"})]
    r = brain.think(fmt([("user", "every 10 minutes tell me the chip temperature")], tools=tools))
    assert r["calls"] == [("rule_add", {"name": "chip temperature every 10m", "when": {"every_s": 600},
                                        "do": [{"message": "The chip is at {mcu} °C ({time})"}]})]
    r = brain.think(fmt([("user", "every 10 minutes tell me the chip temperature"), ("call", "r", "rule_add", {}),
                         ("result", "r", "added rule r1", False)], tools=tools))
    assert r["calls"] == [] and "added rule r1" in r["text"] and "without me" in r["text"]
    r = brain.think(fmt([("user", "which rules do you have?")], tools=tools))
    assert r["calls"] == [("rule_list", {})]
    r = brain.think(fmt([("user", "every 2 hours tell me the temperature")]))  # no rule tools offered
    assert r["calls"] == []
