"""The whole mimi package imports under a 256 KB MicroPython heap within budget (issue 2)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPORT_BUDGET_BYTES = 96 * 1024


# Known to be over budget while the parts land; the heap diet is tracked in the README.
@pytest.mark.xfail(reason="whole-package import heap is over the 96 KB budget (see README, Figures)", strict=False)
def test_package_imports_within_budget_on_a_256k_heap():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_import.py"), "256K"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"heap after import: (\d+) B", p.stdout)
    assert m, p.stdout
    n_modules = int(re.search(r"modules: (\d+)", p.stdout).group(1))
    assert n_modules >= 7
    assert int(m.group(1)) <= IMPORT_BUDGET_BYTES, p.stdout
