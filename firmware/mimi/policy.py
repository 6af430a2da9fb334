"""Who may do what, and what one turn may do (issue 14; the people's view: docs/trust.md).

Every turn acts for one chat, in one of three roles (``role(turn)``; ``turn`` is the
inbound message or the tools' ``ctx``, which carry the same keys):
- ``owner``: the owner's private chat (``commands.owner()``), the serial console, the
  heartbeat, and the jobs they made;
- ``person``: a second allowed private chat, and the jobs it made;
- ``group``: an allowed group chat (``is_group``, or a negative id), and its jobs.
A job's turns take the role of the chat that made it (its ``by``), not of the chat it
reports to. Strangers never reach a turn (``mimi.channels.telegram``).

What a role reaches (settings in brackets, defaults first):
- Files. The owner reads and writes all of ``/data`` that the tools do (the other chats'
  histories and notes too, [``owner_reads_chats`` yes|no]). A person or a group writes only
  its own folder ``/data/chats/<tg_id>/`` and reads that, its own history, the personality
  (SOUL.md), skills and datasheets; the owner's memory (``/data/memory``) and profile
  (USER.md) only when [``share_memory`` none|people|all] says so; never another chat's
  history or folder, HEARTBEAT.md, cron.json or the runtime state.
- The system prompt. Its memory section is the chat's own notes
  (``/data/chats/<tg_id>/MEMORY.md``) unless the owner shares theirs; only the owner's
  turns get USER.md and the daily notes. Nothing a person or a group writes reaches the
  owner's prompt: they cannot write the owner's files.
- Messages. A person or a group sends only to itself [``cross_chat`` none|owner|all]; any
  text one chat causes to be sent to another starts with ``[from ...]`` naming it
  (``mark``). Each turn sends at most ``TOOL_MSG_PER_TURN`` messages and each chat gets at
  most ``TOOL_MSG_PER_HOUR`` in an hour (``count_message``).
- Flash. A turn writes at most ``TOOL_WRITE_FILES_PER_TURN`` files and
  ``TOOL_WRITE_BYTES_PER_TURN`` bytes; a new file needs room in its folder
  (``TOOL_WRITE_FOLDER_MAX`` entries) and every write leaves ``TOOL_FLASH_RESERVE_BYTES``
  free (``count_write``).
- Reminders. The turns of jobs and of the heartbeat make at most one job each, starting
  no sooner than ``CRON_REARM_MIN_S``, and ``CRON_REARM_PER_HOUR`` in an hour between
  them; the first refusal is told to the owner (``may_rearm``).
- The inbound queue keeps ``BUS_OWNER_RESERVE`` places for the owner and lets another chat
  hold at most ``BUS_CHAT_MAX`` (``admit``): the owner's message is never refused for
  other chats' traffic.

And for text that leaves the board: ``redact`` hides what looks like a key or a token (and
every secret setting's value) in what goes to a chat.

Counters of time (messages per hour, jobs per hour) live in RAM: a reboot clears them.
"""
from micropython import const

from mimi import config, seam

OWNER = "owner"
PERSON = "person"
GROUP = "group"

_HOUR_MS = const(3600000)
_RATE_CHATS_MAX = const(32)  # chats whose sending times are kept
_REDACTED = const("[redacted]")
# Prefixes of the keys and tokens services hand out (Anthropic, OpenAI, GitHub, Slack,
# Google, Tavily, Brave, Hugging Face, GitLab): a word starting so is a secret.
_KEY_PREFIXES = const(("sk-", "sk_", "rk_", "pk_", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-",
                       "AIza", "tvly-", "BSA", "hf_", "glpat-"))
_sent = {}  # chat id -> [ticks_ms of each send_message text it got in the last hour]
_rearm = []  # ticks_ms of each job made by a job's or the heartbeat's turn, the last hour
_told = [False]  # the owner was told that a job's turn was stopped from making jobs


def forget():
    """Clear the counters kept in RAM (messages and jobs per hour; tests, like a reboot)."""
    _sent.clear()
    del _rearm[:]
    _told[0] = False


# -- who --------------------------------------------------------------------------------


def chat_of(turn):
    """The chat a turn acts for (str): the chat that made a job (``by``), else its chat."""
    return str(turn.get("by") or turn.get("chat_id") or "")


def role(turn):
    """``OWNER``, ``PERSON`` or ``GROUP`` for an inbound message or a tools' ``ctx``."""
    ch = turn.get("channel")
    if ch == "cli" or ch == "heartbeat":
        return OWNER
    chat = chat_of(turn)
    if turn.get("is_group") or chat[:1] == "-":
        return GROUP
    if not chat.isdigit():  # a job made on the console ("console")
        return OWNER if ch == "cron" else PERSON
    from mimi import commands

    return OWNER if chat == commands.owner() else PERSON


def _role(turn):
    r = turn.get("role")  # the agent loop puts it in ctx once per turn
    return r if r in (OWNER, PERSON, GROUP) else role(turn)


def label(turn):
    """How a chat is named in a ``[from ...]`` mark: ``the owner``, ``chat 555``, ``group -100123``."""
    r = _role(turn)
    return "the owner" if r == OWNER else ("group " if r == GROUP else "chat ") + chat_of(turn)


def area(turn):
    """The folder of a chat's own notes: ``/data/chats/tg_555`` (for a group ``tg_-100123``)."""
    from mimi.storage import sessions

    return config.CHATS_DIR + "/" + sessions.key_for("telegram", chat_of(turn))


def shares_memory(turn):
    """True when this turn sees the owner's memory and profile (the owner, or as shared)."""
    r = _role(turn)
    s = config.get("share_memory")
    return r == OWNER or s == "all" or s == "people" and r == PERSON


def memory_dir(turn):
    """The memory folder this turn's ``memory_search`` and ``/memory`` use."""
    return config.MEMORY_DIR if shares_memory(turn) else area(turn)


def memory_path(turn):
    """The long-term memory file this turn's system prompt carries."""
    return config.MEMORY_PATH if shares_memory(turn) else area(turn) + "/MEMORY.md"


# -- files ------------------------------------------------------------------------------


def _under(p, root):
    return p == root or p.startswith(root + "/")


def _own_history(p, turn):
    """True when ``p`` is one of this chat's own session files (or its archives)."""
    from mimi.storage import sessions

    name = p[p.rfind("/") + 1:]
    folder = p[:p.rfind("/")]
    for key in (turn.get("session") or "", sessions.key_for("telegram", chat_of(turn))):
        if key and (folder == config.SESSIONS_DIR and name == key + ".jsonl" or
                    folder == config.SESSION_ARCHIVE_DIR and name.startswith(key + ".")):
            return True
    return False


def _others(p, turn):
    """True when ``p`` is another chat's history or folder (for the owner: not theirs)."""
    if _under(p, config.CHATS_DIR):
        return p != config.CHATS_DIR
    if not _under(p, config.SESSIONS_DIR) or p in (config.SESSIONS_DIR, config.SESSION_ARCHIVE_DIR):
        return False
    name = p[p.rfind("/") + 1:]
    return name[:3] == "tg_" and not _own_history(p, turn)


def read_refusal(p, turn):
    """Why this turn may not read the checked device path ``p`` (a folder too), or None."""
    r = _role(turn)
    if r == OWNER:
        if config.get("owner_reads_chats") == "no" and _others(p, turn):
            return "%s belongs to another chat, and the owner has chosen not to read other chats" % p
        return None
    if p in (config.DATA, config.CONFIG_DIR, config.SESSIONS_DIR, config.SESSION_ARCHIVE_DIR, config.CHATS_DIR):
        return None  # folders on the way to what it may read: listings leave the rest out
    own = area(turn)
    if _under(p, own) or _own_history(p, turn):
        return None
    for root in (config.SOUL_PATH, config.SKILLS_DIR, config.DATASHEETS_DIR):
        if _under(p, root):
            return None
    if shares_memory(turn) and (_under(p, config.MEMORY_DIR) or p == config.USER_PATH):
        return None
    return "%s is not this chat's: a %s reads only its own history and its folder %s, the skills and " \
           "datasheets" % (p, "group" if r == GROUP else "second person's chat", own)


def check_read(p, turn):
    """Raise ``ValueError`` (the reason) unless this turn may read ``p``; return ``p``."""
    why = read_refusal(p, turn)
    if why:
        raise ValueError(why)
    return p


def check_write(p, turn):
    """Raise ``ValueError`` unless this turn may write (or delete) ``p``; return ``p``.

    The owner: anywhere the tools write (``mimi.tools.files`` keeps mimi's own files out),
    other chats' folders only while ``owner_reads_chats`` is yes. Others: their own folder.
    """
    if _role(turn) == OWNER:
        return check_read(p, turn)
    own = area(turn)
    if not p.startswith(own + "/"):
        raise ValueError("%s is outside this chat's folder: a chat other than the owner's writes only under %s"
                         % (p, own))
    return p


def count_write(p, nbytes, turn, new):
    """Count a write of ``nbytes`` to ``p`` (``new``: the file does not exist yet) against
    this turn's quota, or raise ``ValueError`` saying which limit it passes. Keeps the
    count in ``turn["wrote"]`` (``[paths, bytes]``)."""
    from mimi.storage import fs

    w = turn.get("wrote")
    if w is None:
        w = turn["wrote"] = [[], 0]
    if p not in w[0] and len(w[0]) >= config.TOOL_WRITE_FILES_PER_TURN:
        raise ValueError("this turn has written %d files, the most one turn may" % len(w[0]))
    if w[1] + nbytes > config.TOOL_WRITE_BYTES_PER_TURN:
        raise ValueError("this turn has written %d bytes; %d more passes the %d one turn may" % (
            w[1], nbytes, config.TOOL_WRITE_BYTES_PER_TURN))
    free = seam.flash_free()
    if free is not None and free - nbytes < config.TOOL_FLASH_RESERVE_BYTES:
        raise ValueError("the flash has %d KB free; writes keep %d KB for the assistant itself (delete_file what "
                         "is not needed)" % (free // 1024, config.TOOL_FLASH_RESERVE_BYTES // 1024))
    if new:
        try:
            n = len(fs.listdir(p[:p.rfind("/")]))
        except OSError:
            n = 0
        if n >= config.TOOL_WRITE_FOLDER_MAX:
            raise ValueError("%s holds %d entries, the most a tool may fill a folder with" % (p[:p.rfind("/")], n))
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

    here = str(turn.get("chat_id"))
    if chat == here or chat == chat_of(turn):
        return
    if chat != commands.owner() and not commands.is_allowed(chat):
        raise ValueError("chat %s is not this chat, the owner's, or an allowed chat" % chat)
    if _role(turn) == OWNER:
        return
    c = config.get("cross_chat")
    if not (c == "all" or c == "owner" and chat == commands.owner()):
        raise ValueError("this chat may send only to itself (the owner's setting cross_chat is %s)" % c)


def mark(turn, chat, text):
    """``text`` as it goes to ``chat``: with ``[from ...]`` first when another chat caused it."""
    if chat == chat_of(turn):
        return text
    return "[from %s] %s" % (label(turn), text)


def count_message(chat, turn, now_ms=None):
    """Count one ``send_message`` text to ``chat``, or raise ``ValueError`` when this turn
    sent ``TOOL_MSG_PER_TURN`` already or ``chat`` got ``TOOL_MSG_PER_HOUR`` in the last hour."""
    now = seam.ticks_ms() if now_ms is None else now_ms
    n = turn.get("sent") or 0
    if n >= config.TOOL_MSG_PER_TURN:
        raise ValueError("this turn has sent %d messages, the most one turn may: put the rest in the reply" % n)
    times = _sent.get(chat)
    if times is None:
        if len(_sent) >= _RATE_CHATS_MAX:
            for k in list(_sent):  # forget the chats with nothing in the last hour
                if not [t for t in _sent[k] if seam.ticks_diff(now, t) < _HOUR_MS]:
                    del _sent[k]
        if len(_sent) >= _RATE_CHATS_MAX:
            raise ValueError("too many chats were sent messages in the last hour")
        times = _sent[chat] = []
    while times and seam.ticks_diff(now, times[0]) >= _HOUR_MS:
        times.pop(0)
    if len(times) >= config.TOOL_MSG_PER_HOUR:
        raise ValueError("chat %s got %d messages in the last hour, the most it may: try later" % (chat, len(times)))
    times.append(now)
    turn["sent"] = n + 1


# -- reminders --------------------------------------------------------------------------


def may_rearm(turn, first_s, now_s, now_ms=None):
    """Raise ``ValueError`` when a job's or the heartbeat's turn may not make a job whose
    first run is at ``first_s`` (unix s; None while the clock is unset): one per turn, none
    sooner than ``CRON_REARM_MIN_S``, ``CRON_REARM_PER_HOUR`` an hour. Other turns: no limit.
    The first refusal (until a job may be made again) is told to the owner on the bus."""
    if turn.get("channel") not in ("cron", "heartbeat"):
        return
    now = seam.ticks_ms() if now_ms is None else now_ms
    while _rearm and seam.ticks_diff(now, _rearm[0]) >= _HOUR_MS:
        _rearm.pop(0)
    why = None
    if turn.get("added"):
        why = "a scheduled job's turn may make one job"
    elif first_s is not None and first_s - now_s < config.CRON_REARM_MIN_S:
        why = "a job made by a scheduled job starts no sooner than %d s" % config.CRON_REARM_MIN_S
    elif len(_rearm) >= config.CRON_REARM_PER_HOUR:
        why = "scheduled jobs made %d jobs in the last hour, the most they may" % len(_rearm)
    if why is None:
        _rearm.append(now)
        turn["added"] = True
        _told[0] = False
        return
    if not _told[0]:
        _told[0] = True
        _tell_owner(turn, why)
    raise ValueError(why)


def _tell_owner(turn, why):
    from mimi import commands

    bus = turn.get("bus")
    owner = commands.owner()
    if bus is None or not owner:
        return
    job = turn.get("job") or str(turn.get("session") or "")
    bus.send("telegram", owner, commands.text("rearm", job, why), "text", 0)


# -- the inbound queue ------------------------------------------------------------------


def admit(queue, msg, owner_chat):
    """Put inbound ``msg`` on ``queue`` (a ``bus.Queue``) fairly; returns ``(taken, pushed)``.

    Another chat's message waits only while that chat has fewer than ``BUS_CHAT_MAX``
    waiting and the queue leaves ``BUS_OWNER_RESERVE`` places free. The owner's message is
    refused only when the queue is full of the owner's own; when other chats fill it, the
    newest message of theirs is taken off (``pushed``, for the channel to tell its sender)."""
    chat = str(msg.get("chat_id"))

    def rule(items, most, msg):
        if chat != owner_chat:
            mine = 0
            for m in items:
                if m.get("chat_id") == chat:
                    mine += 1
            if mine >= config.BUS_CHAT_MAX or len(items) >= most - config.BUS_OWNER_RESERVE:
                return False, None
            items.append(msg)
            return True, None
        pushed = None
        if len(items) >= most:
            for i in range(len(items) - 1, -1, -1):
                m = items[i]
                if m.get("channel") == "telegram" and m.get("chat_id") != owner_chat:
                    pushed = items.pop(i)
                    break
            else:
                return False, None
        items.append(msg)
        return True, pushed

    return queue.put_by(msg, rule)


# -- what leaves the board --------------------------------------------------------------


def _tokenish(run):
    """True for a run of ``[A-Za-z0-9_-]`` that looks like a key: a known prefix and 20
    characters, or 32 with digits, capitals and small letters mixed."""
    n = len(run)
    if n >= 20:
        for p in _KEY_PREFIXES:
            if run.startswith(p):
                return True
    if n < 32:
        return False
    d = u = lo = False
    for ch in run:
        if "0" <= ch <= "9":
            d = True
        elif "A" <= ch <= "Z":
            u = True
        elif "a" <= ch <= "z":
            lo = True
    return d and u and lo


def _runs(word):
    """The runs of ``[A-Za-z0-9_-]`` in ``word``, with the character before each."""
    out = []
    start = -1
    for i in range(len(word) + 1):
        ch = word[i] if i < len(word) else " "
        if "a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch == "_" or ch == "-":
            if start < 0:
                start = i
        elif start >= 0:
            out.append((word[start - 1] if start else "", word[start:i]))
            start = -1
    return out


def redact(text):
    """``text`` with each secret setting's value, and anything shaped like a key or token
    (a bot token ``123456:AA...``, ``sk-...``, ``Bearer ...``, a long mixed-case run with
    digits), replaced by ``[redacted]``. Cheap when there is none: words under 20 characters
    are not looked into."""
    if not text:
        return text
    for name in config.SETTINGS:
        if config.is_secret(name):
            v = config.get(name)
            if len(v) >= 8 and v in text:
                text = text.replace(v, _REDACTED)
    found = []
    prev = ""
    for word in text.split():
        if prev == "Bearer" and len(word) >= 16:
            found.append(word)
        prev = word
        if len(word) < 20:
            continue
        last = ""
        for before, run in _runs(word):
            if _tokenish(run) or before == ":" and len(run) >= 30 and last.isdigit() and len(last) >= 5:
                found.append(run)
            last = run
    for t in found:
        text = text.replace(t, _REDACTED)
    return text


# -- who is addressed, who is answered ----------------------------------------------------


def _name_char(ch):
    return "a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch == "_"


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
        end = k + len(name)
        if (end >= len(low) or not _name_char(low[end])) and (k == 0 or not _name_char(low[k - 1])):
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
