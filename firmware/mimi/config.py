"""The shared tunables and flash paths, and the persistent settings.

Tunables are grouped by subsystem, each with a prefix and its unit in the name (as
MimiClaw's ``mimi_config.h``). Here are those used by several modules, or by the tests
and tools; a tunable only one module uses sits at the top of that module as
``_NAME = const(N)`` (same name, a leading underscore): the compiler inlines it, so it
costs no RAM, where a name here costs a dict entry and an interned string.

Flash paths are device paths built from ``DATA``; map them with ``seam.real_path`` only
inside ``mimi.storage``.

Settings are what the owner changes at run time (WiFi, tokens, provider, model, time
zone, allowed chats). They live in the settings store (NVS namespace ``mimi``, see
``seam.store_get``), never in ``/data``, so no tool can reach them. ``get(name)`` falls
back to the default in ``SETTINGS``.
"""
from micropython import const

from mimi import seam

# -- flash layout (seed 000; ../shared/DESIGN.md "Files on flash") --------------------
DATA = "/data"
CONFIG_DIR = DATA + "/config"
SOUL_PATH = CONFIG_DIR + "/SOUL.md"
USER_PATH = CONFIG_DIR + "/USER.md"
MEMORY_DIR = DATA + "/memory"
MEMORY_PATH = MEMORY_DIR + "/MEMORY.md"
SKILLS_DIR = DATA + "/skills"
SESSIONS_DIR = DATA + "/sessions"
CRON_PATH = DATA + "/cron.json"
HEARTBEAT_PATH = DATA + "/HEARTBEAT.md"
DATASHEETS_DIR = DATA + "/datasheets"
CERTS_DIR = DATA + "/certs"
STATE_DIR = DATA + "/state"  # small runtime state: Telegram offset, token counts

# -- agent -----------------------------------------------------------------------------
AGENT_MAX_ROUNDS = const(10)  # LLM calls per inbound message
AGENT_CONTEXT_BYTES = const(16384)  # the system prompt buffer

# Modules a turn would otherwise load on first use: app.init loads them in this order, one
# by one with a collection after each, while the heap is still whole (docs/heap.md).
APP_PRELOAD = ("mimi.net.certs", "mimi.net.http", "mimi.llm.wire", "mimi.llm.common", "mimi.llm.usage",
               "mimi.hw.pins", "mimi.hw.datasheets", "mimi.hw.retrieval", "mimi.hw.fastpath")

# -- bus -------------------------------------------------------------------------------
BUS_INBOUND_MAX = const(8)
BUS_OUTBOUND_MAX = const(16)

# -- boot (mimi/boot.py; issue 5) -------------------------------------------------------
BOOT_WIFI_WAIT_MS = const(15000)  # one connection attempt
BOOT_WIFI_BACKOFF_MIN_MS = const(2000)
BOOT_HEALTHY_MS = const(60000)  # running this long clears the crash count
BOOT_SAFE_FLAG = "/safemode"  # at the flash root, outside /data: no tool can create it

# -- app: threads, watchdog (mimi/app.py; issue 5) ---------------------------------------
APP_WDT_TIMEOUT_MS = const(90000)  # above any single blocking call of the I/O thread
APP_AGENT_STALL_MS = const(900000)  # a turn with no bus activity this long is a hang
APP_RESTARTS_MAX = const(5)  # thread restarts within the window, then a board reset
APP_RESTART_PAUSE_MS = const(2000)
# Each thread's stack (agent and I/O): JSON nesting plus an mbedTLS handshake needs well
# over the ESP32 port's 5 KB default (README "Threads"); mimi.doctor tries one the same size.
APP_THREAD_STACK_BYTES = const(16384)
# The modules whose tools (their lines in mimi/tools/tools.jsonl) every app registers.
APP_TOOL_MODULES = ("mimi.tools.files", "mimi.tools.memory_tools", "mimi.tools.clock", "mimi.tools.messaging",
                    "mimi.tools.cron_tools", "mimi.tools.web", "mimi.tools.gpio", "mimi.rules.chat")

# -- telegram (mimi/channels/telegram.py; issue 5) -------------------------------------
TG_POLL_TIMEOUT_S = const(30)  # getUpdates long poll
TG_POLL_DEADLINE_MS = const(40000)  # the long poll's whole exchange: 30 s of waiting, then the answer
TG_POLL_LIMIT = const(4)  # updates per poll: bounds the response size
TG_POLL_BUF_BYTES = const(16384)  # getUpdates response buffer, allocated once
TG_SEND_TIMEOUT_MS = const(15000)  # each read of an answer
TG_CALL_DEADLINE_MS = const(20000)  # any other call, whole; and a tick's time before it leaves the rest
TG_SEND_BUF_BYTES = const(1024)  # other responses: only ok/error matter
TG_SEND_TRIES = const(5)  # a chunk that fails this often (any failure, 429 too) is dropped, logged
TG_OFFSET_KEY = "tg_offset"  # settings-store key (NVS wear-levels it)
TG_OFFSET_SAVE_EVERY = const(20)  # updates
TG_TYPING_EVERY_MS = const(4000)  # Telegram shows "typing" for 5 s
TG_BACKOFF_MIN_MS = const(1000)
TG_BACKOFF_MAX_MS = const(60000)
TG_CONFLICT_BACKOFF_MS = const(30000)  # 409: another poller or a webhook
TG_AUTH_BACKOFF_MS = const(300000)  # 401: the token is wrong
TG_RETRY_AFTER_MAX_S = const(300)
TG_DENY_REPLY_MS = const(600000)  # one answer per stranger per 10 minutes
TG_DENY_CHATS_MAX = const(16)  # strangers answered per TG_DENY_REPLY_MS; more wait for the period to pass
TG_PAIR_TRIES = const(10)  # wrong pairing codes before the code is void
TG_MEDIA_REPLY = "I can read text only: please send your message as text."

# -- cron and heartbeat (mimi/services/; issue 5) ---------------------------------------
HEARTBEAT_EVERY_MS = const(1800000)  # 30 minutes
HEARTBEAT_TASKS_MAX = const(20)
HEARTBEAT_OK = "HEARTBEAT_OK"

# -- serial console (mimi/cli.py; issue 5) ----------------------------------------------
CLI_CHAT_ID = "console"  # the cli channel's one chat

# -- storage (mimi/storage/; issue 3) --------------------------------------------------
FS_CHUNK_BYTES = const(512)  # copy and scan block: every streamed file op uses this
SESSION_ARCHIVE_DIR = SESSIONS_DIR + "/archive"
SESSION_ROTATE_BYTES = const(65536)  # a session file past this moves to the archive
SESSION_ARCHIVES_MAX = const(8)  # archives kept per chat session (a cron or heartbeat one keeps 1); the oldest goes first
SESSION_TOOL_RESULT_MAX_BYTES = const(1024)  # tool results are stored cut to this
SESSION_LINE_MAX_BYTES = const(16384)  # longer lines stay on flash; the window gets a pointer
MEMORY_MAX_BYTES = const(16384)  # MEMORY.md as written by write_memory
MEMORY_DAILY_MAX_BYTES = const(16384)  # one day's note, as appended by append_daily
MEMORY_RECENT_MAX_BYTES = const(4096)
SKILLS_INDEX_MAX_BYTES = const(2048)
SKILLS_SUMMARY_MAX_BYTES = const(200)  # one skill's line in the index
SKILLS_INDEX_TTL_S = const(600)  # the index is rebuilt at most this often (or on a write)
CRON_JOBS_MAX = const(16)

# -- context (mimi/agent/context.py; ../shared/DESIGN.md "Context") -------------------
CONTEXT_RULES_MAX_BYTES = const(3072)
CONTEXT_SOUL_MAX_BYTES = const(1024)
CONTEXT_MEMORY_MAX_BYTES = const(4096)
CONTEXT_NOTES_MAX_BYTES = const(4096)
CONTEXT_SKILLS_MAX_BYTES = const(2048)

# -- tools (mimi/tools/; issue 3) ------------------------------------------------------
TOOL_READ_MAX_BYTES = const(7680)  # one read_file call; under the 8 KB result cap
TOOL_WRITE_MAX_BYTES = const(32768)  # content of one write_file / edit_file
TOOL_SECTION_MAX_BYTES = const(7680)
MEMORY_SEARCH_MAX_MATCHES = const(50)  # seed 003
MEMORY_SEARCH_MAX_BYTES = const(10000)  # seed 003's 10,000 characters, counted in bytes

# -- http (issue 4; mimi/net/http.py) ---------------------------------------------------
HTTP_CONNECT_TIMEOUT_MS = const(10000)  # TCP connect and TLS handshake
HTTP_BODY_MAX_BYTES = const(4096)  # body cap when the caller passes no buffer
HTTP_LINE_BYTES = const(1024)  # request bytes gathered per socket write; then the status line, a header line...

# -- hardware: pins, datasheets, fast path (issue 7; seeds 002, 004) ------------------
# The owner's pin policy sits at the flash root, outside /data, so no tool can widen it
# (see mimi/hw/pins.py for its format).
HW_POLICY_PATH = "/gpio.json"
HW_CHUNK_MAX_BYTES = const(2048)  # one datasheet chunk (a markdown section or a piece of one)
HW_MAX_FILES = const(16)  # datasheet files indexed
HW_MAX_CHUNKS = const(256)  # chunks indexed over all files (12 bytes of RAM each)
HW_RAG_MAX_KEYWORDS = const(24)  # keywords taken from one message
HW_PWM_FREQ_DEFAULT_HZ = const(1000)
HW_PWM_FREQ_MAX_HZ = const(40000)
HW_RGB_ON = (24, 24, 24)  # "on" for an addressable RGB LED: dim white (0-255 each)

# -- rules and sensors (mimi/rules/, mimi/hw/sensors.py; issue 18) ----------------------
RULES_PATH = DATA + "/rules.json"  # the owner's automations: data, never code (docs/automations.md)
RULES_MAX = const(16)  # rules stored
RULES_EVERY_MIN_S = const(60)  # the shortest interval of a time rule (an "every_s" trigger)
RULES_MSG_PER_HOUR = const(6)  # messages and agent prompts one rule may send in an hour
RULES_MSG_PER_HOUR_ALL = const(20)  # the same, all rules together

# -- settings ---------------------------------------------------------------------------
# name -> (store key, default, secret). Store keys are at most 15 characters (NVS).
SETTINGS = {
    "wifi_ssid": ("wifi_ssid", "", False),
    "wifi_pass": ("wifi_pass", "", True),
    "tg_token": ("tg_token", "", True),
    "tg_api_base": ("tg_api_base", "https://api.telegram.org", False),
    "provider": ("provider", "anthropic", False),
    "model": ("model", "", False),
    "api_key": ("api_key", "", True),
    "base_url": ("base_url", "", False),
    "search_key": ("search_key", "", True),
    "search_provider": ("search_prov", "brave", False),
    "tz": ("tz", "+00:00", False),
    "allowed_chats": ("allowed", "", False),
    "owner_chat": ("owner", "", False),
    "board": ("board", "esp32-s3-devkitc-1", False),
}

# -- llm (issue 4; mimi/llm/) ------------------------------------------------------------
LLM_RESPONSE_MAX_BYTES = const(36864)  # the one reply buffer: a 32 KB answer plus its JSON
LLM_MAX_TOKENS = const(4096)  # per reply; about 16 KB of English, fits the buffer
LLM_TIMEOUT_MS = const(120000)  # each read: a non-streamed reply arrives all at once
USAGE_PATH = STATE_DIR + "/usage.json"  # tokens per day
# One API key per preset, never sent to another; api_key is what MIMI_API_KEY and
# flash.sh config store, copied to the key of the provider in effect then.
SETTINGS["key_anthropic"] = ("k_anthropic", "", True)
SETTINGS["key_openai"] = ("k_openai", "", True)
SETTINGS["key_openrouter"] = ("k_openrouter", "", True)
SETTINGS["key_deepseek"] = ("k_deepseek", "", True)
SETTINGS["key_ollama"] = ("k_ollama", "", True)
SETTINGS["key_lmstudio"] = ("k_lmstudio", "", True)
SETTINGS["key_custom"] = ("k_custom", "", True)
# web_search (mimi/tools/web.py): offered only when search_key is set.
WEB_BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
WEB_TAVILY_URL = "https://api.tavily.com/search"
# Tool groups a group chat may use besides the safe ones ("file,cron", "all"; issue 4).
SETTINGS["group_tools"] = ("group_tools", "", False)
# The proxy of every outbound connection (mimi/net/proxy.py; issue 15): a secret, as it
# may hold a password; no_proxy: what is reached directly ("local": the LAN, loopback).
SETTINGS["proxy"] = ("proxy", "", True)
SETTINGS["no_proxy"] = ("no_proxy", "local", False)
# A running summary of what left a chat's window (mimi/agent/compact.py; issue 13): "off" stops it.
SETTINGS["compact"] = ("compact", "on", False)
# Feishu / Lark (issue 15): the app's credentials, and its open platform's address
# (https://open.larksuite.com for Lark).
SETTINGS["feishu_app_id"] = ("fs_app_id", "", False)
SETTINGS["feishu_app_secret"] = ("fs_app_secret", "", True)
SETTINGS["feishu_domain"] = ("fs_domain", "https://open.feishu.cn", False)
# Trust between chats (mimi/policy.py, docs/trust.md; issue 14). Who besides the owner sees
# the owner's memory and profile: "none", "people" (second allowed persons), "all" (groups too).
SETTINGS["share_memory"] = ("share_memory", "none", False)
# Where a second person's or a group's turn may send messages besides its own chat: "none", "owner", "all".
SETTINGS["cross_chat"] = ("cross_chat", "none", False)
# The board on the home network (mimi/web/; issue 16): the web app and the chat gateway run
# only while web_password is set; web_tokens: the console's tokens (web_token), as hashes;
# web_made: a password was made at first start (or the simulator said none is wanted).
SETTINGS["web_password"] = ("web_password", "", True)
SETTINGS["web_port"] = ("web_port", "80", False)
SETTINGS["gateway_port"] = ("gateway_port", "18789", False)
SETTINGS["web_tokens"] = ("web_tokens", "", True)
SETTINGS["web_made"] = ("web_made", "", False)
# Modules whose ``routes(app)`` add routes to the web app (mimi/web/server.py), in order.
WEB_ROUTE_MODULES = ("mimi.web.pages", "mimi.web.mcp_route", "mimi.web.update_route")
WEB_THREAD_STACK_BYTES = const(16384)  # the web thread (asyncio loop): docs/heap.md "Internal RAM"

# The setup portal (mimi/web/portal.py; issue 16). Its access point's WPA2 password is made
# once, when the first secret is stored, and printed on the console when the portal opens;
# a settings-store key, not a setting: no command shows or changes it.
PORTAL_PASS_KEY = "portal_pass"
PORTAL_WIFI_DOWN_MS = const(180000)  # WiFi set but not connected this long: the portal opens
PORTAL_BOOT_PIN = const(0)  # held low at start (the DevKitC-1's BOOT button): the portal opens
# The MQTT broker (mimi/net/mqtt.py; issue 18): mqtt[s]://[user:pass@]host[:port], empty for
# none. A secret, as it may hold a password (shown as the proxy is).
SETTINGS["mqtt_url"] = ("mqtt_url", "", True)

_cache = {}


def _spec(name):
    try:
        return SETTINGS[name]
    except KeyError:
        raise KeyError("unknown setting: %s" % name)


def get(name):
    """Return setting ``name`` (str); its default when never set. ``KeyError`` if unknown."""
    if name in _cache:
        return _cache[name]
    key, default, _ = _spec(name)
    v = seam.store_get(key)
    if v is None:
        v = default
    _cache[name] = v
    return v


def set(name, value):
    """Store setting ``name`` (persisted; survives a reboot). ``value`` is a str."""
    key, _, _ = _spec(name)
    value = str(value)
    seam.store_set(key, value)
    _cache[name] = value


def reset(name=None):
    """Forget one setting (or all, when ``name`` is None): back to the defaults."""
    names = [name] if name else list(SETTINGS)
    for n in names:
        seam.store_erase(_spec(n)[0])
        _cache.pop(n, None)


def is_secret(name):
    return _spec(name)[2]


def masked(name):
    """The setting as it may be shown: a key or token as ``****wxyz`` (its last 4
    characters, which tell two keys apart; none when it is shorter than 12), a password
    (``*_pass``, ``*_password``) as ``****`` whatever its length, the proxy and ``mqtt_url``
    with their password as ``****``.
    Other settings as they are."""
    v = get(name)
    if not is_secret(name) or not v:
        return v
    if name == "proxy" or name == "mqtt_url":  # the address is no secret, its password is
        from mimi.net import tunnel

        return tunnel.shown(v)
    if name[-5:] == "_pass" or name[-9:] == "_password" or len(v) < 12:
        return "****"
    return "****" + v[-4:]
