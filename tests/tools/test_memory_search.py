"""memory_search (seed 003): keywords, two lines around, 50 matches, 10,000 bytes."""
from mimi import config
from mimi.storage import fs
from mimi.tools import memory_tools, registry
import support

RUNTIMES = ("cpython", "micropython")

CTX = {"channel": "telegram", "chat_id": "42", "session": "tg_42", "bus": None}  # the owner's


def _setup():
    support.fresh_flash()
    config.set("owner_chat", "42")  # the other chats search their own notes: tests/runtime/test_trust.py
    registry.clear()
    memory_tools.register_all()


def run(**args):
    return registry.execute("memory_search", args, CTX)


def test_no_notes_is_a_hint_not_an_error():
    _setup()
    out, err = run(query="tea")
    assert not err and "no memory notes yet" in out and "/data/memory/MEMORY.md" in out


def test_matching_lines_with_two_lines_around():
    _setup()
    fs.write("/data/memory/MEMORY.md", "a\nb\nc\nLikes TEA\nd\ne\nf\ng\nh\ni\nj\nowns a cat\nk\n")
    fs.write("/data/memory/2026-01-05.md", "# 2026-01-05\n\n- bought tea\n")
    out, err = run(query="tea cat")
    assert not err
    assert out == ("== /data/memory/MEMORY.md\n2- b\n3- c\n4: Likes TEA\n5- d\n6- e\n--\n"
                   "10- i\n11- j\n12: owns a cat\n13- k\n"
                   "== /data/memory/2026-01-05.md\n1- # 2026-01-05\n2- \n3: - bought tea\n"
                   "3 matches"), out
    assert run(query="dog")[0] == "no line in the memory notes mentions: dog"


def test_adjacent_hits_share_their_context():
    _setup()
    fs.write("/data/memory/MEMORY.md", "x\ntea 1\ny\ntea 2\nz\n")
    assert run(query="tea")[0] == "== /data/memory/MEMORY.md\n1- x\n2: tea 1\n3- y\n4: tea 2\n5- z\n2 matches"


def test_one_file_only():
    _setup()
    fs.write("/data/memory/MEMORY.md", "tea\n")
    fs.write("/data/memory/2026-01-05.md", "tea\n")
    out = run(query="tea", file="2026-01-05")[0]
    assert "2026-01-05.md" in out and "MEMORY.md" not in out
    out, err = run(query="tea", file="../secrets")
    assert err


def test_at_most_50_matches():
    _setup()
    fs.write("/data/memory/MEMORY.md", "".join("tea %d\n" % i for i in range(200)))
    out = run(query="tea")[0]
    assert out.count(": tea ") == config.MEMORY_SEARCH_MAX_MATCHES
    assert "limit reached" in out


def test_output_at_most_10000_bytes():
    _setup()
    fs.write("/data/memory/MEMORY.md", "".join("tea %s\n" % ("中" * 300) for i in range(40)))
    out, err = run(query="tea")
    assert not err and len(out.encode()) <= config.MEMORY_SEARCH_MAX_BYTES
    assert "limit reached" in out and "[truncated" not in out
