"""Who may reach what: the owner, a second person, a group (issue 14; the people's view:
docs/trust.md; the limits on one turn are ``mimi.guard``'s).

Every turn acts for one chat, in one of three roles (``role(turn)``; ``turn`` is the
inbound message or the tools' ``ctx``, which carry the same keys):
- 0, the owner: the owner's private chat (``commands.owner()``), the serial console, the
  heartbeat, the web app's and the LAN gateway's chats (``ws_...``: only the owner's password
  or a token made at the console opens them, ``mimi.web``), and the jobs they made;
- 1, a person: a second allowed private chat, and the jobs it made;
- 2, a group: an allowed group chat (``is_group``, or a negative id), and its jobs.
A job's turns take the role of the chat that made it (its ``by``), not of the chat it
reports to. Strangers never reach a turn (``mimi.channels.telegram``).

What a role reaches (settings in brackets, defaults first):
- Files. The owner reads and writes all of ``/data`` that the tools do, the other chats'
  histories and folders included: the board is the owner's (who can copy its flash
  anyway). A person or a group writes only its own folder ``/data/chats/<tg_id>/`` and reads that, its own history, the personality
  (SOUL.md), skills and datasheets; the owner's memory (``/data/memory``) and profile
  (USER.md) only when [``share_memory`` none|people|all] says so; never another chat's
  history or folder, HEARTBEAT.md, cron.json or the runtime state.
- The system prompt. Its memory section is the chat's own notes
  (``/data/chats/<tg_id>/MEMORY.md``) unless the owner shares theirs; only the owner's
  turns get USER.md and the daily notes. Nothing a person or a group writes reaches the
  owner's prompt: they cannot write the owner's files.
- Messages. What one chat causes to be sent to another starts with ``[from ...]`` naming
  it.

This module only says who a turn is (every turn loads it: it is small); the rules for the
other chats' files (``guard.refusal``), the ``[from ...]``
mark (``guard.mark``) and the limits on one turn are ``mimi.guard``'s, loaded when a chat
other than the owner's reads, or any turn writes, sends or schedules.
"""
from micropython import const

from mimi import config

_OWNER = const(0)
_PERSON = const(1)
_GROUP = const(2)
_CHATS_DIR = const("/data/chats")  # a chat's own folder: /data/chats/tg_<id>/
_area = [(None, None)]  # (chat, folder) that area() made last

# -- who --------------------------------------------------------------------------------


def chat_of(turn):
    """The chat a turn acts for (str): the chat that made a job (``by``), else its chat."""
    c = turn.get("by") or turn.get("chat_id") or ""
    return c if isinstance(c, str) else str(c)  # MicroPython's str() of a str is a copy (issue 17)


def role(turn):
    """0 (the owner), 1 (a person) or 2 (a group) for an inbound message or a tools' ``ctx``
    (whose ``role``, set by the agent loop once a turn, is taken as it is)."""
    r = turn.get("role")
    if r in (_OWNER, _PERSON, _GROUP) and r is not True and r is not False:
        return r
    ch = turn.get("channel")
    chat = chat_of(turn)
    if ch == "cli" or ch == "heartbeat" or chat[:3] == "ws_":  # a gateway chat: in with the owner's password
        return _OWNER
    if turn.get("is_group") or chat[:1] == "-" or chat[:6] == "fs_oc_":  # commands.is_group's rule
        return _GROUP
    if ch == "cron" and chat == config.CLI_CHAT_ID:  # a job made on the console
        return _OWNER
    # commands.owner()'s rule, here: importing mimi.commands would cost a turn its heap
    o = config.get("owner_chat")
    for c in [] if o else config.get("allowed_chats").split(","):
        if c and c[0] != "-" and c[:6] != "fs_oc_":
            o = c
            break
    return _OWNER if chat == o else _PERSON


def area(turn):
    """The folder of a chat's own notes: ``/data/chats/tg_555`` (a group's ``tg_-100123``, a
    Feishu chat's ``fs_ou_...``)."""
    c = chat_of(turn)
    last = _area[0]
    if c == last[0]:  # this turn's chat again: a turn asks several times (issue 17)
        return last[1]
    from mimi.storage import sessions

    a = _CHATS_DIR + "/" + sessions.key_for("feishu" if c[:3] == "fs_" else "telegram", c)
    _area[0] = (c, a)  # one tuple, replaced whole: safe from two threads
    return a


def memory_dir(turn):
    """The memory folder of this turn (``memory_search``, ``/memory``, the prompt's
    MEMORY.md): the owner's (``config.MEMORY_DIR``: the owner's turn, or as the setting
    ``share_memory`` shares it), else the chat's own folder."""
    r = role(turn)
    s = config.get("share_memory")
    return config.MEMORY_DIR if r == _OWNER or s == "all" or s == "people" and r == _PERSON else area(turn)
