"""mimi.data_path: a module's data files, imported from files, a ROMFS image or frozen (both runtimes)."""
import mimi

RUNTIMES = ("cpython", "micropython")


def test_beside_a_module_imported_from_files_or_romfs():
    assert mimi.data_path("/lib/mimi/commands.py", "texts.md") == "/lib/mimi/texts.md"
    assert mimi.data_path("/rom/mimi/agent/context.mpy", "rules.md") == "/rom/mimi/agent/rules.md"
    assert mimi.data_path("/home/u/mimi/firmware/mimi/tools/registry.py", "tools.jsonl") == \
        "/home/u/mimi/firmware/mimi/tools/tools.jsonl"


def test_a_frozen_module_s_data_files_are_in_lib():
    # A frozen module's __file__ is its name in the manifest, relative, with no file behind it.
    assert mimi.data_path("mimi/commands.py", "texts.md") == "/lib/mimi/texts.md"
    assert mimi.data_path("mimi/tools/registry.py", "tools.jsonl") == "/lib/mimi/tools/tools.jsonl"
    # Other relative paths (a host's) are left as they are.
    assert mimi.data_path("firmware/mimi/commands.py", "texts.md") == "firmware/mimi/texts.md"


def test_the_package_s_data_files_are_found_where_it_runs():
    from mimi import commands
    from mimi.agent import context
    from mimi.tools import registry

    for path in (commands._TEXTS, context._RULES_PATH, context._TURN_PATH, registry.SPECS):
        with open(path) as f:
            assert f.read(1), path
