"""The heartbeat: open tasks go to the agent, no tasks means no LLM call (both runtimes)."""
import support

from mimi import bus, commands, config, seam
from mimi import services as hb
from mimi.storage import fs

RUNTIMES = ("cpython", "micropython")

FILE = """# Heartbeat tasks

This file lists what to check every half hour. Tasks are list items.
<!-- example:
- [ ] not a task, inside a comment
-->

## Open
- [ ] water the plants if the soil sensor reads dry
- check the greenhouse temperature
1. [ ] numbered task
- [x] done already
- [ ]
* [X] also done
"""


def test_open_tasks_are_unticked_list_items():
    assert hb.open_tasks(FILE) == ["water the plants if the soil sensor reads dry",
                                   "check the greenhouse temperature", "numbered task"]
    assert hb.open_tasks("# Title\n\nJust prose here.\n- [x] done\n") == []
    assert hb.open_tasks("") == []
    assert len(hb.open_tasks("- t\n" * 50)) == config.HEARTBEAT_TASKS_MAX


def test_is_ok():
    assert hb.is_ok("HEARTBEAT_OK")
    assert hb.is_ok("  **HEARTBEAT_OK**  ")
    assert hb.is_ok("HEARTBEAT_OK - nothing due")
    assert hb.is_ok("heartbeat_ok.")
    assert not hb.is_ok("The plants need water: the sensor reads 12%.")
    assert not hb.is_ok("HEARTBEAT_OK but also: the greenhouse is at 41 degrees, open the windows now please")
    assert not hb.is_ok("")
    assert not hb.is_ok(None)


def test_no_tasks_no_message():
    support.fresh_flash()
    commands.allow("42")
    b = bus.Bus(4, 4)
    h = hb.Heartbeat(b, read=lambda: "# nothing\n- [x] done\n")
    assert "nothing to do" in h.run_now()
    assert len(b.inbound) == 0 and h.runs == 0


def test_tasks_go_to_the_agent_for_the_owner():
    support.fresh_flash()
    commands.allow("42")
    commands.allow("43")
    fs.write(config.HEARTBEAT_PATH, FILE)
    b = bus.Bus(4, 4)
    h = hb.Heartbeat(b)  # reads the real file
    assert "3 open tasks" in h.run_now()
    m = b.inbound.get(0)
    assert m["channel"] == "heartbeat" and m["chat_id"] == "42" and m["session"] == "hb_42"
    assert "- water the plants" in m["text"] and "HEARTBEAT_OK" in m["text"]
    assert "done already" not in m["text"]


def test_tasks_without_an_owner_are_not_sent():
    support.fresh_flash()
    b = bus.Bus(4, 4)
    h = hb.Heartbeat(b, read=lambda: "- [ ] a task\n")
    assert "no owner" in h.run_now() and len(b.inbound) == 0


def test_every_thirty_minutes():
    support.fresh_flash()
    commands.allow("42")
    b = bus.Bus(8, 4)
    h = hb.Heartbeat(b, read=lambda: "- [ ] a task\n")
    t = seam.ticks_ms()
    assert h.tick(t) is None
    assert h.tick(seam.ticks_add(t, config.HEARTBEAT_EVERY_MS - 1000)) is None
    assert "sent" in h.tick(seam.ticks_add(t, config.HEARTBEAT_EVERY_MS + 10))
    assert h.tick(seam.ticks_add(t, config.HEARTBEAT_EVERY_MS + 20)) is None
    assert len(b.inbound) == 1
