"""tools/bench_peer.py runs and prints its figures (mimi alone: ChipClaw is not in the repo)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_peer_prints_figures_and_no_failed_turn():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_peer.py"), "--turns", "4", "--rounds", "1",
                        "--no-smallest"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for row in ("firmware CPU per turn", "allocated per turn", "live heap peak", "heap after init"):
        assert row in out, out
    failed = [ln for ln in out.splitlines() if "turns that failed" in ln][0]
    assert failed.split()[-1] == "0", out
    cpu = [ln for ln in out.splitlines() if "firmware CPU per turn" in ln][0]
    assert float(cpu.split()[-2]) > 0, out  # a real CPU figure, not a zero from a broken run


def test_bench_peer_refuses_a_folder_that_is_not_chipclaw(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_peer.py"), "--chipclaw", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no chipclaw/ package" in p.stderr


def test_bench_peer_profile_names_the_steps_of_a_turn():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_peer.py"), "--turns", "4", "--profile"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("  ") and "ms/turn" not in ln]
    steps = {ln[:64].strip(): ln.split() for ln in rows if not ln.startswith("  (")}
    for want in ("session window (sessions.load)", "messages to flash (sessions.append)",
                 "request body into the reply buffer (wire.into)", "tools run (registry.execute)"):
        assert want in steps, p.stdout
    assert float(steps["messages to flash (sessions.append)"][-2]) == 3.0  # question, call, result... a mean of 3
