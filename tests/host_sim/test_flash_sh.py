"""tools/flash.sh against the virtual board (deploy, seed, config, reset) and a recording esptool."""
import json
import os
import stat
import subprocess
import sys

import pytest
from vbclient import vboard, vboard_stock  # noqa: F401 - the fixtures

import esp_image
from host_sim import hostenv

ROOT = hostenv.ROOT
FLASH_SH = os.path.join(ROOT, "tools", "flash.sh")
BIN = os.path.dirname(sys.executable)
partitions = esp_image.partitions


def _env(**extra):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYTHON=sys.executable)
    env.pop("MIMI_PORT", None)
    env.update(extra)
    return env


def flash_sh(*args, env=None, check=True, timeout=120):
    p = subprocess.run(["bash", FLASH_SH] + list(args), capture_output=True, text=True, env=env or _env(),
                       cwd=ROOT, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def _files(top):
    out = set()
    for d, _, names in os.walk(top):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def test_deploy_seed_config_then_reset_boots_the_deployed_copy(vboard, tmp_path):
    board = vboard.flash
    seed = tmp_path / "seed"
    (seed / "config").mkdir(parents=True)
    (seed / "memory").mkdir()
    (seed / "config" / "SOUL.md").write_text("seed soul\n")
    (seed / "config" / "USER.md").write_text("seed user\n")
    (seed / "memory" / "MEMORY.md").write_text("seed memory\n")
    (board / "data" / "config").mkdir(parents=True)
    (board / "data" / "config" / "SOUL.md").write_text("the owner's soul\n")
    # A stale module from an older deploy must go.
    (board / "lib" / "mimi").mkdir(parents=True)
    (board / "lib" / "mimi" / "gone.py").write_text("raise ImportError\n")

    env = _env(MIMI_SEED_DIR=str(seed))
    flash_sh("--port", vboard.port, "deploy", "--files", env=env)
    want = {os.path.relpath(os.path.join(d, n), os.path.join(ROOT, "firmware"))
            for d, _, names in os.walk(os.path.join(ROOT, "firmware", "mimi")) if "__pycache__" not in d
            for n in names if not n.endswith(".pyc")}
    want |= {os.path.relpath(os.path.join(d, n), os.path.join(ROOT, "firmware", "lib"))  # microdot, beside mimi
             for lib in ("microdot", "umqtt")
             for d, _, names in os.walk(os.path.join(ROOT, "firmware", "lib", lib)) if "__pycache__" not in d
             for n in names if not n.endswith(".pyc")}
    assert {"mimi/agent/rules.md", "mimi/agent/turn.md", "mimi/tools/tools.jsonl", "microdot/microdot.py",
            "umqtt/simple.py"} <= want
    want.add("mimi/build.txt")  # written when staged: the git description (mimi.ota.running_version)
    assert _files(board / "lib") == want
    assert (board / "main.py").read_text() == open(os.path.join(ROOT, "firmware", "main.py")).read()
    assert (board / "boot.py").exists()

    p = flash_sh("--port", vboard.port, "seed", env=env)
    assert "copied 2" in p.stdout and "kept 1" in p.stdout
    assert (board / "data" / "config" / "SOUL.md").read_text() == "the owner's soul\n"
    assert (board / "data" / "memory" / "MEMORY.md").read_text() == "seed memory\n"
    p = flash_sh("--port", vboard.port, "seed", "--force", env=env)
    assert (board / "data" / "config" / "SOUL.md").read_text() == "seed soul\n"

    p = flash_sh("--port", vboard.port, "config", "wifi_ssid=Sim Net", "tg_token=123456:FAKE-token",
                 "tz=+8", "allowed_chats=42, 43")
    assert "FAKE" not in p.stdout + p.stderr
    nvs = {k: bytes.fromhex(v[1]).decode() for k, v in json.load(open(board / "nvs.json"))["mimi"].items()}
    # web_made: the virtual board's mark that no web password is made at its first start
    assert nvs == {"wifi_ssid": "Sim Net", "tg_token": "123456:FAKE-token", "tz": "+08:00", "allowed": "42,43",
                   "web_made": "1"}

    flash_sh("--port", vboard.port, "reset")
    # The board powers on: boot.py and main.py from the flash folder, the package from
    # /lib (its ROMFS partition holds an empty image: --files cleared it), the settings
    # from its NVS.
    got = _board_exec(vboard.port, "import os, sys\nfrom mimi import app, config\n"
                      "print(app.state['started_ms'] is not None, app.__file__, config.get('wifi_ssid'), sys.path,"
                      " os.listdir('/rom'))")
    assert got == "True /lib/mimi/app.py Sim Net ['', '.frozen', '/rom', '/rom/lib', '/lib'] []", got


def _board_exec(port, code):
    p = subprocess.run([os.path.join(BIN, "mpremote"), "connect", port, "resume", "exec", code],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip()


def test_the_romfs_image_boots_and_answers_a_telegram_message(vboard):
    pytest.importorskip("host_sim.fakes.telegram")
    from host_sim.fakes.llm import FakeAnthropic, Reply
    from host_sim.fakes.telegram import FakeTelegram

    board = vboard.flash
    (board / "lib" / "mimi").mkdir(parents=True)
    (board / "lib" / "mimi" / "app.py").write_text("raise ImportError('a stale .py shadows the image')\n")
    p = flash_sh("--port", vboard.port, "deploy")
    assert "as a ROMFS image" in p.stdout and "ROMFS image deployed" in p.stdout, p.stdout
    assert "Deployed mimi %s." % _version() in p.stdout, p.stdout  # read back from the image
    # The package is in the partition (romfs.bin), not among the files; the stale copy went.
    assert not (board / "lib" / "mimi").exists()
    image = (board / "romfs.bin").read_bytes()
    assert image[:3] == b"\xd2\xcd\x31"
    # Byte for byte the image tools/bench_import.py measures (host_sim.romfs); mpremote pads
    # its last 4 KiB block with zeros, and the rest of the partition stays erased.
    from host_sim import romfs

    built = romfs.build()
    end = (len(built) + 4095) // 4096 * 4096
    assert image[:len(built)] == built
    assert set(image[len(built):end]) <= {0} and set(image[end:]) <= {0xFF}
    # The data files go as they are, byte for byte, beside the compiled modules.
    jsonl = open(os.path.join(ROOT, "firmware", "mimi", "tools", "tools.jsonl"), "rb").read()
    assert jsonl in image
    flash_sh("--port", vboard.port, "seed")  # the real spiffs_seed/
    assert (board / "data" / "config" / "SOUL.md").exists()
    with FakeTelegram(token="123456:FAKE-vboard") as tg, FakeAnthropic(api_key="sk-ant-FAKE-vb") as llm:
        llm.script(Reply.tools([("read_file", {"path": "/data/config/SOUL.md"})]), Reply.text("Deployed and alive."))
        flash_sh("--port", vboard.port, "config", "tg_token=123456:FAKE-vboard", "tg_api_base=" + tg.url,
                 "provider=anthropic", "api_key=sk-ant-FAKE-vb", "base_url=" + llm.base_url, "allowed_chats=4242")
        flash_sh("--port", vboard.port, "reset")
        tg.inject_text(4242, "are you there?")
        tg.wait_sent(lambda c: c.method == "sendMessage", timeout=60)
        assert tg.texts(4242) == ["Deployed and alive."]
        assert len(llm.requests) == 2 and llm.requests[0]["headers"]["x-api-key"] == "sk-ant-FAKE-vb"
        # The model was offered read_file as the compiled registry describes it (from
        # tools.jsonl inside the image), and the tool ran on the board's flash.
        offered = {t["name"]: t for t in llm.requests[0]["json"]["tools"]}
        assert offered["read_file"]["input_schema"]["required"] == ["path"]
        soul_first_line = open(board / "data" / "config" / "SOUL.md").read().strip().splitlines()[0]
        assert soul_first_line in str(llm.requests[1]["json"]["messages"][-1]["content"])
    # What answered was the image, mounted at /rom: compiled modules and the data files.
    got = _board_exec(vboard.port, "import os\nfrom mimi import app\nprint(app.__file__, sorted(os.listdir('/rom/mimi/tools')))")
    assert got.startswith("/rom/mimi/app.mpy ['__init__.mpy', 'clock.mpy', "), got
    assert "'tools.jsonl'" in got and ".py'" not in got, got


def test_a_micropython_without_romfs_gets_files(vboard_stock):
    board = vboard_stock.flash
    p = flash_sh("--port", vboard_stock.port, "deploy")
    assert "has no ROMFS" in p.stdout, p.stdout
    assert "mimi/app.py" in _files(board / "lib") and not (board / "romfs.bin").exists()
    flash_sh("--port", vboard_stock.port, "deploy", "--mpy")
    files = _files(board / "lib")
    code = [f for f in files if not f.endswith((".md", ".jsonl", ".html", ".txt"))]  # data files stay as they are
    assert code and all(f.endswith(".mpy") for f in code), files
    assert "mimi/agent/rules.md" in files and "mimi/tools/tools.jsonl" in files
    got = _board_exec(vboard_stock.port, "from mimi import app\nprint(app.__file__)")
    assert got == "/lib/mimi/app.mpy", got


def _version():
    with open(os.path.join(ROOT, "firmware", "mimi", "__init__.py")) as f:
        return f.read().split('VERSION = "', 1)[1].split('"', 1)[0]


def test_deploy_names_the_version_and_reads_it_back_from_the_board(vboard_stock):
    p = flash_sh("--port", vboard_stock.port, "deploy")
    assert "Deploying mimi %s: boot.py, main.py and " % _version() in p.stdout, p.stdout
    assert p.stdout.rstrip().endswith("Deployed mimi %s. tools/flash.sh reset starts it." % _version()), p.stdout
    # A copy ahead of /lib on sys.path ('' is the board's /) that is another version: an error.
    (vboard_stock.flash / "mimi").mkdir()
    (vboard_stock.flash / "mimi" / "__init__.py").write_text('VERSION = "0.0.1"\n')
    (vboard_stock.flash / "mimi" / "boot.py").write_text("def clear_crashes():\n    pass\n")
    p = flash_sh("--port", vboard_stock.port, "deploy", "--files", check=False)
    assert p.returncode == 1 and "the board imports mimi 0.0.1, not %s" % _version() in p.stderr, p.stdout + p.stderr


def test_deploy_to_a_firmware_with_mimi_frozen_copies_what_freezing_leaves_out(vboard_stock):
    # The virtual board cannot freeze; a package in its / plays the frozen one: it comes
    # before /lib on sys.path (''), and its __file__ is relative (mimi/__init__.py), as a
    # frozen module's is. Only its .py files, as manifest.py freezes.
    board = vboard_stock.flash
    src = os.path.join(ROOT, "firmware", "mimi")
    data = set()
    for rel in _files(src):
        if "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        if not rel.endswith(".py"):
            data.add(rel)
            continue
        os.makedirs(os.path.dirname(board / "mimi" / rel), exist_ok=True)
        text = open(os.path.join(src, rel)).read()
        if rel == "__init__.py":
            text = text.replace('VERSION = "%s"' % _version(), 'VERSION = "0.0.9"')
        (board / "mimi" / rel).write_text(text)
    assert data >= {"texts.md", "agent/rules.md", "agent/turn.md", "tools/tools.jsonl"}
    data.add("build.txt")  # written when staged: the git description (mimi.ota.running_version)
    p = flash_sh("--port", vboard_stock.port, "deploy")
    assert ("mimi 0.0.9 is frozen into this firmware: deploying boot.py, main.py and its %d data files to /lib/mimi"
            % len(data)) in p.stdout, p.stdout
    assert "This checkout is mimi %s: rebuild the firmware with manifest.py" % _version() in p.stdout, p.stdout
    assert "twice the heap" not in p.stdout, p.stdout  # frozen code is not in the heap
    assert p.stdout.rstrip().endswith("Deployed mimi 0.0.9. tools/flash.sh reset starts it."), p.stdout
    assert _files(board / "lib" / "mimi") == data
    assert (board / "main.py").exists() and (board / "boot.py").exists()
    # The "frozen" code finds its data files in /lib/mimi (mimi.data_path).
    got = _board_exec(vboard_stock.port, "from mimi import commands\nfrom mimi.tools import registry\n"
                      "print(commands.__file__, commands._TEXTS, registry.SPECS, commands.text('status').split()[0])")
    assert got == "mimi/commands.py /lib/mimi/texts.md /lib/mimi/tools/tools.jsonl mimi", got


def _recorder(tmp_path, name):
    """A stand-in for esptool or mpremote that logs its arguments; a write-flash's file
    (its last argument, gone once flash.sh ends) is copied to NAME.written."""
    log = tmp_path / (name + ".log")
    exe = tmp_path / name
    exe.write_text("#!/bin/sh\nif [ \"$1\" = version ]; then echo 'esptool v5.6.0'; exit 0; fi\n"
                   "echo \"$@\" >> %s\n"
                   "for a; do last=$a; done\n"
                   "case \" $* \" in *\" write-flash \"*) cp \"$last\" %s ;; esac\n"
                   % (log, tmp_path / (name + ".written")))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe), log


def _written_path(log):
    erase, write = log.read_text().splitlines()
    assert erase == "--chip esp32s3 --port /dev/ttyACM0 erase-flash"
    head = "--chip esp32s3 --port /dev/ttyACM0 --baud 460800 write-flash -z 0x0 "
    assert write.startswith(head), write
    return write[len(head):]


def test_flash_erases_then_writes_the_image_with_a_romfs_partition_at_offset_zero(tmp_path):
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "ESP32_GENERIC_S3-v1.25.0.bin"
    image.write_bytes(esp_image.merged_image())
    p = flash_sh("--port", "/dev/ttyACM0", "flash", str(image), env=_env(ESPTOOL=esptool))
    sent = _written_path(log)
    assert sent != str(image) and not os.path.exists(sent)  # a temporary copy, removed at the end
    got, src = (tmp_path / "esptool.written").read_bytes(), image.read_bytes()
    assert len(got) == len(src) and got[:0x8000] == src[:0x8000] and got[0x8C00:] == src[0x8C00:]
    new = partitions.parse(got[0x8000:0x8C00])
    assert new == partitions.with_romfs(esp_image.STOCK_8MIB, partitions.FLASH_ROMFS_BYTES)
    assert (new[3].label, new[3].offset, new[3].size) == ("romfs", 0x200000, 0x100000)
    assert ('ROMFS partition "romfs" at offset 0x200000, size 0x100000 (1024 KiB): tools/flash.sh deploy puts '
            "the package there.") in p.stdout
    assert "Written: " not in p.stdout  # the temporary file's name is no news to the user
    assert image.read_bytes() == src  # the download is left as it was


def test_flash_takes_512k_where_the_file_system_has_no_room_for_1mib(tmp_path):
    # A 4 MiB table whose vfs is 1.5 MiB: 1 MiB of romfs would leave it 512 KiB, under the
    # 1 MiB kept; flash takes 512 KiB instead (one slot: no updates over WiFi) and says so.
    esptool, log = _recorder(tmp_path, "esptool")
    table = esp_image.STOCK_8MIB[:2] + [esp_image.E("factory", 0, 0x00, 0x10000, 0x270000, 0),
                                        esp_image.E("vfs", 1, 0x81, 0x280000, 0x180000, 0)]
    image = tmp_path / "ESP32_GENERIC_S3-old.bin"
    image.write_bytes(esp_image.merged_image(table))
    p = flash_sh("--port", "/dev/ttyACM0", "flash", str(image), env=_env(ESPTOOL=esptool))
    assert p.returncode == 0, p.stdout + p.stderr
    new = partitions.table_of((tmp_path / "esptool.written").read_bytes())
    assert [(e.label, e.offset, e.size) for e in new[2:]] == [("factory", 0x10000, 0x270000), ("romfs", 0x280000, 0x80000),
                                                             ("vfs", 0x300000, 0x100000)]
    assert "No room for a 1 MiB romfs partition" in p.stdout and "updates over WiFi" in p.stdout


def test_flash_gives_a_1_26_image_without_vfs_a_romfs_after_the_app(tmp_path):
    # MicroPython 1.26+ tables have no vfs entry (v1.28.0's partitions-4MiBplus.csv): the
    # romfs goes after the app; the port makes vfs after it at boot.
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "ESP32_GENERIC_S3-v1.28.0.bin"
    image.write_bytes(esp_image.merged_image(esp_image.STOCK_V128))
    p = flash_sh("--port", "/dev/ttyACM0", "flash", str(image), env=_env(ESPTOOL=esptool))
    new = partitions.table_of((tmp_path / "esptool.written").read_bytes())
    assert new == esp_image.STOCK_V128 + [partitions.Entry("romfs", 1, 0x8F, 0x200000, 0x100000, 0)]
    assert "from 0x300000 to the end of flash" in p.stdout, p.stdout
    assert 'ROMFS partition "romfs" at offset 0x200000' in p.stdout, p.stdout


def test_flash_writes_an_image_that_has_romfs_already_as_it_is(tmp_path):
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "fw.bin"
    image.write_bytes(esp_image.merged_image(partitions.with_romfs(esp_image.STOCK_8MIB, 0x40000)))
    p = flash_sh("--port", "/dev/ttyACM0", "flash", str(image), env=_env(ESPTOOL=esptool))
    assert (tmp_path / "esptool.written").read_bytes() == image.read_bytes()
    assert "at offset 0x200000, size 0x40000 (256 KiB)" in p.stdout


def test_flash_no_romfs_writes_the_image_unchanged(tmp_path):
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "fw.bin"
    image.write_bytes(esp_image.merged_image())
    p = flash_sh("--port", "/dev/ttyACM0", "flash", "--no-romfs", str(image), env=_env(ESPTOOL=esptool))
    assert _written_path(log) == str(image)
    assert (tmp_path / "esptool.written").read_bytes() == image.read_bytes()
    assert "ROMFS partition" not in p.stdout and "with the romfs partition" not in p.stdout, p.stdout


def test_flash_writes_a_firmware_without_romfs_as_it_is_unless_asked(tmp_path):
    # A build without ROMFS (no vfs.rom_ioctl) would never mount the partition: the file
    # system keeps its flash, and the user is told where the package will go instead.
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "fw.bin"
    image.write_bytes(esp_image.merged_image(romfs=False))
    p = flash_sh("--port", "/dev/ttyACM0", "flash", str(image), env=_env(ESPTOOL=esptool))
    assert (tmp_path / "esptool.written").read_bytes() == image.read_bytes()
    assert "has no ROMFS" in p.stdout and "copy the package as files" in p.stdout, p.stdout
    assert "ROMFS partition" not in p.stdout, p.stdout
    p = flash_sh("--port", "/dev/ttyACM0", "flash", "--romfs", str(image), env=_env(ESPTOOL=esptool))
    new = partitions.table_of((tmp_path / "esptool.written").read_bytes())
    assert new == partitions.with_romfs(esp_image.STOCK_8MIB, partitions.FLASH_ROMFS_BYTES), p.stdout
    assert "this MicroPython has no ROMFS: deploy will copy files" in p.stdout, p.stdout


def test_flash_refuses_a_merged_image_cut_short_before_erasing(tmp_path):
    # A download cut after the table: erasing would leave the chip without MicroPython.
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "fw.bin"
    image.write_bytes(esp_image.merged_image()[:0x8C00])
    p = flash_sh("--port", "/dev/ttyACM0", "flash", "--no-romfs", str(image), env=_env(ESPTOOL=esptool), check=False)
    assert p.returncode == 2 and "cut short" in p.stderr and "nothing erased" in p.stderr, p.stdout + p.stderr
    assert not log.exists() and "Erasing" not in p.stdout


def test_flash_refuses_an_image_without_a_partition_table_before_erasing(tmp_path):
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "micropython.bin"  # the app alone, as a build's micropython.bin (written at 0x10000)
    image.write_bytes(esp_image.merged_image()[0x10000:] * 4)
    # Written at 0x0 it would overwrite the bootloader: refused whatever the options.
    for opts in ((), ("--no-romfs",), ("--romfs",)):
        p = flash_sh("--port", "/dev/ttyACM0", "flash", *opts, str(image), env=_env(ESPTOOL=esptool), check=False)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "no partition table at 0x8000" in p.stderr and "nothing erased" in p.stderr, p.stderr
        assert not log.exists() and "Erasing" not in p.stdout


@pytest.mark.parametrize("head,port,msg", [(b"\xe9" + b"\0" * 15, "/dev/ttyACM0", "not a MicroPython image for the ESP32-S3"),
                                           (b"\x7fELF" + b"\0" * 60, "/dev/ttyACM0", "not a MicroPython image"),
                                           (b"\xe9" + b"\0" * 11 + b"\x09\x00", None, "name its serial device")])
def test_flash_refuses_an_image_for_another_chip_or_no_port_before_erasing(tmp_path, head, port, msg):
    esptool, log = _recorder(tmp_path, "esptool")
    image = tmp_path / "fw.bin"
    image.write_bytes(head)  # the first: an image for the original ESP32 (chip id 0)
    args = (["--port", port] if port else []) + ["flash", str(image)]
    env = _env(ESPTOOL=esptool)
    env.pop("MIMI_PORT", None)
    p = flash_sh(*args, env=env, check=False)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert not log.exists()


def test_config_code_sets_the_key_of_the_provider_stored_on_the_board(tmp_path):
    # The generated code, run by the micropython command against the esp32 stand-in.
    code = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "nvs_config.py"), "api_key=sk-FAKE-k"],
                          capture_output=True, text=True, check=True).stdout
    (tmp_path / "nvs.json").write_text(json.dumps({"mimi": {"provider": ["blob", b"openai".hex()],
                                                            "k_openai": ["blob", b"sk-old".hex()]}}))
    (tmp_path / "cfg.py").write_text(code)
    env = dict(os.environ, MICROPYPATH=hostenv.STUBS, MIMI_FLASH=str(tmp_path))
    p = subprocess.run([hostenv.micropython_exe(), str(tmp_path / "cfg.py")], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and "sk-FAKE" not in p.stdout, p.stdout + p.stderr
    nvs = {k: bytes.fromhex(v[1]).decode() for k, v in json.load(open(tmp_path / "nvs.json"))["mimi"].items()}
    assert nvs == {"provider": "openai", "k_openai": "sk-FAKE-k", "api_key": "sk-FAKE-k"}


@pytest.mark.parametrize("args,msg", [(["flash"], "give the MicroPython image"),
                                      (["flash", "/nonexistent.bin"], "no such file"),
                                      (["flash", "--romfs-kb", "64", "fw.bin"], "unknown option --romfs-kb"),
                                      (["config", "tz=Mars"], "tz: expected"),
                                      (["config", "proxy=10.0.0.2:3128"], "proxy: expected a proxy such as"),
                                      (["config", "colour=blue"], "unknown setting"),
                                      (["config", "provider=custom"], "needs base_url="),
                                      (["config", "provider=ollama"], ":11434/v1"),
                                      (["config", "tz=Mars", "colour=blue"], "unknown setting 'colour'"),
                                      (["frobnicate"], "unknown command")])
def test_bad_arguments_stop_before_touching_the_board(tmp_path, args, msg):
    esptool, elog = _recorder(tmp_path, "esptool")
    mpremote, mlog = _recorder(tmp_path, "mpremote")
    p = flash_sh("--port", "socket://127.0.0.1:9", *args, env=_env(ESPTOOL=esptool, MPREMOTE=mpremote), check=False)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert not elog.exists() and not mlog.exists()


def test_flash_refuses_a_virtual_board(tmp_path):
    image = tmp_path / "fw.bin"
    image.write_bytes(b"\xe9")
    p = flash_sh("--port", "socket://127.0.0.1:7777", "flash", str(image), check=False)
    assert p.returncode == 2 and "serial device" in p.stderr


@pytest.mark.parametrize("args", [["deploy"], ["seed"], ["reset"], ["repl"], ["config", "tz=+8"],
                                  ["deploy", "--mpy"]])
def test_a_missing_mpremote_stops_with_how_to_install_it(tmp_path, args):
    # A machine without the dev tools: no mpremote on PATH, a Python that cannot import it.
    py = tmp_path / "python3"
    py.write_text("#!/bin/sh\nif [ \"$1\" = -c ]; then exit 1; fi\nexec %s \"$@\"\n" % sys.executable)
    py.chmod(0o755)
    env = dict(os.environ, PATH="/usr/bin:/bin", PYTHON=str(py))
    for var in ("MIMI_PORT", "MPREMOTE", "MPY_CROSS"):
        env.pop(var, None)
    p = flash_sh("--port", "/dev/ttyACM0", *args, env=env, check=False)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "is not installed" in p.stderr and 'pip install -e ".[dev]"' in p.stderr, p.stderr
    assert "command not found" not in p.stderr and "Deploying" not in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("wifi", ["never", "delay:40"])
def test_every_command_works_while_the_network_is_missing_or_slow(tmp_path, wifi):
    # MicroPython runs /boot.py on each soft reset, mpremote's too, and mpremote waits 10 s
    # for the raw REPL: a boot that waited for WiFi (a wrong password, a 5 GHz network,
    # slow DHCP, NTP blocked) would lock flash.sh out, config included, which fixes it.
    from vbclient import VBoard

    flash = tmp_path / "board"
    flash.mkdir()
    b = VBoard(flash, env={"MIMI_SIM_WIFI": wifi, "MIMI_SIM_NTP": "never"})
    try:
        flash_sh("--port", b.port, "deploy", "--files")
        flash_sh("--port", b.port, "config", "wifi_ssid=Sim Net", "wifi_pass=FAKE-wrong-pass")
        # From here every soft reset runs a boot.py with WiFi set that cannot connect.
        p = flash_sh("--port", b.port, "seed", timeout=60)
        assert "Seed: copied" in p.stdout, p.stdout + p.stderr
        p = flash_sh("--port", b.port, "deploy", "--files", timeout=60)
        assert "Deployed mimi " in p.stdout, p.stdout + p.stderr
        flash_sh("--port", b.port, "config", "tz=+8", timeout=60)
        flash_sh("--port", b.port, "reset", timeout=60)
        # The assistant started without the network; WiFi is the I/O thread's to bring up.
        got = _board_exec(b.port, "from mimi import app, boot, seam\n"
                          "print(app.running(), boot.state['net'].wifi_attempts >= 1, seam.wifi_status()[0])")
        assert got == "True True False", got
        nvs = {k: bytes.fromhex(v[1]).decode() for k, v in json.load(open(flash / "nvs.json"))["mimi"].items()}
        assert nvs["wifi_ssid"] == "Sim Net" and nvs["tz"] == "+08:00"
    finally:
        b.stop()


class _TLSCounter:
    """A TLS server on 127.0.0.1 that counts the handshakes that completed, then hangs up."""

    def __init__(self, certs):
        import socket
        import ssl
        import threading

        self.handshakes = 0
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certs["cert"], certs["key"])
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.url = "https://localhost:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                c.settimeout(10)
                t = self.ctx.wrap_socket(c, server_side=True)
                self.handshakes += 1
                t.close()
            except OSError:
                c.close()

    def close(self):
        self.ls.close()


def test_doctor_reports_on_the_board_and_changes_nothing(vboard):
    import certgen

    board = vboard.flash
    c = certgen.make()
    tg, llm = _TLSCounter(c), _TLSCounter(c)
    try:
        flash_sh("--port", vboard.port, "deploy", "--files")
        flash_sh("--port", vboard.port, "seed")  # the shipped bundle; the test CA beside it
        (board / "data" / "certs" / "local.pem").write_bytes(open(c["ca"], "rb").read())
        flash_sh("--port", vboard.port, "config", "wifi_ssid=mimi-sim-wifi", "wifi_pass=FAKE-doctor-pass",
                 "tg_token=123456:FAKE-doctor", "tg_api_base=" + tg.url, "provider=anthropic",
                 "api_key=sk-ant-FAKE-doctor", "base_url=" + llm.url, "allowed_chats=42")
        flash_sh("--port", vboard.port, "reset")
        before = json.loads((board / "nvs.json").read_text())
        files = _files(board / "data")
        tg0 = tg.handshakes  # the running assistant's own polls, if any
        p = flash_sh("--port", vboard.port, "doctor", check=False, timeout=90)
        out = p.stdout
        assert p.returncode == 0 and "doctor: all OK" in out, out + p.stderr
        lines = out.splitlines()
        for want in ("OK   MicroPython 1.", "OK   PSRAM: ", "OK   internal RAM: ", "OK   GC heap: ", "OK   flash: ",
                     "OK   WiFi: connected to mimi-sim-wifi, address 127.0.0.1, signal -48 dBm", "OK   clock: 20",
                     "OK   settings store (NVS): write, read back, erase",
                     "OK   DNS localhost: 127.0.0.1 in ", "OK   TLS localhost:%s: handshake in " % tg.url.rsplit(":", 1)[1],
                     "OK   TLS localhost:%s: handshake in " % llm.url.rsplit(":", 1)[1],
                     "OK   thread with a 64 KB stack (",
                     "OK   settings set: allowed_chats, api_key, base_url, key_anthropic, provider, tg_api_base, "
                     "tg_token, web_made, wifi_pass, wifi_ssid"):
            assert any(ln.startswith(want) for ln in lines), (want, out)
        assert "FAKE" not in out + p.stderr  # names, never values
        print(out)  # the report, for the record (pytest -s)
        assert llm.handshakes == 2 and tg.handshakes >= tg0 + 1  # its own, done on the board
        # Nothing changed: the settings store and /data are as they were, and the
        # assistant still runs (resume: no soft reset).
        assert json.loads((board / "nvs.json").read_text()) == before and _files(board / "data") == files
        got = _board_exec(vboard.port, "from mimi import app\nprint(app.running())")
        assert got == "True", got
    finally:
        tg.close()
        llm.close()


def test_doctor_without_mimi_on_the_board_says_deploy(vboard):
    p = flash_sh("--port", vboard.port, "doctor", check=False)
    assert p.returncode == 1 and "FIX  mimi is not on this board" in p.stdout and "flash.sh deploy" in p.stdout, \
        p.stdout + p.stderr


@pytest.mark.parametrize("args", [["deploy"], ["seed"], ["reset"], ["repl"], ["config", "tz=+8"]])
def test_nothing_listening_on_a_socket_port_says_how_to_start_the_virtual_board(tmp_path, args):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # a port of ours that nobody listens on
    port = "socket://127.0.0.1:%d" % s.getsockname()[1]
    mpremote, mlog = _recorder(tmp_path, "mpremote")
    try:
        p = flash_sh("--port", port, *args, env=_env(MPREMOTE=mpremote), check=False)
    finally:
        s.close()
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "nothing is listening on " + port in p.stderr, p.stderr
    assert "python3 -m host_sim vboard --flash DIR --port %s" % port.rsplit(":", 1)[1] in p.stderr
    assert not mlog.exists()


def test_config_never_echoes_an_argument_that_may_be_a_password(tmp_path):
    mpremote, mlog = _recorder(tmp_path, "mpremote")
    p = flash_sh("--port", "socket://127.0.0.1:9", "config", "wifi_ssid=Home", "FAKE-pass-word",
                 env=_env(MPREMOTE=mpremote), check=False)
    assert p.returncode == 2 and "argument 2 (no '='): expected NAME=VALUE" in p.stderr, p.stderr
    assert "FAKE" not in p.stdout + p.stderr and not mlog.exists()
