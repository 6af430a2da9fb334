"""The I/O thread's hook loads the rules engine only once there are rules (issue 18;
both runtimes): an app without rules pays one stat every few seconds, not the engine's heap."""
import sys

from mimi import bus as busmod, config, rules
import support

RUNTIMES = ("cpython", "micropython")


def test_the_engine_is_loaded_only_once_rules_json_exists():
    root = support.fresh_flash()
    saved = {}
    for k in ("mimi.rules.engine", "mimi.rules.store"):  # as in an app that never used them
        if k in sys.modules:
            saved[k] = sys.modules.pop(k)
    try:
        rules.forget()
        b = busmod.Bus(4, 4)
        rules.tick(0, b)
        rules.tick(10000, b)
        assert "mimi.rules.engine" not in sys.modules and rules._on[0] is None
        support.write(root + config.RULES_PATH, '{"seq": 0, "rules": []}')
        rules.tick(11000, b)
        assert rules._on[0] is None  # looked at most every few seconds
        rules.tick(16000, b)
        e = rules._on[0]  # (CPython finds it on the package, where an earlier import left it)
        assert e is not None and e.__name__ == "mimi.rules.engine" and e._st["bus"] is b
    finally:
        rules.forget()
        for k in saved:  # the modules the other tests hold, in sys.modules and on the package
            sys.modules[k] = saved[k]
            setattr(rules, k.split(".")[-1], saved[k])
