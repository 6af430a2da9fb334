"""``python -m host_sim bench``: the board side runs the firmware's turns under micropython;
500 turns fit in a 336 KB heap as .py files, and in 256 KB from the ROMFS image."""
import os
import subprocess
import sys

import pytest

from host_sim import hostenv

pytest.importorskip("host_sim.fakes.llm")

from host_sim import bench  # noqa: E402


@pytest.fixture(scope="module")
def fake():
    f = bench.start_fake()
    yield f
    f.stop()


def _soak(fake, heap):
    n0 = len(fake.requests)
    r, out = bench.run_board(fake.base_url, heap, "soak", 500)
    assert r is not None and "error" not in r, out[-3000:]
    assert (r["turns"], r["ok"], r["sorry"]) == (500, 500, 0), out[-3000:]
    # Every second turn made a tool call: 500 questions, 750 LLM requests (and the summary
    # calls of compaction, at most one per 5 turns, when the heap has room for them).
    posts = [q for q in fake.requests[n0:] if q["method"] == "POST"]
    r["summaries"] = len([q for q in posts if bench.is_summary_request(q)])
    assert len(posts) - r["summaries"] == 750 and r["summaries"] <= 100
    return r


def test_500_turns_run_in_a_336k_heap_without_running_out_of_memory(fake):
    # Issue 2's budget was 256 KB on this 64-bit port; the package of issues 12-17 holds
    # about 254 KB after init as .py files here (a 32-bit MicroPython as the chip's needs
    # far less; the chip's heap lives in PSRAM). What limits it is init, not the turns:
    # compiling the tool modules at init needs a 1280-byte block in a heap whose largest
    # free block is a few KB (micropython.mem_info()), so a few hundred bytes more before
    # them tip it. Measured: main before issues 17 and 18 started in 320 KB but not in
    # 312 KB; issue 18's rules and issue 17's per-turn caches (about 2 KB more code as .py)
    # each needed 324-328 KB; with both (and the web, MQTT and update settings) init fails
    # at 328 KB and passes at 332 KB: 336 KB keeps one step of margin. From ROMFS, as
    # deploy ships the package, 256 KB is ample (the
    # next test).
    _soak(fake, "336K")


def test_from_its_romfs_image_the_package_leaves_a_256k_heap_far_more_room(fake, tmp_path):
    # As tools/flash.sh deploys it: the package's bytecode runs from the image (flash on a
    # board), so between turns a 256 KB heap still has room. Measured: about 81 KB free at
    # the lowest over 500 turns.
    bench.use_romfs(str(tmp_path))
    try:
        r = _soak(fake, "256K")
    finally:
        bench.ROMFS.clear()
    assert r["lowest_free_between_turns"] > 64 * 1024, r
    files, _ = bench.run_board(fake.base_url, "512K", "soak", 4)
    assert r["heap_after_init"] < files["heap_after_init"] - 64 * 1024, (r, files)


def test_500_turns_leak_nothing():
    # In a heap with room to spare every turn must succeed, and what stays allocated
    # between turns after 500 of them is what stayed after 50 (by then the modules a turn
    # loads on first use are in, and the chat's window kept in RAM is full): a turn that
    # keeps anything more (a growing cache, a list of past replies) shows here long before
    # a board runs dry.
    f = bench.start_fake()
    try:
        r = _soak(f, "512K")
    finally:
        f.stop()
    assert r["heap_between_turns"] - r["heap_after_fifty_turns"] < 4096, r
    assert r["heap_after_fifty_turns"] - r["heap_after_two_turns"] < 16 * 1024, r  # the window: bounded


def test_the_figures_come_from_real_turns(fake, tmp_path):
    root = bench.flash()
    n0 = len(fake.requests)
    r, out = bench.run_board(fake.base_url, "512K", "figures", 6, 2, root=root)
    assert r is not None and "error" not in r, out[-3000:]
    # 8 turns, half with a tool call: 12 requests; and the session holds them all.
    assert len(fake.requests) - n0 == 12
    lines = open(os.path.join(root, "data", "sessions", "tg_1001.jsonl")).read().splitlines()
    assert len(lines) == 8 * 2 + 4 * 2  # question + answer each, plus call + result on tool turns
    # A tool turn writes more than a text turn (its call and result lines), and both write.
    assert 0 < r["written_text_turn"] < r["written_tool_turn"]
    assert r["context_bytes"] > 1000 and r["peak_heap"] > r["heap_between_turns"] > 0
    assert r["turns_failed"] == 0 and r["heap_total"] < 512 * 1024


def test_the_whole_app_answers_a_long_reply_in_a_board_sized_heap_and_not_in_a_tiny_one():
    pytest.importorskip("host_sim.fakes.telegram")
    assert bench.app_answers(2048, 16384)  # a board with 2 MB PSRAM, the simulator's default
    assert not bench.app_answers(256, 16384)  # the probe can fail: it is a measurement


def test_the_command_prints_every_figure():
    p = subprocess.run([sys.executable, "-m", "host_sim", "bench", "--turns", "4", "--peak-turns", "2", "--soak", "0",
                        "--smallest", "0", "--app", "", "--heaps", "512K"], cwd=hostenv.ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    for what in ("firmware time per turn", "peak GC heap during a turn", "context build", "session load",
                 "100,000-line file", "written to flash per turn"):
        assert what in p.stdout, p.stdout


def test_bench_idle_counts_the_idle_waits_and_the_spin_they_cost_on_the_chip():
    # tools/bench_idle.py: the app idles against the fake Telegram (long poll held open).
    # Both runs count the same waits; only the sleep_ms one spins on the chip (model).
    p = subprocess.run([sys.executable, os.path.join(hostenv.ROOT, "tools", "bench_idle.py"), "3"],
                       capture_output=True, text=True, timeout=180, cwd=hostenv.ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {}
    for ln in p.stdout.splitlines():
        if ln.startswith(("time.sleep_ms", "seam.wait_ms")):
            cells = ln.split(")", 1)[1].split()
            rows[ln.split()[0]] = [float(c) for c in cells]
    before, now = rows["time.sleep_ms"], rows["seam.wait_ms"]
    assert before[0] > 600 and now[0] > 600  # I/O passes per idle minute: the loop ran
    assert before[-1] >= 5 * before[1] * 0.9  # each wait of 10 ms or more spins 5 ms on average
    assert now[-1] == 0
    assert "0.0 s now" in p.stdout
