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
  other chats' traffic. (Strangers answered fairly by time, and a group addressing the
  bot by its own ``@name`` only, are the Telegram channel's.)
- ``reason`` names the known reason of an API error, the server's own words never reach a
  chat; ``redact`` hides what looks like a key or a token (and every secret setting's value) in
  what goes to a chat or the console.

The limits are ``_NAME = const(N)`` here; tests read them from ``LIMITS`` (one name, not
ten: each module-level name is an interned string, docs/heap.md). The counts of one turn
are kept in its ``ctx["spent"]`` (paths written, bytes, messages sent, a job made); the
counts of an hour live in RAM (``_sent``, ``_rearm``): a reboot clears them.
"""
from micropython import const

from mimi import config, log, pick, policy, seam

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
_BUS_CHAT_MAX = const(3)  # inbound messages one chat other than the owner's may have waiting (half the rest)
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
# An API error's known reasons, "words,words=what the chat reads;..." (one string: RAM).
_REASONS = const("context_length,context length,context window,too many tokens,prompt is too long,maximum context"
                 "=the conversation is too long for the model (/new starts afresh);"
                 "model_not_found,does not exist,unknown model,invalid model,no such model"
                 "=the model name is not known there;"
                 "max_tokens,max_completion_tokens=the reply length is not accepted by that model;"
                 "credit balance,billing details,payment required=the account has no credit left;"
                 "image,vision=the model's server refused the image")
# The refusals, by key (``mimi.pick``: one string in RAM, not one each).
_MSG = const("|out %s is outside this chat's folder: a chat other than the owner's writes only under %s"
             "|not %s is not this chat's: a %s reads only its own history and its folder %s, the skills and datasheets"
             "|files this turn has written %d files, the most one turn may"
             "|bytes this turn has written %d bytes; %d more passes the %d one turn may"
             "|flash the flash has %d KB free; writes keep %d KB for the assistant itself (delete_file what is not needed)"
             "|folder %s holds %d entries, the most a tool may fill a folder with"
             "|chat chat %s is not this chat, the owner's, or an allowed chat"
             "|self this chat may send only to itself (the owner's setting cross_chat is %s)"
             "|sent this turn has sent %d messages, the most one turn may: put the rest in the reply"
             "|chats too many chats were sent messages in the last hour"
             "|hour chat %s got %d messages in the last hour, the most it may: try later"
             "|one a scheduled job's turn may make one job"
             "|soon a job made by a scheduled job starts no sooner than %d s"
             "|jobs scheduled jobs made %d jobs in the last hour, the most they may|")
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
            pick(_MSG, "out") % (p, own)
    if p in (config.DATA, config.CONFIG_DIR, config.SESSIONS_DIR, config.SESSION_ARCHIVE_DIR, _CHATS_DIR):
        return None  # folders on the way to what it may read: listings leave the rest out
    from mimi.storage import sessions

    name = p[p.rfind("/") + 1:]
    folder = p[:p.rfind("/")]
    for key in (turn.get("session") or "", policy.area(turn)[len(_CHATS_DIR) + 1:]):  # its session key
        if key and (folder == config.SESSIONS_DIR and name == key + ".jsonl" or
                    folder == config.SESSION_ARCHIVE_DIR and name.startswith(key + ".")):
            return None  # its own history
    for root in (own, config.SOUL_PATH, config.SKILLS_DIR, config.DATASHEETS_DIR) + (
            (config.MEMORY_DIR, config.USER_PATH) if policy.memory_dir(turn) == config.MEMORY_DIR else ()):
        if p == root or p.startswith(root + "/"):
            return None
    return pick(_MSG, "not") % (p, "group" if r == _GROUP else "second person's chat", own)


def mark(turn, chat, text):
    """``text`` as it goes to ``chat``: with ``[from ...]`` first when another chat caused
    it (``the owner``, ``chat 555``, ``group -100123``)."""
    c = policy.chat_of(turn)
    if chat == c:
        return text
    r = policy.role(turn)
    return "[from %s] %s" % ("the owner" if r == _OWNER else ("group " if r == _GROUP else "chat ") + c, text)




def count_write(p, nbytes, turn, new):
    """Count a write of ``nbytes`` to ``p`` (``new``: the file does not exist yet) against
    this turn's quota, or raise ``ValueError`` saying which limit it passes. The count is
    kept in the turn (``turn["spent"]``: paths written, bytes, messages sent, jobs made)."""
    from mimi.storage import fs

    w = turn.get("spent") or turn.setdefault("spent", [[], 0, 0, False])
    if p not in w[0] and len(w[0]) >= _TOOL_WRITE_FILES_PER_TURN:
        raise ValueError(pick(_MSG, "files") % len(w[0]))
    if w[1] + nbytes > _TOOL_WRITE_BYTES_PER_TURN:
        raise ValueError(pick(_MSG, "bytes") % (w[1], nbytes, _TOOL_WRITE_BYTES_PER_TURN))
    free = seam.flash_free()
    if free is not None and free - nbytes < _TOOL_FLASH_RESERVE_BYTES:
        raise ValueError(pick(_MSG, "flash") % (free // 1024, _TOOL_FLASH_RESERVE_BYTES // 1024))
    if new:
        d = p[:p.rfind("/")]
        try:
            n = len(fs.listdir(d))
        except OSError:
            n = 0
        if n >= _TOOL_WRITE_FOLDER_MAX:
            raise ValueError(pick(_MSG, "folder") % (d, n))
    if p not in w[0]:
        w[0].append(p)
    w[1] += nbytes


# -- messages ---------------------------------------------------------------------------


def check_target(chat, turn):
    """Raise ``ValueError`` unless this turn may send to (or make a job for) ``chat`` (str).

    Any turn may reach its own chat. The owner's turns reach any allowed chat; others reach
    the owner too with ``cross_chat`` "owner", every allowed chat with "all".
    """
    from mimi import commands

    if chat == str(turn.get("chat_id")) or chat == policy.chat_of(turn):
        return
    if chat != commands.owner() and not commands.is_allowed(chat):
        raise ValueError(pick(_MSG, "chat") % chat)
    if policy.role(turn) == _OWNER:
        return
    c = config.get("cross_chat")
    if not (c == "all" or c == "owner" and chat == commands.owner()):
        raise ValueError(pick(_MSG, "self") % c)


def count_message(chat, turn, now_ms=None):
    """Count one ``send_message`` text to ``chat``, or raise ``ValueError`` when this turn
    sent ``_TOOL_MSG_PER_TURN`` already or ``chat`` got ``_TOOL_MSG_PER_HOUR`` in the last hour."""
    now = seam.ticks_ms() if now_ms is None else now_ms
    w = turn.get("spent") or turn.setdefault("spent", [[], 0, 0, False])
    if w[2] >= _TOOL_MSG_PER_TURN:
        raise ValueError(pick(_MSG, "sent") % w[2])
    times = _sent.get(chat)
    if times is None:
        if len(_sent) >= _RATE_CHATS_MAX:
            for k in list(_sent):  # forget the chats with nothing in the last hour
                if not [t for t in _sent[k] if seam.ticks_diff(now, t) < _HOUR_MS]:
                    del _sent[k]
        if len(_sent) >= _RATE_CHATS_MAX:
            raise ValueError(pick(_MSG, "chats"))
        times = _sent[chat] = []
    while times and seam.ticks_diff(now, times[0]) >= _HOUR_MS:
        times.pop(0)
    if len(times) >= _TOOL_MSG_PER_HOUR:
        raise ValueError(pick(_MSG, "hour") % (chat, len(times)))
    times.append(now)
    w[2] += 1


# -- reminders --------------------------------------------------------------------------


def may_rearm(turn, first_s, now_s, now_ms=None):
    """Raise ``ValueError`` when a job's or the heartbeat's turn may not make a job whose
    first run is at ``first_s`` (unix s; None while the clock is unset): one per turn, none
    sooner than ``_CRON_REARM_MIN_S``, ``_CRON_REARM_PER_HOUR`` an hour. Other turns: no
    limit. A refusal is told to the owner on the bus, once an hour at most."""
    if turn.get("channel") not in ("cron", "heartbeat"):
        return
    now = seam.ticks_ms() if now_ms is None else now_ms
    made = _rearm
    while len(made) > 1 and seam.ticks_diff(now, made[1]) >= _HOUR_MS:
        made.pop(1)
    w = turn.get("spent") or turn.setdefault("spent", [[], 0, 0, False])
    if w[3]:
        why = pick(_MSG, "one")
    elif first_s is not None and first_s - now_s < _CRON_REARM_MIN_S:
        why = pick(_MSG, "soon") % _CRON_REARM_MIN_S
    elif len(made) - 1 >= _CRON_REARM_PER_HOUR:
        why = pick(_MSG, "jobs") % (len(made) - 1)
    else:
        made.append(now)
        w[3] = True
        return
    from mimi import commands

    bus = turn.get("bus")
    owner = commands.owner()
    if (made[0] is None or seam.ticks_diff(now, made[0]) >= _HOUR_MS) and bus is not None and owner:
        made[0] = now
        bus.send("telegram", owner, commands.text("cron_rearm_stopped", turn.get("job") or turn.get("session"), why),
                 "text", 0)
    raise ValueError(why)


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
                if m.get("chat_id") != owner_chat:  # of any channel: tell_busy answers it on its own
                    pushed = items.pop(i)
                    break
            else:
                return False, None
        items.append(msg)
        return True, pushed


def tell_busy(channel, queue_text, bus, refused, pushed, text):
    """After ``admit``, tell the senders their message did not get in: the chat whose
    message was ``refused`` (its id, or None), on ``channel`` through its ``queue_text(chat,
    text, plain)``; the sender of the message ``pushed`` off for the owner's (or None) on its
    own channel, the bus routing it when it is another's (never waiting: the caller is the
    I/O thread, which empties the outbound queue)."""
    if refused:
        log.warn(channel, "busy %s", refused)
        queue_text(refused, text, True)
    if pushed:
        log.warn(channel, "busy %s", pushed.get("chat_id"))
        if pushed.get("channel") == channel:
            queue_text(pushed["chat_id"], text, True)
        else:
            bus.send(pushed.get("channel") or "cli", pushed.get("chat_id"), text, "text", 0)


# -- what leaves the board --------------------------------------------------------------


def reason(words):
    """``": <a known reason>"`` for an API error whose type, code and message are ``words``
    (the first of ``_REASONS`` whose words occur, case ignored), else ''."""
    low = words.lower()
    for r in _REASONS.split(";"):
        keys, _, said = r.partition("=")
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
