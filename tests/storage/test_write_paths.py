"""The remaining write paths, each cut at every step: the tools' writes and edits, cron
removal, session clear, and a rotation that prunes the oldest archive."""
import json

from mimi import config
from mimi.storage import cronjobs, fs, sessions
from mimi.tools import files, registry
import power_cut
import support

RUNTIMES = ("cpython", "micropython")

OLD = "# Memory\n" + "- old fact\n" * 120


def _tool(name, **args):
    out, err = registry.execute(name, args, {"channel": "cli"})  # the owner at the console
    if err and "cut" in out:
        raise power_cut.Cut(out)  # the registry turns the cut into a result; a power cut is not
    return out


def test_write_file_and_edit_file_tools():
    root = support.fresh_flash()
    registry.clear()
    files.register_all()

    def setup():
        support.write(root + "/data/memory/MEMORY.md", OLD)

    def verify():
        text = fs.read("/data/memory/MEMORY.md", 20000)[0].decode()
        assert text in (OLD, "new\n" * 500, OLD.replace("# Memory", "# Long-term memory")), len(text)

    power_cut.each_cut(setup, lambda: _tool("write_file", path="/data/memory/MEMORY.md", content="new\n" * 500),
                       verify)
    power_cut.each_cut(setup, lambda: _tool("edit_file", path="/data/memory/MEMORY.md", old_text="# Memory",
                                            new_text="# Long-term memory"), verify)


def test_cron_remove():
    root = support.fresh_flash()
    jobs = []
    for i in range(1, 4):
        j = cronjobs.validate({"kind": "every", "every_s": 600, "text": "job %d" % i, "chat_id": "1"}, 1767225600)
        j["id"] = "j%d" % i
        jobs.append(j)
    text = json.dumps({"seq": 3, "jobs": jobs})

    def setup():
        support.write(root + "/data/cron.json", text)

    def verify():
        assert [j["id"] for j in cronjobs.list()] in (["j1", "j2", "j3"], ["j1", "j3"])

    power_cut.each_cut(setup, lambda: cronjobs.remove("j2"), verify)


def test_session_clear_and_a_pruning_rotation():
    root = support.fresh_flash()
    lines = "".join(json.dumps({"role": "user", "content": "m%d" % i}) + "\n" for i in range(30))

    def setup():
        support.rmtree(root + "/data/sessions")
        support.write(root + "/data/sessions/tg_1.jsonl", lines)
        for n in (1, 2, 3):
            support.write(root + "/data/sessions/archive/tg_1.%d.jsonl" % n, '{"role":"user","content":"a%d"}\n' % n)

    def verify():
        seen = []
        for name, _, _ in fs.listdir("/data/sessions/archive"):
            seen.append(fs.read("/data/sessions/archive/" + name, 100000)[0])
        if fs.size("/data/sessions/tg_1.jsonl") is not None:
            seen.append(fs.read("/data/sessions/tg_1.jsonl", 100000)[0])
        allb = b"".join(seen)
        for i in range(30):
            assert ('"m%d"' % i).encode() in allb, i  # the history being archived is never lost
        sessions.load("tg_1")

    saved = (config.SESSION_ROTATE_BYTES, config.SESSION_ARCHIVES_MAX)
    config.SESSION_ROTATE_BYTES, config.SESSION_ARCHIVES_MAX = 600, 3
    try:
        power_cut.each_cut(setup, lambda: sessions.clear("tg_1"), verify)
        power_cut.each_cut(setup, lambda: sessions.append("tg_1", {"role": "user", "content": "new"}), verify)
    finally:
        config.SESSION_ROTATE_BYTES, config.SESSION_ARCHIVES_MAX = saved
