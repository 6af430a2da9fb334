"""``python -m host_sim run``: boot the firmware with a folder as the board's flash.

``DIR/data`` is ``/data``; the settings store (``nvs.json``) and RTC memory live in DIR.
Files of ``spiffs_seed/`` missing from ``DIR/data`` are copied in; existing files are never
overwritten. ``--runtime micropython`` runs the very same files under the ``micropython``
command. A reset requested by the firmware (exit status 75) boots it again.

Settings may also come from the environment (the simulator only; the firmware never reads
these variables). At every boot, before the firmware starts, each one that is set is
written over the stored setting in ``DIR/nvs.json`` (the stand-in of NVS namespace
``mimi``), so they override what the serial CLI or a Telegram command stored:

    MIMI_TG_TOKEN       tg_token       the bot token from @BotFather (123456789:AAH...)
    MIMI_TG_API_BASE    tg_api_base    default https://api.telegram.org
    MIMI_PROVIDER       provider       anthropic, openai or a preset (openrouter, ...);
                                       custom needs MIMI_LLM_BASE_URL too
    MIMI_API_KEY        api_key
    MIMI_MODEL          model
    MIMI_LLM_BASE_URL   base_url       the official SDK's convention: no /v1 for
                                       Anthropic, with /v1 for OpenAI-compatible servers
    MIMI_ALLOWED_CHATS  allowed_chats  comma-separated chat ids (groups are negative;
                                       Feishu's: fs_ou_... a person, fs_oc_... a group)
    MIMI_TZ             tz             UTC offset: +08:00 (also +8, +0800, -05:30, UTC)
    MIMI_PROXY          proxy          http://[user:pass@]host:port or socks5://...; off for none
    MIMI_NO_PROXY       no_proxy       reached directly: hosts, a.b.c.d/n, * or local (default)
    MIMI_FEISHU_APP_ID, MIMI_FEISHU_APP_SECRET, MIMI_FEISHU_DOMAIN
                        feishu_app_id, feishu_app_secret, feishu_domain
                                       the Feishu app (domain default https://open.feishu.cn;
                                       https://open.larksuite.com for Lark)
    MIMI_WEB_PASSWORD   web_password   the web app's and the LAN gateway's password (8+
                                       characters); unset: no web app (the simulator,
                                       unlike a board, makes none at first start)
    MIMI_WEB_PORT       web_port       the web app's port (default here 8080; a board's: 80)
    MIMI_GATEWAY_PORT   gateway_port   the chat gateway's port (default 18789)
    MIMI_MQTT_URL       mqtt_url       the MQTT broker: mqtt://[user:pass@]host[:port], or
                                       mqtts:// (TLS); off for none (docs: README, "MQTT")

Two pairs go together: a token given without ``MIMI_TG_API_BASE`` sets the base back to
the default (a token for the real Telegram never goes to a local fake's address), and a
provider given without ``MIMI_LLM_BASE_URL`` clears the base URL (the provider's own).
``MIMI_WEB_PASSWORD`` without ``MIMI_WEB_PORT`` puts the web app on port 8080.
The firmware keeps one key per provider (``key_<provider>``) and sends no other, so
``MIMI_API_KEY`` is stored as the key of the provider in effect (and as ``api_key``).
A bad value stops the launch with a message naming the variable; nothing is written.
"""
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from host_sim import hostenv

RESET_EXIT = 75
# The micropython runtime's heap: an ESP32-S3 with 2 MB of PSRAM, the board the README
# recommends (MicroPython gives nearly all of it to the GC heap); --heap 256K plays a board
# without PSRAM. Memory budgets are measured by `python -m host_sim bench`.
HEAP_DEFAULT = "2M"


def seed_flash(flash_dir):
    """Copy files of ``spiffs_seed/`` missing from ``flash_dir/data``; return how many were copied."""
    data = os.path.join(flash_dir, "data")
    os.makedirs(data, exist_ok=True)
    n = 0
    for d, _, names in os.walk(hostenv.SEED):
        rel = os.path.relpath(d, hostenv.SEED)
        dest_dir = os.path.normpath(os.path.join(data, rel))
        os.makedirs(dest_dir, exist_ok=True)
        for name in names:
            dest = os.path.join(dest_dir, name)
            if not os.path.exists(dest):
                shutil.copyfile(os.path.join(d, name), dest)
                n += 1
    return n


# -- settings from the environment ----------------------------------------------------

ENV_SETTINGS = (
    ("MIMI_TG_TOKEN", "tg_token"),
    ("MIMI_TG_API_BASE", "tg_api_base"),
    ("MIMI_PROVIDER", "provider"),
    ("MIMI_API_KEY", "api_key"),
    ("MIMI_MODEL", "model"),
    ("MIMI_LLM_BASE_URL", "base_url"),
    ("MIMI_ALLOWED_CHATS", "allowed_chats"),
    ("MIMI_TZ", "tz"),
    ("MIMI_PROXY", "proxy"),
    ("MIMI_NO_PROXY", "no_proxy"),
    ("MIMI_FEISHU_APP_ID", "feishu_app_id"),
    ("MIMI_FEISHU_APP_SECRET", "feishu_app_secret"),
    ("MIMI_FEISHU_DOMAIN", "feishu_domain"),
    ("MIMI_WEB_PASSWORD", "web_password"),
    ("MIMI_WEB_PORT", "web_port"),
    ("MIMI_GATEWAY_PORT", "gateway_port"),
    ("MIMI_MQTT_URL", "mqtt_url"),
)
TG_API_BASE_DEFAULT = "https://api.telegram.org"
WEB_PORT_DEFAULT = "8080"
# The presets of docs/internals.md ("LLM"), when firmware/mimi/llm does not say (its
# PRESETS map each to a wire protocol, a base URL and a model).
PROVIDERS = ("anthropic", "openai", "openrouter", "deepseek", "ollama", "lmstudio", "custom")
NVS_FILE = "nvs.json"
NVS_NAMESPACE = "mimi"


def _literal_assignments(path):
    """The module-level assignments of ``path`` whose values are literals, read with
    ``ast`` (no firmware code runs in this process): ``{name: value}``, plus for
    ``NAME["key"] = literal`` lines, ``{(name, key): value}``."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        t = node.targets[0]
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            continue
        if isinstance(t, ast.Name):
            out[t.id] = value
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            try:
                out[(t.value.id, ast.literal_eval(t.slice))] = value
            except ValueError:
                pass
    return out


def setting_specs():
    """``config.SETTINGS`` of the firmware (name -> (store key, default, secret)), read
    from ``firmware/mimi/config.py``: the dict and the ``SETTINGS["x"] = ...`` lines that
    subsystems add after it."""
    found = _literal_assignments(os.path.join(hostenv.FIRMWARE, "mimi", "config.py"))
    if "SETTINGS" not in found:
        raise RuntimeError("no SETTINGS in firmware/mimi/config.py")
    specs = dict(found["SETTINGS"])
    for k, v in found.items():
        if isinstance(k, tuple) and k[0] == "SETTINGS":
            specs[k[1]] = v
    return specs


def providers():
    """The provider presets of ``firmware/mimi/llm/__init__.py`` (``PRESETS``' names)."""
    try:
        found = _literal_assignments(os.path.join(hostenv.FIRMWARE, "mimi", "llm", "__init__.py"))
    except OSError:
        found = {}
    return tuple(found.get("PRESETS") or PROVIDERS)


def _tz(v):
    s = v.strip().upper()
    if s in ("UTC", "Z", "GMT"):
        return "+00:00"
    if not s or s[0] not in "+-":
        raise ValueError("a UTC offset such as +08:00 or -05:30")
    sign, rest = s[0], s[1:].replace(":", "")
    if not rest.isdigit() or len(rest) not in (1, 2, 4):
        raise ValueError("a UTC offset such as +08:00 or -05:30")
    h, m = (int(rest), 0) if len(rest) <= 2 else (int(rest[:2]), int(rest[2:]))
    if h > 14 or m >= 60 or (h == 14 and m):
        raise ValueError("an offset between -14:00 and +14:00")
    return "%s%02d:%02d" % (sign, h, m)


def _chats(v):
    ids = [p.strip() for p in v.split(",") if p.strip()]
    for i in ids:
        fs = i[:6] in ("fs_ou_", "fs_oc_") and len(i) > 6 and all(c.isascii() and (c.isalnum() or c in "_-") for c in i)
        if not i.lstrip("-").isdigit() and not fs:
            raise ValueError("comma-separated chat ids such as 123456789,-100987 or fs_ou_... (got %r)" % i)
    return ",".join(i if i[:3] == "fs_" else str(int(i)) for i in ids)


def _url(v):
    v = v.strip().rstrip("/")
    if not (v.startswith("http://") or v.startswith("https://")) or len(v) < 10:
        raise ValueError("an http:// or https:// URL")
    return v


def _provider(v):
    v = v.strip().lower()
    known = providers()
    if v not in known:
        raise ValueError("one of " + ", ".join(known))
    return v


def _plain(v):
    v = v.strip()
    if not v or any(c in v for c in "\r\n\t "):
        raise ValueError("a value without spaces")
    return v


def _mqtt_url(v):
    # As mimi/net/mqtt.py's parse(): the board refuses what this refuses.
    v = v.strip()
    if v.lower() in ("off", "none"):
        return ""
    m = re.fullmatch(r"(?i)mqtts?://(?:[^@/:]+(?::[^@/]*)?@)?(\[[0-9a-fA-F:.]+\]|[^:@/\[\]\s]+)(?::(\d{1,5}))?/?", v)
    if not m or m.group(2) and not 0 < int(m.group(2)) < 65536:
        raise ValueError("an MQTT broker such as mqtt://[user:pass@]host[:port] or mqtts://...")
    return v


def _proxy(v):
    # As mimi/net/proxy.py's parse(): the board refuses what this refuses.
    v = v.strip()
    if v.lower() in ("off", "none"):
        return ""
    m = re.fullmatch(r"(?i)(http|socks5h?)://(?:[^@/]*@)?(\[[0-9a-fA-F:.]+\]|[^:@/\[\]]+):(\d{1,5})/?", v)
    if not m or not 0 < int(m.group(3)) < 65536:
        raise ValueError("a proxy such as http://[user:pass@]host:port or socks5://[user:pass@]host:port")
    return v


_TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


def _token(v):
    # Telegram's bot tokens: the bot's numeric id, a colon, then (today) 35 characters of
    # [A-Za-z0-9_-] (https://core.telegram.org/bots/api#authorizing-your-bot). The length
    # is not Telegram's promise, so only 10 or more are asked for.
    v = v.strip()
    bot, colon, secret = v.partition(":")
    if not (colon and bot.isdigit() and len(secret) >= 10 and all(c in _TOKEN_CHARS for c in secret)):
        raise ValueError("a bot token from @BotFather: digits, a colon, then about 35 letters, digits, "
                         "'-' or '_' (123456789:AAH...; without a 'bot' prefix)")
    return v


def _one_of(*choices):
    def check(v):
        v = v.strip().lower()
        if v not in choices:
            raise ValueError("one of " + ", ".join(choices))
        return v
    return check


def _port(raw):
    if not raw.strip().isdigit() or not 0 < int(raw) < 65536:
        raise ValueError("a port number, 1-65535")
    return str(int(raw))


def _web_password(raw):
    if len(raw) < 8 or raw.strip() != raw or any(c <= " " for c in raw):
        raise ValueError("at least 8 characters, no spaces")
    return raw


_CHECKS = {"tg_token": _token, "tz": _tz, "allowed_chats": _chats, "tg_api_base": _url, "base_url": _url, "provider": _provider,
           "proxy": _proxy, "mqtt_url": _mqtt_url, "feishu_domain": _url, "feishu_app_id": _plain,
           # who sees the owner's memory, where other chats may send (docs/trust.md)
           "share_memory": _one_of("none", "people", "all"), "cross_chat": _one_of("none", "owner", "all"),
           "web_port": _port, "gateway_port": _port, "web_password": _web_password}
_VALUE_MAX_BYTES = 512  # what the firmware's settings store takes (seam.store_set)


def check_setting(name, raw):
    """Return setting ``name``'s value ``raw`` (str) in the stored form, or raise ``ValueError``.

    Time zones, chat lists, URLs and providers are checked and normalised; other values
    (tokens, keys, WiFi names and passwords) are kept as given, spaces included, but
    must be one line of at most 512 bytes. ``KeyError`` for an unknown name.
    """
    if name not in setting_specs():
        raise KeyError(name)
    if name in _CHECKS:
        return _CHECKS[name](raw)
    if any(c in raw for c in "\r\n\0"):
        raise ValueError("one line of text")
    if len(raw.encode()) > _VALUE_MAX_BYTES:
        raise ValueError("at most %d bytes" % _VALUE_MAX_BYTES)
    return raw


def settings_from_env(environ):
    """The settings the ``MIMI_*`` variables of ``environ`` give: {name: str or None}.

    None means "erase (back to the default)". Variables that are unset or empty are
    left out. Raises ``ValueError`` naming the variable when a value is malformed.
    """
    out = {}
    for var, name in ENV_SETTINGS:
        raw = environ.get(var, "")
        if not raw.strip():
            continue
        try:
            out[name] = _CHECKS.get(name, _plain)(raw)
        except ValueError as e:
            raise ValueError("%s: expected %s" % (var, e)) from None
    if "tg_token" in out and "tg_api_base" not in out:
        out["tg_api_base"] = TG_API_BASE_DEFAULT
    if "web_password" in out and "web_port" not in out:
        out["web_port"] = WEB_PORT_DEFAULT  # not the board's 80, which a desktop user may not open
    if "provider" in out and "base_url" not in out:
        if out["provider"] == "custom":
            raise ValueError("MIMI_PROVIDER=custom needs MIMI_LLM_BASE_URL: the server's OpenAI-compatible "
                             "address, with /v1 (http://192.168.1.20:8000/v1)")
        out["base_url"] = None
    return out


def _read_store(path):
    """The settings store at ``path`` as a dict ({} when missing or empty).

    Raises ``ValueError`` when the file is there but is not what the ``esp32`` stand-in
    writes (a JSON object of namespaces, each an object of ``[kind, value]`` items).
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode())
    except ValueError as e:  # UnicodeDecodeError is one
        raise ValueError("not valid JSON (%s)" % e) from None
    if not isinstance(data, dict) or not all(
            isinstance(ns, dict) and all(isinstance(v, list) and len(v) == 2 for v in ns.values())
            for ns in data.values()):
        raise ValueError("valid JSON, but not an object of namespaces holding [kind, value] items")
    return data


def set_damaged_store_aside(flash_dir):
    """Move a damaged ``nvs.json`` of ``flash_dir`` aside, never deleting it.

    Returns ``(new path, what is wrong)``, or None when the store is fine or missing.
    The board then starts with empty settings; the old file stays for its owner to mend.
    """
    path = os.path.join(flash_dir, NVS_FILE)
    try:
        _read_store(path)
        return None
    except ValueError as e:
        why = str(e)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside, n = "%s.damaged-%s" % (path, stamp), 1
    while os.path.exists(aside):
        n += 1
        aside = "%s.damaged-%s-%d" % (path, stamp, n)
    os.replace(path, aside)
    return aside, why


def _stored(flash_dir, name):
    """The stored value of setting ``name`` in ``flash_dir`` (str), or None."""
    key = setting_specs()[name][0]
    try:
        item = _read_store(os.path.join(flash_dir, NVS_FILE)).get(NVS_NAMESPACE, {}).get(key)
    except (OSError, ValueError):
        return None
    if not item or item[0] != "blob":
        return None
    return bytes.fromhex(item[1]).decode()


def store_settings(flash_dir, values):
    """Write ``values`` ({name: str or None}) into the settings store of ``flash_dir``.

    The file format is the ``esp32`` stand-in's (``host_sim/stubs/esp32.py``): JSON
    ``{namespace: {key: ["blob", hex]}}``, replaced atomically. Other keys and
    namespaces are kept. Raises ``ValueError`` when the file is damaged (nothing is
    written over it: ``set_damaged_store_aside`` first).
    """
    specs = setting_specs()
    path = os.path.join(flash_dir, NVS_FILE)
    data = _read_store(path)
    ns = data.setdefault(NVS_NAMESPACE, {})
    for name, value in values.items():
        key = specs[name][0]
        if value is None:
            ns.pop(key, None)
        else:
            ns[key] = ["blob", value.encode().hex()]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def forget_store_keys(flash_dir, keys):
    """Remove raw store ``keys`` (e.g. ``tg_offset``) from the settings store of ``flash_dir``."""
    path = os.path.join(flash_dir, NVS_FILE)
    data = _read_store(path)
    ns = data.get(NVS_NAMESPACE, {})
    if not any(k in ns for k in keys):
        return
    for k in keys:
        ns.pop(k, None)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def apply_env_settings(flash_dir, environ):
    """Store the settings of ``environ``'s ``MIMI_*`` variables; return the names stored.

    Raises ``ValueError`` (nothing written) when a value is malformed.
    """
    values = settings_from_env(environ)
    specs = setting_specs()
    if values.get("api_key"):
        # The firmware reads only the provider's own key: set the one of the provider in
        # effect after this boot.
        prov = values.get("provider") or _stored(flash_dir, "provider") or specs["provider"][1]
        if "key_" + prov in specs:
            values["key_" + prov] = values["api_key"]
    names = sorted(values)
    if values:
        store_settings(flash_dir, values)
    no_first_web_password(flash_dir)
    return names


def no_first_web_password(flash_dir):
    """Mark the store of ``flash_dir`` so the firmware makes no web password at its first
    start (``mimi.web.auth.first_start``, run by /main.py): a board makes one and serves
    on port 80; a simulator serves only when ``MIMI_WEB_PASSWORD`` asks."""
    if "web_made" in setting_specs() and not _stored(flash_dir, "web_made"):
        store_settings(flash_dir, {"web_made": "1"})


_KILL_AFTER_S = 3.0


def _die_with_parent(parent_pid):
    """A ``preexec_fn`` that makes the board die with the launcher (Linux ``PR_SET_PDEATHSIG``).

    The board has its own session, so killing the launcher's process group no longer
    reaches it; a killed launcher (``kill -9``: the tests' power cut) must still take the
    board with it. Elsewhere a no-op.
    """
    def arm():
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent_pid:  # the launcher died before prctl
            os._exit(1)
    return arm if sys.platform.startswith("linux") else None


def run(flash_dir, runtime="cpython", heap=HEAP_DEFAULT, env_extra=None, console=None):
    """Boot the firmware until SIGINT/SIGTERM; reboot it when it asks to reset. Returns exit status.

    ``console``: read Python from this process's stdin and run it on the board, as at a
    board's REPL (``host_sim/repl.py``); None: when stdin is a terminal and this is its
    foreground job. The console's end of input stops the board, as SIGINT does.
    ``env_extra``: variables added to this process's environment for the board (the
    ``MIMI_*`` settings among them are applied as if they were set in the shell;
    ``MIMI_ROMFS_IMAGE``, a micropython board imports the package from that ROMFS image,
    built by ``python -m host_sim.romfs``).
    Returns 2 when a ``MIMI_*`` setting is malformed.
    """
    flash_dir = os.path.abspath(flash_dir)
    try:
        seed_flash(flash_dir)
    except OSError as e:
        print("mimi host simulator: --flash %s: %s" % (flash_dir, e.strerror or e), file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.update(env_extra or {})
    try:
        settings_from_env(env)  # check every value before the first boot
    except ValueError as e:
        print("mimi host simulator: %s" % e, file=sys.stderr)
        return 2
    env["MIMI_FLASH"] = flash_dir
    env["PYTHONPATH"] = hostenv.ROOT + os.pathsep + env.get("PYTHONPATH", "")
    board = os.path.join(hostenv.ROOT, "host_sim", "board.py")
    if runtime == "micropython":
        exe = hostenv.micropython_exe()
        if not exe:
            print("mimi host simulator: --runtime micropython: %s" % hostenv.micropython_missing(), file=sys.stderr)
            return 2
        env["MICROPYPATH"] = hostenv.micropython_path()
        if env.get("MIMI_ROMFS_IMAGE"):
            # The package from its ROMFS image, as flash.sh deploys it: host_sim/board.py
            # mounts it first (boot.py and main.py stay files, as on a board).
            env, heap = hostenv.romfs_board(env, heap, env["MIMI_ROMFS_IMAGE"])
        cmd = [exe, "-X", "heapsize=" + heap, board, hostenv.FIRMWARE]
    else:
        cmd = [sys.executable, "-m", "host_sim.cpython_board"]
    current = [None]
    stopping = [0.0]  # when the first stop signal came (time.monotonic()), 0 before
    # The micropython command is MicroPython inside a CPython process; its SIGINT handler
    # jumps out of whichever thread the kernel picks, and a thread that is just starting
    # segfaults (seen in a core dump). So that board is asked to stop through its stdin,
    # which host_sim/board.py watches; CPython boards get SIGINT as usual.
    by_pipe = runtime == "micropython"
    if by_pipe:
        env["MIMI_STOP_STDIN"] = "1"
    if console is None:
        from host_sim import repl

        console = repl.foreground_tty()
    ack_r = ack_w = None
    if console:
        ack_r, ack_w = os.pipe()  # the board writes a byte on it when a console entry has run
        env["MIMI_CONSOLE_ACK_FD"] = str(ack_w)

    def ask_stop(p):
        if not by_pipe:
            p.send_signal(signal.SIGINT)
            return
        try:
            p.stdin.write(b"stop\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def forward(signum, frame):
        # The board runs in its own session, so a Ctrl-C in the terminal reaches this
        # process only and the board gets exactly one SIGINT (two made app.stop() itself
        # raise KeyboardInterrupt). A signal more than 3 s after the first pulls the plug.
        now = time.monotonic()
        first = not stopping[0]
        if first:
            stopping[0] = now
        p = current[0]
        if p is None or p.poll() is not None:
            return
        if first:
            ask_stop(p)
        elif now - stopping[0] > _KILL_AFTER_S:
            print("[sim] the board did not stop: pulling the plug", file=sys.stderr, flush=True)
            p.kill()

    # Handlers go in before the first start: a handled signal is back at its default in
    # the board, even when this process began with SIGINT ignored (a background job of a
    # non-interactive shell), so Ctrl-C and SIGTERM always reach the firmware.
    old_int = signal.signal(signal.SIGINT, forward)
    old_term = signal.signal(signal.SIGTERM, forward)
    saved_tty = None
    if console:
        from host_sim import repl

        saved_tty = repl.tty_state()
        repl.start(current, stopping, ack_r, lambda: forward(None, None))
    try:
        while True:
            damaged = set_damaged_store_aside(flash_dir)
            if damaged:
                print("mimi host simulator: the settings store %s was damaged (%s). It was moved to %s and "
                      "the board starts with empty settings (WiFi, token, keys, allowed chats): set them again, "
                      "or mend that file and move it back." % (os.path.join(flash_dir, NVS_FILE), damaged[1],
                                                               damaged[0]), file=sys.stderr, flush=True)
            if apply_env_settings(flash_dir, env):  # the variables set, not what follows from them
                print("[sim] settings from the environment: %s" % ", ".join(
                    var for var, _ in ENV_SETTINGS if env.get(var, "").strip()), flush=True)
            proc = subprocess.Popen(cmd, env=env, cwd=flash_dir, start_new_session=True,
                                    stdin=subprocess.PIPE if by_pipe or console else None,
                                    pass_fds=(ack_w,) if console else (),
                                    preexec_fn=_die_with_parent(os.getpid()))
            current[0] = proc
            if stopping[0]:
                ask_stop(proc)  # it came while the board was starting
            rc = proc.wait()
            if rc != RESET_EXIT or stopping[0]:
                return rc
            print("[sim] the board reset; booting again", flush=True)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        if saved_tty is not None:
            repl.tty_restore(saved_tty)



def portal_cmd(flash_dir, port, dns_port, runtime="cpython", heap=HEAP_DEFAULT):
    """The command line that serves the setup portal alone (``host_sim/portal_board.py``)
    with ``flash_dir`` as the flash, and its environment: ``(argv, env)``. ``OSError``
    when ``runtime`` is micropython and the command is missing."""
    env = dict(os.environ)
    env["MIMI_FLASH"] = os.path.abspath(flash_dir)
    env["PYTHONPATH"] = hostenv.ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if runtime == "micropython":
        exe = hostenv.micropython_exe()
        if not exe:
            raise OSError(hostenv.micropython_missing())
        env["MICROPYPATH"] = hostenv.micropython_path()
        return [exe, "-X", "heapsize=" + heap, os.path.join(hostenv.ROOT, "host_sim", "portal_board.py"),
                str(port), str(dns_port)], env
    return [sys.executable, "-m", "host_sim.portal_board", str(port), str(dns_port)], env


def portal(flash_dir, port, dns_port, runtime="cpython"):
    """``python -m host_sim portal``: the setup portal alone until it closes or Ctrl-C.
    Returns the exit status (2 when the flash folder or the runtime is missing)."""
    flash_dir = os.path.abspath(flash_dir)
    try:
        seed_flash(flash_dir)
        argv, env = portal_cmd(flash_dir, port, dns_port, runtime)
    except OSError as e:
        print("mimi host simulator: %s" % (e.strerror or e), file=sys.stderr)
        return 2
    try:
        return subprocess.call(argv, env=env, cwd=flash_dir)
    except KeyboardInterrupt:
        return 0
