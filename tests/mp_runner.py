"""Run one test module's ``test_*`` functions under the ``micropython`` command.

Usage (``tests/conftest.py`` does this): ``micropython tests/mp_runner.py tests/x/test_y.py``
with ``MICROPYPATH`` set to the stand-ins, ``firmware/`` and ``tests/``. Prints one line
per test, ``@@MPTEST <json>`` with ``name``, ``ok`` and ``err`` (a traceback), in source
order. A module that fails to import prints one line named ``<import>``.
"""
import io
import json
import sys


def _names(path):
    names = []
    with open(path) as f:
        for line in f:
            if line.startswith("def test_"):
                names.append(line[4:].split("(", 1)[0])
    return names


def _tb(e):
    s = io.StringIO()
    sys.print_exception(e, s)
    return s.getvalue()


def _report(name, ok, err):
    # One write that starts on a fresh line: a log line printed by a thread of the app
    # under test (text and newline are two writes) cannot split or swallow the result.
    print("\n@@MPTEST " + json.dumps({"name": name, "ok": ok, "err": err}) + "\n", end="")


def main(path):
    folder, fname = path.rsplit("/", 1) if "/" in path else (".", path)
    sys.path.insert(0, folder)
    modname = fname[:-3]
    only = sys.argv[2:]
    try:
        mod = __import__(modname)
    except BaseException as e:  # noqa: B036 - report anything as the import's failure
        _report("<import>", False, _tb(e))
        return
    for name in _names(path):
        if only and name not in only:
            continue
        fn = getattr(mod, name, None)
        if fn is None:
            continue
        try:
            fn()
            _report(name, True, "")
        except BaseException as e:  # noqa: B036
            _report(name, False, _tb(e))
        try:
            import gc
            gc.collect()
        except ImportError:
            pass


main(sys.argv[1])
