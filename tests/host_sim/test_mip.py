"""mimi through mip: package.json and update.json, served over local HTTP, on the virtual board.

``mpremote mip install`` (the host fetches, the board is written over the REPL) and
``mip.install`` on the board itself (its own requests, which reach 127.0.0.1 on the unix
port as they would reach GitHub over WiFi), and the .mpy build of tools/mip_package.py's
index. The version package.json carries is the package's (firmware/mimi/__init__.py).
"""
import functools
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest
from vbclient import vboard, vboard_stock  # noqa: F401 - the fixtures

from host_sim import hostenv

ROOT = hostenv.ROOT
BIN = os.path.dirname(sys.executable)
MPREMOTE = os.path.join(BIN, "mpremote")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served():
    """A function: ``served(folder)`` -> ``http://127.0.0.1:PORT`` serving that folder (an ephemeral port)."""
    servers = []

    def serve(folder):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return "http://127.0.0.1:%d" % srv.server_address[1]

    yield serve
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _mpremote(port, *args, timeout=180):
    p = subprocess.run([MPREMOTE, "connect", port, "resume"] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def _files(top):
    out = set()
    for d, dirs, names in os.walk(top):
        dirs[:] = [n for n in dirs if n != "__pycache__"]
        out |= {os.path.relpath(os.path.join(d, n), top).replace(os.sep, "/") for n in names if not n.endswith(".pyc")}
    return out


def _lib_files():
    """What lands in /lib: the package and the library it vendors (microdot, firmware/lib)."""
    return ({"mimi/" + f for f in _files(os.path.join(ROOT, "firmware", "mimi"))}
            | {lib + "/" + f for lib in ("microdot", "umqtt") for f in _files(os.path.join(ROOT, "firmware", "lib", lib))})


def _package_json(name="package.json"):
    with open(os.path.join(ROOT, name)) as f:
        return json.load(f)


def test_package_json_lists_the_tree_where_deploy_and_seed_put_it():
    # Walked here, not by the tool that writes package.json: a file added to the package
    # or the seed and not to package.json fails this.
    urls = dict(map(tuple, _package_json()["urls"]))
    want = {"mimi/" + f: "firmware/mimi/" + f for f in _files(os.path.join(ROOT, "firmware", "mimi"))}
    want.update({lib + "/" + f: "firmware/lib/%s/" % lib + f for lib in ("microdot", "umqtt")
                 for f in _files(os.path.join(ROOT, "firmware", "lib", lib))})
    want.update({"../boot.py": "firmware/boot.py", "../main.py": "firmware/main.py",
                 "../mimi_slot.py": "firmware/mimi_slot.py"})
    code = dict(want)
    want.update({"../data/" + f: "spiffs_seed/" + f for f in _files(os.path.join(ROOT, "spiffs_seed"))})
    assert urls == want
    assert {"mimi/agent/rules.md", "mimi/tools/tools.jsonl", "../data/certs/ca.pem"} <= set(urls)
    # update.json: the code without the seed, so that an upgrade keeps /data.
    assert dict(map(tuple, _package_json("update.json")["urls"])) == code
    for doc in (_package_json(), _package_json("update.json")):
        assert doc["deps"] == [] and set(doc) == {"urls", "deps", "version"}


def test_the_version_is_the_package_s_and_the_json_files_are_current():
    sys.path.insert(0, os.path.join(ROOT, "firmware"))
    try:
        import mimi
    finally:
        sys.path.pop(0)
    assert _package_json()["version"] == _package_json("update.json")["version"] == mimi.VERSION
    p = subprocess.run([sys.executable, "tools/mip_package.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_mip_package_check_names_a_stale_file(tmp_path):
    # The tool run on a copy whose version moved: --check fails naming both files; a run
    # rewrites them with the new version.
    for part in ("firmware", "spiffs_seed", "host_sim", "tools", "package.json", "update.json"):
        src = os.path.join(ROOT, part)
        if os.path.isdir(src):
            import shutil

            shutil.copytree(src, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (tmp_path / part).write_bytes(open(src, "rb").read())
    init = tmp_path / "firmware" / "mimi" / "__init__.py"
    init.write_text(init.read_text().replace('VERSION = "', 'VERSION = "9.9.9-', 1))
    tool = [sys.executable, str(tmp_path / "tools" / "mip_package.py")]
    p = subprocess.run(tool + ["--check"], capture_output=True, text=True)
    assert p.returncode == 1 and "package.json and update.json out of date" in p.stderr, p.stderr
    p = subprocess.run(tool, capture_output=True, text=True)
    assert p.returncode == 0 and "Written: package.json" in p.stdout, p.stdout + p.stderr
    assert json.loads((tmp_path / "update.json").read_text())["version"].startswith("9.9.9-")


def test_mpremote_mip_installs_a_working_mimi_that_answers_on_telegram(vboard, served):
    pytest.importorskip("host_sim.fakes.telegram")
    from host_sim.fakes.llm import FakeAnthropic, Reply
    from host_sim.fakes.telegram import FakeTelegram

    board = vboard.flash
    url = served(ROOT) + "/package.json"
    out = _mpremote(vboard.port, "mip", "install", url)
    assert out.rstrip().endswith("Done"), out
    # Where tools/flash.sh deploy --files and seed put them.
    assert _files(board / "lib") == _lib_files()
    for name in ("boot.py", "main.py", "mimi_slot.py"):
        assert (board / name).read_bytes() == open(os.path.join(ROOT, "firmware", name), "rb").read()
    assert _files(board / "data") == _files(os.path.join(ROOT, "spiffs_seed"))
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYTHON=sys.executable)
    env.pop("MIMI_PORT", None)
    with FakeTelegram(token="123456:FAKE-mip-token") as tg, FakeAnthropic(api_key="sk-ant-FAKE-mip") as llm:
        llm.script(Reply.text("Installed by mip."))
        p = subprocess.run(["bash", os.path.join(ROOT, "tools", "flash.sh"), "--port", vboard.port, "config",
                            "tg_token=123456:FAKE-mip-token", "tg_api_base=" + tg.url, "provider=anthropic",
                            "api_key=sk-ant-FAKE-mip", "base_url=" + llm.base_url, "allowed_chats=4242"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        p = subprocess.run([MPREMOTE, "connect", vboard.port, "reset"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        tg.inject_text(4242, "/status")
        tg.inject_text(4242, "are you there?")
        tg.wait_sent(lambda c: c.method == "sendMessage" and "Installed by mip." in str(c.params), timeout=60)
        status, reply = tg.texts(4242)
    # /status names the version package.json carries.
    assert status.startswith("mimi %s on MicroPython" % _package_json()["version"]), status
    assert reply == "Installed by mip."
    got = _mpremote(vboard.port, "exec", "from mimi import app\nprint(app.__file__)").strip()
    assert got == "/lib/mimi/app.py", got


def test_mip_on_the_board_upgrades_the_code_and_keeps_data(vboard_stock, served):
    # mip.install on the board itself, as over WiFi: its requests fetch update.json and the
    # files; /data, the user's, is not touched; an old module left in /lib/mimi is
    # overwritten by name (mip removes nothing).
    board = vboard_stock.flash
    (board / "data" / "memory").mkdir(parents=True)
    (board / "data" / "memory" / "MEMORY.md").write_text("the owner's memory\n")
    (board / "lib" / "mimi").mkdir(parents=True)
    (board / "lib" / "mimi" / "__init__.py").write_text('VERSION = "0.0.1"\n')
    url = served(ROOT) + "/update.json"
    out = _mpremote(vboard_stock.port, "exec", "import mip\nmip.install(%r)" % url)
    assert "Done" in out and "Copying: /lib/../boot.py" in out, out
    assert (board / "data" / "memory" / "MEMORY.md").read_text() == "the owner's memory\n"
    assert _files(board / "data") == {"memory/MEMORY.md"}
    assert _files(board / "lib") == _lib_files()
    got = _mpremote(vboard_stock.port, "exec", "import mimi\nprint(mimi.VERSION)").strip()
    assert got == _package_json()["version"], got


def test_the_index_s_mpy_build_installs_compiled_modules(vboard_stock, served, tmp_path):
    p = subprocess.run([sys.executable, "tools/mip_package.py", "--index", str(tmp_path / "index")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    base = served(tmp_path / "index")
    out = _mpremote(vboard_stock.port, "mip", "install", "--index", base, "mimi-update")
    assert out.rstrip().endswith("Done"), out
    board = vboard_stock.flash
    files = _files(board / "lib")
    code = [f for f in files if not f.endswith((".md", ".jsonl", ".html", ".txt"))]  # data files stay as they are
    assert code and all(f.endswith(".mpy") for f in code), files
    assert {"mimi/texts.md", "mimi/agent/rules.md", "mimi/tools/tools.jsonl"} <= files
    assert len(files) == len(_lib_files())
    assert (board / "main.py").read_bytes() == open(os.path.join(ROOT, "firmware", "main.py"), "rb").read()
    got = _mpremote(vboard_stock.port, "exec", "import mimi\nfrom mimi import app\nprint(app.__file__, mimi.VERSION)")
    assert got.strip() == "/lib/mimi/app.mpy " + _package_json()["version"], got


class _Transport:
    """mpremote's transport as mpremote.mip uses it: a dict of board paths -> bytes."""

    def __init__(self):
        self.files, self.dirs = {}, {"/lib"}

    def fs_exists(self, path):
        return path in self.dirs or path in self.files

    def fs_mkdir(self, path):
        self.dirs.add(path)

    def fs_writefile(self, path, data, progress_callback=None):
        self.files[path] = data


def test_github_urls_map_to_the_repository_s_files(monkeypatch):
    # `mpremote mip install github:OWNER/mimi@TAG`, run by mpremote's own mip code with
    # GitHub's raw host answered from this checkout: every url resolves to a file here,
    # at the tag asked for, and lands where package.json says.
    import io
    import urllib.request

    from mpremote import mip

    fetched = []
    prefix = "https://raw.githubusercontent.com/someone/mimi/v9/"

    def urlopen(url):
        assert url.startswith(prefix), url
        fetched.append(url[len(prefix):])
        return io.BytesIO(open(os.path.join(ROOT, url[len(prefix):]), "rb").read())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    t = _Transport()
    mip._install_package(t, "github:someone/mimi", "https://micropython.org/pi/v2", "/lib", "v9", True)
    urls = _package_json()["urls"]
    assert fetched == ["package.json"] + [src for _, src in urls]
    assert set(t.files) == {"/lib/" + dev for dev, _ in urls}
    assert t.files["/lib/../main.py"] == open(os.path.join(ROOT, "firmware", "main.py"), "rb").read()
    assert "/lib/../data/certs" in t.dirs and "/lib/mimi/agent" in t.dirs
