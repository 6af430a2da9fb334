"""The whole mimi package imports under a 320 KB MicroPython heap within budget (issue 2).

The budgeted figure is the package as tools/flash.sh deploys it: a ROMFS image whose
bytecode runs from flash (tools/bench_import.py explains the measure). The .py files'
figure is printed beside it and must stay far above, or the ROMFS run did not run in place.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Issue 2 set 96 KB for the 45 modules of then, on this 64-bit port. The channels, proxy,
# trust rules, media and compaction of issues 12-17 brought it to 129 KB here, and to
# 75.5 KB on a 32-bit MicroPython as the chip's (../shared/tools/micropython32, 256 KB
# heap); the GC heap lives in the board's PSRAM (2 MB at the least), where it has room.
# The budget keeps the figure from creeping up unnoticed: about 15 KB over today's.
IMPORT_BUDGET_BYTES = 144 * 1024


def test_package_imports_within_budget_on_a_320k_heap():
    # 320 KB: the .py files measured beside no longer fit 256 KB on this 64-bit port
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_import.py"), "320K"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    counts = [int(n) for n in re.findall(r"modules: (\d+)", p.stdout)]
    assert len(counts) == 2 and counts[0] == counts[1] >= 40, p.stdout
    romfs = re.search(r"heap after import: (\d+) B.*less the image's (\d+) B", p.stdout)
    files = re.search(r"heap after import from \.py files: (\d+) B", p.stdout)
    assert romfs and files, p.stdout
    held, image = int(romfs.group(1)), int(romfs.group(2))
    assert image > 64 * 1024, p.stdout  # the image really sat in the heap and was left out
    assert held <= IMPORT_BUDGET_BYTES, p.stdout
    assert held < int(files.group(1)) * 2 // 3, p.stdout
