"""send_message: put a message to a chat on the bus (for cron and heartbeat turns).

MimiClaw has no way to reach the user unprompted; here a cron or heartbeat turn calls
this tool. The target must be the current chat, the owner's chat, or an allowed chat
(settings ``owner_chat``, ``allowed_chats``), so a prompt cannot make the bot message
strangers; a second person's or a group's turn reaches only itself unless the owner's
setting ``cross_chat`` allows more, and a text one chat sends to another starts with
``[from ...]`` (``mimi.guard``). Each turn and each chat has a rate (``guard.count_message``).
"""
from micropython import const

from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_TOOL_MESSAGE_MAX_BYTES = const(4096)  # one send_message text


def check_chat(chat, ctx):
    """Raise ``ValueError`` unless this turn may reach ``chat`` (str): its own chat; for the
    owner's turns the owner's or an allowed chat; for others as ``cross_chat`` allows
    (``mimi.guard.check_target``; cron_add too)."""
    from mimi import guard

    guard.check_target(chat, ctx)


def send_message(args, ctx):
    """``text``, optional ``chat_id`` and ``channel`` (default: the chat this turn is for)."""
    bus = ctx.get("bus")
    if bus is None:
        raise ValueError("no message bus in this turn")
    text = args["text"]
    n = len(text.encode())
    if not text.strip():
        raise ValueError("text is empty")
    if n > _TOOL_MESSAGE_MAX_BYTES:
        raise ValueError("text is over %d bytes: shorten it" % _TOOL_MESSAGE_MAX_BYTES)
    here = ctx.get("channel")
    channel = args.get("channel") or ctx.get("reply_channel") or (
        here if here in ("telegram", "feishu", "cli") else "telegram")
    chat = args.get("chat_id")
    chat = str(ctx.get("chat_id") if chat is None or chat == "" else chat).strip()
    if chat[:3] == "fs_":  # a Feishu chat id names its channel
        channel = "feishu"
    if channel not in ("telegram", "feishu", "cli"):
        raise ValueError("channel must be telegram, feishu or cli")
    if not chat or chat == "None":
        raise ValueError("chat_id is needed")
    check_chat(chat, ctx)
    from mimi import guard

    guard.count_message(chat, ctx)
    if not bus.send(channel, chat, guard.redact(guard.mark(ctx, chat, text)), "text"):
        raise ValueError("the outbound queue is full; try again later")
    return "sent to %s chat %s (%d bytes)" % (channel, chat, n)


def register_all():
    """Register send_message (group ``msg``; text in ``tools.jsonl``)."""
    registry.load(("mimi.tools.messaging",))
