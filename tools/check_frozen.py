"""mimi frozen into a MicroPython build (manifest.py), chatting through the fakes: a check by hand.

    python3 tools/check_frozen.py ~/micropython [--jobs 2]

Builds mpy-cross and the unix port of the MicroPython checkout given (v1.26 or newer,
with its lib/micropython-lib submodule: ``git submodule update --init
lib/micropython-lib``) with ``FROZEN_MANIFEST`` including the port's manifest and this
repository's ``manifest.py``, as the README's "Frozen into the firmware" does for the
ESP32 (gcc, make and libffi-dev needed; no btree, no TLS: the fakes speak HTTP). Then:

1. a virtual board (``python -m host_sim vboard``, the dev tools' micropython) with a
   stand-in for the frozen package in its ``/``; ``tools/flash.sh deploy`` takes its
   frozen route (boot.py, main.py, the data files to /lib/mimi), then ``seed`` and
   ``config`` with the fake Telegram and Anthropic servers;
2. the stand-in removed, the built ``micropython`` runs that flash folder as the virtual
   board does (host_sim/vboard_prelude.py: /boot.py, /main.py), with mimi frozen;
3. a chat: ``/status``, then a message whose answer takes a ``read_file`` tool call.
   (The board keeps its Telegram offset on flash, so the second run answers only its own.)

It prints the replies and the heap /status reports, then does step 2-3 again with the
package as ``.py`` files on the same build, for comparison (docs/heap.md). The stock
unix port has no raw REPL, so mpremote cannot drive the built interpreter itself; this
is not part of the test suite, which has no MicroPython source to build.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from host_sim import hostenv  # noqa: E402
from host_sim.fakes.llm import FakeAnthropic, Reply  # noqa: E402
from host_sim.fakes.telegram import FakeTelegram  # noqa: E402

TOKEN = "123456:FAKE-frozen-check"
KEY = "sk-ant-FAKE-frozen-check"
CHAT = 4242


def build(src, jobs):
    """The path of the unix ``micropython`` built from ``src`` with mimi frozen (RuntimeError on failure)."""
    if not os.path.isdir(os.path.join(src, "lib", "micropython-lib", "micropython")):
        raise RuntimeError("%s: no lib/micropython-lib (git submodule update --init lib/micropython-lib)" % src)
    with tempfile.TemporaryDirectory(prefix="mimi-manifest-") as d:  # not in their tree
        manifest = os.path.join(d, "manifest.py")
        with open(manifest, "w") as f:
            f.write('include("$(PORT_DIR)/variants/manifest.py")\ninclude("%s")\n' % os.path.join(ROOT, "manifest.py"))
        _make(src, jobs, manifest)
    exe = os.path.join(src, "ports", "unix", "build-mimi-frozen", "micropython")
    p = subprocess.run([exe, "-c", "import mimi; print(mimi.__file__, mimi.VERSION)"], capture_output=True, text=True,
                       cwd=tempfile.gettempdir())
    print("built: %s (import mimi: %s)" % (exe, (p.stdout or p.stderr).strip()), flush=True)
    if not p.stdout.startswith("mimi/__init__.py "):
        raise RuntimeError("mimi is not frozen into %s" % exe)
    return exe


def _make(src, jobs, manifest):
    steps = [["make", "-C", os.path.join(src, "mpy-cross"), "-j%d" % jobs],
             ["make", "-C", os.path.join(src, "ports", "unix"), "-j%d" % jobs, "VARIANT=standard",
              "BUILD=build-mimi-frozen", "MICROPY_PY_BTREE=0", "MICROPY_SSL_MBEDTLS=0", "MICROPY_PY_SSL=0",
              "FROZEN_MANIFEST=" + manifest]]
    for cmd in steps:
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("build failed:\n" + (p.stdout + p.stderr)[-3000:])


def _flash_sh(port, *args):
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop("MIMI_PORT", None)
    p = subprocess.run(["bash", os.path.join(ROOT, "tools", "flash.sh"), "--port", port] + list(args),
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("flash.sh %s failed:\n%s%s" % (args[0], p.stdout, p.stderr))
    return p.stdout


def prepare(flash, tg, llm):
    """Deploy (frozen route), seed and configure ``flash`` through a virtual board."""
    pkg = os.path.join(hostenv.FIRMWARE, "mimi")
    for d, _, names in os.walk(pkg):
        for n in names:
            if n.endswith(".py"):
                dest = os.path.join(flash, "mimi", os.path.relpath(os.path.join(d, n), pkg))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copyfile(os.path.join(d, n), dest)
    vb = subprocess.Popen([sys.executable, "-u", "-m", "host_sim", "vboard", "--flash", flash, "--port", "0",
                           "--romfs-kb", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        m = re.search(rb"socket://127\.0\.0\.1:\d+", vb.stdout.readline())
        if not m:
            raise RuntimeError("the virtual board did not start")
        port = m.group(0).decode()
        out = _flash_sh(port, "deploy")
        print("deploy: " + " / ".join(line for line in out.splitlines() if "frozen" in line or "Deployed" in line))
        _flash_sh(port, "seed")
        _flash_sh(port, "config", "tg_token=" + TOKEN, "tg_api_base=" + tg.url, "provider=anthropic",
                  "api_key=" + KEY, "base_url=" + llm.base_url, "allowed_chats=%d" % CHAT)
    finally:
        vb.send_signal(signal.SIGINT)
        vb.wait(20)


def chat(exe, flash, tg, llm, label):
    """Run ``flash`` with ``exe`` as the virtual board does and chat; returns /status's heap line."""
    want = "Alive, %s." % label
    llm.script(Reply.tools([("read_file", {"path": "/data/config/SOUL.md"})]), Reply.text(want))
    env = dict(os.environ, MICROPYPATH=hostenv.STUBS, MIMI_FLASH="/", MIMI_VBOARD_DIR=flash, MIMI_VBOARD_BOOT="all",
               MIMI_VBOARD_ROMFS_BYTES="0")
    log = open(os.path.join(flash, "console.log"), "w")
    proc = subprocess.Popen([exe, "-X", "heapsize=2M", "-i", os.path.join(ROOT, "host_sim", "vboard_prelude.py")],
                            cwd=flash, env=env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    try:
        before = len(tg.texts(CHAT))
        time.sleep(2)
        tg.inject_text(CHAT, "/status")
        tg.inject_text(CHAT, "are you there?")
        tg.wait_sent(lambda c: c.method == "sendMessage" and want in str(c.params), timeout=120)
        status, reply = tg.texts(CHAT)[before:before + 2]
    finally:
        proc.kill()
        proc.wait()
        log.close()
    heap = [line for line in status.splitlines() if line.startswith("heap:")]
    print("%s: /status first line %r; %s; reply %r" % (label, status.splitlines()[0], heap[0] if heap else "?", reply))
    if reply != want:
        raise RuntimeError("unexpected reply %r (console: %s)" % (reply, log.name))
    return heap[0] if heap else ""


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tools/check_frozen.py", description=__doc__.split("\n")[0])
    ap.add_argument("micropython", help="a MicroPython checkout (v1.26 or newer) with lib/micropython-lib")
    ap.add_argument("--jobs", type=int, default=2, help="make -j (default 2)")
    a = ap.parse_args(argv)
    try:
        exe = build(os.path.abspath(a.micropython), a.jobs)
        with tempfile.TemporaryDirectory(prefix="mimi-frozen-") as flash, \
                FakeTelegram(token=TOKEN) as tg, FakeAnthropic(api_key=KEY) as llm:
            prepare(flash, tg, llm)
            shutil.move(os.path.join(flash, "mimi"), os.path.join(flash, "mimi.py-files"))
            chat(exe, flash, tg, llm, "frozen")
            # The same build, the package as .py files in / ('' comes before .frozen).
            shutil.move(os.path.join(flash, "mimi.py-files"), os.path.join(flash, "mimi"))
            chat(exe, flash, tg, llm, ".py files")
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print("check_frozen.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
