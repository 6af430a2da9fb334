"""send_message: put a message to a chat on the bus (for cron and heartbeat turns).

MimiClaw has no way to reach the user unprompted; here a cron or heartbeat turn calls
this tool. The target must be the current chat, the owner's chat, or an allowed chat
(settings ``owner_chat``, ``allowed_chats``), so a prompt cannot make the bot message
strangers.
"""
from micropython import const

from mimi import config
from mimi.tools import registry

# Tunables (config.py holds those shared by several modules and the settings).
_TOOL_MESSAGE_MAX_BYTES = const(4096)  # one send_message text


def check_chat(chat, ctx):
    """Raise ``ValueError`` unless ``chat`` (str) is this turn's chat, the owner's or an
    allowed one (settings): a prompt cannot make the bot write to strangers (cron_add too)."""
    if chat != str(ctx.get("chat_id")) and chat not in (config.get("owner_chat") + " " + config.get(
            "allowed_chats")).replace(",", " ").split():
        raise ValueError("chat %s is not this chat, the owner's, or an allowed chat" % chat)


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
    if not bus.send(channel, chat, text, "text"):
        raise ValueError("the outbound queue is full; try again later")
    return "sent to %s chat %s (%d bytes)" % (channel, chat, n)


def register_all():
    """Register send_message (group ``msg``; text in ``tools.jsonl``)."""
    registry.add(send_message)
