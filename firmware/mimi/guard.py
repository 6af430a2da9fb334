"""What one turn may do, and what leaves the board (issue 14; docs/trust.md): the limits
beside ``mimi.policy``'s reach, in a module of their own so that a turn which only reads
and answers does not load them (the tools that write, send or schedule import it when
they run; the Telegram channel and the console at once).

- Flash (``count_write``): a turn writes at most ``_TOOL_WRITE_FILES_PER_TURN`` files and
  ``_TOOL_WRITE_BYTES_PER_TURN`` bytes; a new file needs room in its folder
  (``_TOOL_WRITE_FOLDER_MAX`` entries) and every write leaves ``_TOOL_FLASH_RESERVE_BYTES``
  free.
- Messages (``check_target``, ``count_message``): a second person or a group sends only to
  itself unless the owner's setting ``cross_chat`` allows more ("owner", "all"); a turn
  sends at most ``_TOOL_MSG_PER_TURN`` messages and a chat gets at most
  ``_TOOL_MSG_PER_HOUR`` in an hour.
- Reminders (``may_rearm``): the turns of jobs and of the heartbeat make at most one job
  each, starting no sooner than ``_CRON_REARM_MIN_S``, ``_CRON_REARM_PER_HOUR`` in an hour
  between them; a refusal is told to the owner, once an hour at most.
- The inbound queue (``admit``) keeps ``_BUS_OWNER_RESERVE`` places for the owner and lets
  another chat hold at most ``_BUS_CHAT_MAX``: the owner's message is never refused for
  other chats' traffic. Strangers are answered fairly by time (``may_tell``); a group
  addresses the bot by its own ``@name`` only (``mention``).
- ``reason`` names the known reason of an API error, the server's own words never reach a
  chat; ``redact`` hides what looks like a key or a token (and every secret setting's value) in
  what goes to a chat or the console.

The limits are ``_NAME = const(N)`` here; tests read them from ``LIMITS`` (one name, not
ten: each module-level name is an interned string, docs/heap.md). The counts of one turn
are kept in its ``ctx["spent"]`` (paths written, bytes, messages sent, a job made); the
counts of an hour live in RAM (``_sent``, ``_rearm``): a reboot clears them.
"""
from micropython import const

from mimi import config, policy, seam

# What one turn may do (issue 14).
_TOOL_WRITE_FILES_PER_TURN = const(16)  # distinct files one turn may write
_TOOL_WRITE_BYTES_PER_TURN = const(65536)  # bytes one turn may write in all
_TOOL_WRITE_FOLDER_MAX = const(64)  # entries a folder may hold before a tool adds another file
_TOOL_FLASH_RESERVE_BYTES = const(131072)  # flash a tool write must leave free
_TOOL_MSG_PER_TURN = const(5)  # send_message calls one turn may make
_TOOL_MSG_PER_HOUR = const(30)  # send_message texts one chat may get in an hour
_CRON_REARM_MIN_S = const(60)  # a job made by a job's or the heartbeat's turn runs no sooner (the floor of every_s)
_CRON_REARM_PER_HOUR = const(4)  # jobs the turns of jobs and the heartbeat may make in an hour, together
_BUS_OWNER_RESERVE = const(2)  # inbound places other chats may not take: the owner's
_BUS_CHAT_MAX = const(2)  # inbound messages one chat other than the owner's may have waiting
# For tests, in this order (one name, not ten: see the module doc).
LIMITS = (_TOOL_WRITE_FILES_PER_TURN, _TOOL_WRITE_BYTES_PER_TURN, _TOOL_WRITE_FOLDER_MAX, _TOOL_FLASH_RESERVE_BYTES,
          _TOOL_MSG_PER_TURN, _TOOL_MSG_PER_HOUR, _CRON_REARM_MIN_S, _CRON_REARM_PER_HOUR, _BUS_OWNER_RESERVE,
          _BUS_CHAT_MAX)

_OWNER = const(0)
_PERSON = const(1)
_GROUP = const(2)
_HOUR_MS = const(3600000)
_RATE_CHATS_MAX = const(32)  # chats whose sending times are kept
_REDACTED = const("[redacted]")
_CHATS_DIR = const("/data/chats")  # as mimi.policy's
# Prefixes of keys and tokens services hand out (Anthropic, OpenAI, GitHub, Slack, Google,
# Tavily, Brave, Hugging Face, GitLab): one string, split when a long word is looked at.
_KEY_PREFIXES = const("sk- sk_ rk_ pk_ ghp_ gho_ ghs_ github_pat_ xoxb- xoxp- AIza tvly- BSA hf_ glpat-")
# Each is "words,words|what the chat reads" (long strings: not interned, docs/heap.md).
_REASONS = const(("context_length,context length,context window,too many tokens,prompt is too long,maximum context"
                  "|the conversation is too long for the model (/new starts afresh)",
                  "model_not_found,does not exist,unknown model,invalid model,no such model"
                  "|the model name is not known there",
                  "max_tokens,max_completion_tokens|the reply length is not accepted by that model",
                  "credit balance,billing details,payment required|the account has no credit left"))
_sent = {}  # chat id -> [ticks_ms of each send_message text it got in the last hour]
_rearm = [None]  # when the owner was last told of a refused job (ticks_ms), then the ticks of the jobs made
# (tests clear _sent and _rearm as a reboot would: tests/support.py)


# -- files ------------------------------------------------------------------------------


def refusal(p, turn, write=False):
    """Why this turn may not read (or, with ``write``, write or delete) the checked device
    path ``p`` (a folder too), or None. The owner: anything the tools reach
    (``mimi.tools.files`` keeps mimi's own files out of writes). Others write only their own
    folder, and read it, their own history, SOUL.md, skills, datasheets, and the owner's
    memory and profile when ``share_memory`` shares them."""
    r = policy.role(turn)
    if r == _OWNER:
        return None
    own = policy.area(turn)
    if write:
        return None if p.startswith(own + "/") else \
            "%s is outside this chat's folder: a chat other than the owner's writes only under %s" % (p, own)
    if p in (config.DATA, config.CONFIG_DIR, config.SESSIONS_DIR, config.SESSION_ARCHIVE_DIR, _CHATS_DIR):
        return None  # folders on the way to what it may read: listings leave the rest out
    from mimi.storage import sessions

    name = p[p.rfind("/") + 1:]
    folder = p[:p.rfind("/")]
    for key in (turn.get("session") or "", sessions.key_for("telegram", policy.chat_of(turn))):
        if key and (folder == config.SESSIONS_DIR and name == key + ".jsonl" or
                    folder == config.SESSION_ARCHIVE_DIR and name.startswith(key + ".")):
            return None  # its own history
    for root in (own, config.SOUL_PATH, config.SKILLS_DIR, config.DATASHEETS_DIR) + (
            (config.MEMORY_DIR, config.USER_PATH) if policy.memory_dir(turn) == config.MEMORY_DIR else ()):
        if p == root or p.startswith(root + "/"):
            return None
    return "%s is not this chat's: a %s reads only its own history and its folder %s, the skills and " \
           "datasheets" % (p, "group" if r == _GROUP else "second person's chat", own)


# -- the inbound queue ------------------------------------------------------------------


def admit(queue, msg, owner_chat):
    """Put inbound ``msg`` on ``queue`` (a ``bus.Queue``) fairly; returns ``(taken, pushed)``.

    Another chat's message waits only while that chat has fewer than ``_BUS_CHAT_MAX``
    waiting and the queue leaves ``_BUS_OWNER_RESERVE`` places free. The owner's message is
    refused only when the queue is full of the owner's own; when other chats fill it, the
    newest message of theirs is taken off (``pushed``, for the channel to tell its sender)."""
    chat = str(msg.get("chat_id"))
    with queue._lock:  # the queue's own lock: the rule needs its items as they are (mimi.bus)
        items = queue._items
        if chat != owner_chat:
            mine = 0
            for m in items:
                if m.get("chat_id") == chat:
                    mine += 1
            if mine >= _BUS_CHAT_MAX or len(items) >= queue._max - _BUS_OWNER_RESERVE:
                return False, None
            items.append(msg)
            return True, None
        pushed = None
        if len(items) >= queue._max:
            for i in range(len(items) - 1, -1, -1):
                m = items[i]
                if m.get("channel") == "telegram" and m.get("chat_id") != owner_chat:
                    pushed = items.pop(i)
                    break
            else:
                return False, None
        items.append(msg)
        return True, pushed


# -- what leaves the board, who is addressed, who is answered -----------------------------


def reason(words):
    """``": <a known reason>"`` for an API error whose type, code and message are ``words``
    (the first of ``_REASONS`` whose words occur, case ignored), else ''."""
    low = words.lower()
    for r in _REASONS:
        keys, _, said = r.partition("|")
        if [1 for k in keys.split(",") if k in low]:
            return ": " + said
    return ""


def redact(text):
    """``text`` with each secret setting's value, and anything shaped like a key or token,
    replaced by ``[redacted]``: a run of ``[A-Za-z0-9_-]`` that starts with a known prefix
    and has 20 characters, or has 32 with digits, capitals and small letters mixed; the 30
    after ``<digits>:`` (a bot token); the word after ``Bearer``. Cheap when there is none:
    only stretches of 20 characters without a space are looked into."""
    if not text:
        return text
    for name in config.SETTINGS:
        if config.is_secret(name):
            v = config.get(name)
            if len(v) >= 8 and v in text:
                text = text.replace(v, _REDACTED)
    found = []
    k = text.find("Bearer ")
    while k >= 0:
        w = text[k + 7:k + 200].split(None, 1)
        if w and len(w[0]) >= 16:
            found.append(w[0])
        k = text.find("Bearer ", k + 7)
    i = 0
    n = len(text)
    while i < n:  # only a stretch of 20 characters without a space is looked into (no copies)
        j = text.find(" ", i)
        if j < 0:
            j = n
        if j - i < 20:
            i = j + 1
            continue
        for word in text[i:j].split():
            if len(word) < 20:
                continue
            last = ""
            start = -1
            for e in range(len(word) + 1):  # each run of key characters in the word
                ch = word[e] if e < len(word) else " "
                if "a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch == "_" or ch == "-":
                    if start < 0:
                        start = e
                    continue
                if start < 0:
                    continue
                run = word[start:e]
                m = len(run)
                hit = m >= 30 and start and word[start - 1] == ":" and len(last) >= 5 and last.isdigit()
                if m >= 20 and not hit:
                    for p in _KEY_PREFIXES.split():
                        if run.startswith(p):
                            hit = True
                            break
                if m >= 32 and not hit:
                    d = u = lo = False
                    for c in run:
                        d = d or "0" <= c <= "9"
                        u = u or "A" <= c <= "Z"
                        lo = lo or "a" <= c <= "z"
                    hit = d and u and lo
                if hit:
                    found.append(run)
                last = run
                start = -1
        i = j + 1
    for t in found:
        text = text.replace(t, _REDACTED)
    return text


def mention(text, username):
    """Where the bot's own ``@username`` is in ``text`` (index), or -1: case ignored, and
    only where no name character (``[A-Za-z0-9_]``) comes right after it or right before
    the ``@``, so ``@mimi_bot_fan`` and ``a@mimi_bot`` do not address ``@mimi_bot``."""
    if not username:
        return -1
    low = text.lower()
    name = "@" + username.lower()
    k = low.find(name)
    while k >= 0:
        for j in (k + len(name), k - 1):
            ch = low[j] if 0 <= j < len(low) else " "
            if "a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_":
                break
        else:
            return k
        k = low.find(name, k + 1)
    return -1


def may_tell(told, chat, now_ms, period_ms, most):
    """True when a stranger ``chat`` may get its reply now (and it is noted in ``told``,
    chat id -> ticks_ms of its reply). Fair by time: a chat is answered once per
    ``period_ms``; at most ``most`` chats are remembered, and while that many were answered
    within the period a new one waits (no one is pushed out to be answered again)."""
    last = told.get(chat)
    if last is not None and seam.ticks_diff(now_ms, last) < period_ms:
        return False
    if last is None and len(told) >= most:
        for k in list(told):
            if seam.ticks_diff(now_ms, told[k]) >= period_ms:
                del told[k]
        if len(told) >= most:
            return False
    told[chat] = now_ms
    return True
