"""manifest.py (freezing mimi into a firmware) against what the package imports (host only).

The manifest is run here with stand-ins for the functions MicroPython's
tools/manifestfile.py gives a manifest (metadata, require, package, module, include);
the package's imports are read from its source (every ``import``, in functions too).
"""
import ast
import json
import os

from host_sim import hostenv, romfs

ROOT = hostenv.ROOT
FIRMWARE = hostenv.FIRMWARE

# C modules MicroPython v1.28.0 can build in (MP_REGISTER_MODULE in py/, extmod/,
# shared/, ports/esp32/), so never a require(): the esp32 port's own and extmod's.
BUILTIN = {"_asyncio", "_espnow", "_onewire", "_thread", "_webrepl", "array", "binascii", "bluetooth", "btree",
           "builtins", "cmath", "collections", "cryptolib", "deflate", "errno", "esp", "esp32", "framebuf", "gc",
           "hashlib", "heapq", "io", "json", "machine", "math", "micropython", "network", "os", "platform",
           "random", "re", "select", "socket", "struct", "sys", "time", "tls", "uctypes", "vfs", "websocket",
           "asyncio"}  # asyncio: frozen by every port's own manifest (extmod/asyncio), not micropython-lib
# micropython-lib modules: what require() would name (micropython/, python-stdlib/,
# python-ecosys/ of micropython-lib). Those mimi imports must be required, and only those.
MICROPYTHON_LIB = {"ntptime", "neopixel", "requests", "umqtt.simple", "umqtt.robust", "aioble", "ssl",
                   "logging", "datetime", "base64", "hmac", "aiohttp", "mip", "webrepl", "dht", "onewire",
                   "ds18x20", "upysh", "aioespnow", "urequests", "senml", "cbor2", "unittest"}

# Neither built in nor micropython-lib, and never a require(): MicroPython's own asyncio
# (extmod/asyncio, frozen into every ESP32 firmware), microdot (vendored in firmware/lib)
# and mimi_slot (firmware/mimi_slot.py, deployed beside boot.py: updates over WiFi).
BESIDE = {"asyncio", "microdot", "mimi_slot"}


def _run_manifest():
    calls = {"metadata": [], "require": [], "package": [], "module": [], "include": []}

    def rec(name):
        return lambda *a, **kw: calls[name].append((a, kw))

    env = {name: rec(name) for name in calls}
    here = os.getcwd()
    os.chdir(ROOT)  # manifestfile.py runs a manifest in its own folder
    try:
        with open(os.path.join(ROOT, "manifest.py")) as f:
            exec(compile(f.read(), "manifest.py", "exec"), env)
    finally:
        os.chdir(here)
    return calls


def _host_only(node, parents):
    # An import inside `if _RT == "cpython":` (mimi/seam.py: calendar, ssl) runs on CPython only.
    child = node
    for p in parents:
        if isinstance(p, ast.If) and child in p.body:
            t = p.test
            if (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "_RT"
                    and isinstance(t.ops[0], ast.Eq) and getattr(t.comparators[0], "value", None) == "cpython"):
                return True
        child = p
    return False


def _imports(dynamic=True):
    """{module name: [files]} of every import a device runs: the package, boot.py, main.py,
    and (``dynamic``) the modules mimi.app imports by name (config.APP_TOOL_MODULES,
    config.APP_PRELOAD, the tools' modules in tools.jsonl)."""
    files = [os.path.join(FIRMWARE, rel) for rel in romfs.package_files() if rel.endswith(".py")]
    files += [os.path.join(FIRMWARE, "boot.py"), os.path.join(FIRMWARE, "main.py")]
    out = {}
    if dynamic:
        from mimi import config

        for name in config.APP_TOOL_MODULES:
            out.setdefault(name, []).append("mimi/config.py")
        with open(os.path.join(FIRMWARE, "mimi", "tools", "tools.jsonl")) as f:  # the registry imports each tool's module
            for line in f:
                out.setdefault(json.loads(line)["module"], []).append("mimi/tools/tools.jsonl")
        for name in config.APP_PRELOAD:
            out.setdefault(name, []).append("mimi/config.py")
        for name in config.WEB_ROUTE_MODULES:  # mimi.web.server imports each by name
            out.setdefault(name, []).append("mimi/config.py")
    for path in files:
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        stack = [(tree, [])]
        while stack:
            node, parents = stack.pop()
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module] + [node.module + "." + a.name for a in node.names]
            if names and not _host_only(node, parents):
                for n in names:
                    out.setdefault(n, []).append(os.path.relpath(path, FIRMWARE))
            for child in ast.iter_child_nodes(node):
                stack.append((child, [node] + parents))
    return out


def _is_module(dotted):
    # mimi.x.y: a module file or a package folder in firmware/, or a name in one (from mimi import pick).
    parts = dotted.split(".")
    base = os.path.join(FIRMWARE, *parts)
    if os.path.exists(base + ".py") or os.path.exists(os.path.join(base, "__init__.py")):
        return True
    parent = os.path.join(FIRMWARE, *parts[:-1])
    return os.path.exists(parent + ".py") or os.path.exists(os.path.join(parent, "__init__.py"))


def test_manifest_freezes_the_package_with_its_version():
    calls = _run_manifest()
    # the package, and the library it vendors (firmware/lib: microdot, the web app's framework)
    assert calls["package"] == [(("mimi",), {"base_path": "firmware"}), (("microdot",), {"base_path": "firmware/lib"})]
    assert [os.path.basename(t) for t in romfs.LIBS] == ["microdot", "umqtt"]
    assert calls["module"] == [] and calls["include"] == []
    import mimi

    assert [kw.get("version") for _, kw in calls["metadata"]] == [mimi.VERSION]


def test_manifest_requires_every_library_module_the_package_imports_and_no_other():
    imports = _imports()
    top = {}
    for name, where in imports.items():
        if name.split(".")[0] != "mimi":
            top.setdefault(name, where)
    # Every import is a built-in, a micropython-lib module, or mimi's own.
    vendored = {os.path.basename(t) for t in romfs.LIBS}  # firmware/lib, frozen by package() above
    unknown = {n: w for n, w in top.items() if n.split(".")[0] not in BUILTIN and n not in MICROPYTHON_LIB
               and n.rsplit(".", 1)[0] not in MICROPYTHON_LIB and n.split(".")[0] not in vendored | BESIDE}
    assert not unknown, "imported, but neither built into MicroPython, from micropython-lib nor vendored: %s" % unknown
    needed = {n for n in top if n in MICROPYTHON_LIB}
    required = {a[0] for a, _ in _run_manifest()["require"]}
    assert required == needed, "manifest.py requires %s; the package imports %s" % (sorted(required), sorted(needed))
    assert {"ntptime", "neopixel"} <= needed  # mimi/seam.py: the clock, the RGB LED


def test_every_mimi_module_imported_is_in_the_tree_package_freezes():
    # package("mimi", base_path="firmware") freezes every .py under firmware/mimi: a mimi
    # import naming a module that is not there would fail on a frozen board only.
    missing = {n: w for n, w in _imports().items() if n.split(".")[0] == "mimi" and not _is_module(n)}
    assert not missing, missing
    frozen = {rel for rel in romfs.package_files() if rel.endswith(".py")}
    modules = {n.replace(".", "/") for n in _imports() if n.split(".")[0] == "mimi"}
    # Every module file is imported by some module, by name (mimi.app's tool modules), or
    # is an entry point: the console's (``from mimi import cli`` at the REPL) and those
    # tools/flash.sh runs on the board (``from mimi import doctor``). Nothing is frozen
    # for nothing. Packages' __init__ aside.
    import re

    modules.add("mimi/cli")
    modules.add("mimi/web/update_route")  # the web app adds its routes (routes(app, authorized))
    with open(os.path.join(ROOT, "tools", "flash.sh")) as f:
        modules |= {"mimi/" + m for m in re.findall(r"from mimi import (\w+)", f.read())}
    unused = {rel for rel in frozen if not rel.endswith("__init__.py") and rel[:-3] not in modules}
    assert not unused, "in firmware/mimi but imported by nothing: %s" % sorted(unused)


def test_the_manifest_s_imports_check_sees_a_new_dependency(tmp_path, monkeypatch):
    # The check itself: a module importing umqtt.simple (micropython-lib) makes the
    # manifest incomplete; a CPython-only import under `if _RT == "cpython":` does not.
    pkg = tmp_path / "firmware" / "mimi"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('VERSION = "1.2.3"\n')
    (pkg / "mqtt.py").write_text('_RT = "x"\nif _RT == "cpython":\n    import calendar\n\n\ndef go():\n'
                                 '    from umqtt.simple import MQTTClient\n    return MQTTClient\n')
    (tmp_path / "firmware" / "boot.py").write_text("import mimi.mqtt\n")
    (tmp_path / "firmware" / "main.py").write_text("")
    monkeypatch.setattr(romfs, "package_files", lambda top=None: ["mimi/__init__.py", "mimi/mqtt.py"])
    monkeypatch.setitem(globals(), "FIRMWARE", str(tmp_path / "firmware"))
    got = _imports(dynamic=False)
    assert "umqtt.simple" in got and "calendar" not in got and got["mimi.mqtt"] == ["boot.py"]
