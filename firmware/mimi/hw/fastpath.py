"""The fast path: a message that is plainly an on/off command on a known pin alias runs
without the LLM and is answered at once (seed 004: "开灯" must answer within a second; an
LLM round trip takes seconds).

``try_handle(msg)`` is called by the agent before any LLM call. It acts only when the
whole message is one of these forms, with ALIAS exactly an alias of the configured board
or a generic one (``mimi.hw.datasheets.aliases``), after dropping "please", "the", "my"
and a final "now"/"thanks" and trailing "." or "!":
- English: ``turn|switch|power on ALIAS``, ``turn|switch|power ALIAS on``, ``ALIAS on``,
  the same with ``off`` (also ``shut off ALIAS``), ``toggle ALIAS``.
- Chinese: ``[请|帮我|麻烦][把]`` then ``打开|开启|开|关闭|关掉|关上|关`` + ALIAS, or
  ALIAS + one of those, then ``[吧|了|一下|啦]`` ("关灯" when an alias is 灯, "把客厅灯关了").
Anything else returns None and goes to the agent: questions (``?``/``吗``), negations
("don't", 不要, 别), unknown aliases, extra words ("turn on the porch light at 7").

An alias of kind ``in`` (a button) is not switched: the reply says so and gives its level.
An alias of kind ``ws2812`` is lit with ``HW_RGB_ON`` (dim white) or set dark. A pin the
policy refuses gets a reply naming the rule. Every reply names the alias and the GPIO.
"""
from mimi import config, log
from mimi.hw import datasheets

TAG = "fast"

_ON = "on"
_OFF = "off"
_TOGGLE = "toggle"
_VERBS = ("turn", "switch", "power")
_DROP = ("please", "pls", "plz", "the", "my")
_TAIL = ("now", "thanks", "thx")
_NEG = ("don't", "dont", "do not", "never", "not ", "不要", "别", "不用", "没")
_ZH_ON = ("打开", "开启", "开")  # longest first
_ZH_OFF = ("关闭", "关掉", "关上", "关")
_ZH_HEAD = ("请", "帮我", "麻烦", "给我")
_ZH_TAIL = ("一下", "吧", "了", "啦", "呀", "哦")
_ZH_PUNCT = " \t。！!，,.~～"


def _english(text):
    """``(action, alias)`` for an English command, or None."""
    words = []
    for w in text.replace(",", " ").split():
        w = w.strip(".!")
        if w and w not in _DROP:
            words.append(w)
    while words and words[-1] in _TAIL:
        words.pop()
    if len(words) < 2:
        return None
    if words[0] == "toggle":
        return (_TOGGLE, "_".join(words[1:]))
    if words[0] == "shut" and words[1] == _OFF:
        return (_OFF, "_".join(words[2:]))
    if words[0] in _VERBS:
        if words[1] in (_ON, _OFF):
            return (words[1], "_".join(words[2:]))
        words = words[1:]
        if words[-1] in (_ON, _OFF) and len(words) > 1:
            return (words[-1], "_".join(words[:-1]))
        return None
    if words[-1] in (_ON, _OFF):
        return (words[-1], "_".join(words[:-1]))
    return None


def _strip_any(s, items, head):
    changed = True
    while changed and s:
        changed = False
        for it in items:
            if head and s.startswith(it) and len(s) > len(it):
                s = s[len(it):]
                changed = True
            elif not head and s.endswith(it) and len(s) > len(it):
                s = s[:-len(it)]
                changed = True
    return s


def _chinese(text, known):
    """``(action, alias)`` for a Chinese command whose alias is in ``known``, or None."""
    s = "".join(ch for ch in text if ch not in _ZH_PUNCT)
    s = _strip_any(s, _ZH_HEAD, True)
    if s.startswith("把"):
        s = s[1:]
    s = _strip_any(s, _ZH_TAIL, False)
    for verbs, action in ((_ZH_ON, _ON), (_ZH_OFF, _OFF)):
        for v in verbs:
            if s.startswith(v) and s[len(v):] in known:
                return (action, s[len(v):])
            if s.endswith(v) and s[:-len(v)] in known:
                return (action, s[:-len(v)])
    return None


def parse(text, known):
    """The command in ``text`` as ``(action, alias, chinese)``, or None when it is not a
    plain on/off/toggle command on an alias in ``known`` (a dict or list of aliases)."""
    t = text.strip().lower()
    if not t or len(t) > config.HW_FASTPATH_MAX_CHARS or "?" in t or "？" in t or "吗" in t:
        return None
    for n in _NEG:
        if n in t:
            return None
    cmd = _english(t)
    if cmd and cmd[1] in known:
        return (cmd[0], cmd[1], False)
    cmd = _chinese(t, known)
    if cmd:
        return (cmd[0], cmd[1], True)
    return None


def _say(zh, en_text, zh_text):
    return zh_text if zh else en_text


def _run(action, alias, pin, kind, zh):
    """Do ``action`` on ``pin``; return the reply."""
    from mimi.hw import gpio, pins  # only once a command matched: most messages never need them

    name = alias.replace("_", " ")
    where = "%s (GPIO%d)" % (name, pin)
    try:
        if kind == "in":
            mode, level, _ = gpio.read(pin)
            return _say(zh, "%s is an input; I can read it but not switch it. It reads %s now." % (where, level),
                        "%s 是输入，只能读取，不能开关。现在读数：%s。" % (where, level))
        if action == _TOGGLE:
            st = gpio.state(pin)  # what mimi drives; a pin it never set counts as off
            if st is None or st[0] == "in":
                action = _ON
            elif st[0] == "rgb":
                action = _OFF if st[1] != (0, 0, 0) else _ON
            elif st[0] == "pwm":
                action = _OFF if st[1][0] > 0 else _ON
            else:
                action = _OFF if st[1] else _ON
        on = action == _ON
        if kind == "ws2812":
            c = config.HW_RGB_ON if on else (0, 0, 0)
            warn = gpio.rgb(pin, c[0], c[1], c[2])
        else:
            level, warn = gpio.write(pin, 1 if on else 0)
    except pins.PinRefused as e:
        log.warn(TAG, "%s: %s", alias, e)
        return _say(zh, "I did not switch %s: %s" % (where, e), "没有操作 %s：%s" % (where, e))
    except (ValueError, OSError) as e:
        log.exc(TAG, alias, e)
        return _say(zh, "Switching %s failed: %s" % (where, e), "操作 %s 失败：%s" % (where, e))
    log.info(TAG, "%s GPIO%d %s", alias, pin, "on" if on else "off")
    reply = _say(zh, "Turned %s %s." % (where, "on" if on else "off"),
                 "已%s %s。" % ("打开" if on else "关闭", where))
    if warn:
        reply = "%s\n(%s)" % (reply, warn)
    return reply


def _denied(msg):
    """The agent's rule for this chat's tool groups; if it cannot be asked, a group chat
    gets no GPIO (the safe answer)."""
    if not isinstance(msg, dict):
        return ()
    try:
        from mimi.agent.loop import denied_groups
    except ImportError:
        return ("gpio",) if msg.get("is_group") else ()
    return denied_groups(msg)


def try_handle(msg, denied_groups=None):
    """Handle ``msg`` (an inbound bus message dict with ``text``, or a str) when it is a
    plain command on a known alias; return the reply str, or None to let the agent run.

    ``denied_groups``: the tool groups this chat may not use; None asks the agent's rule
    (``mimi.agent.loop.denied_groups(msg)``: group chats lose ``gpio`` unless the owner
    allows it), the same groups ``registry.offered`` withholds. When ``"gpio"`` is among
    them the fast path never acts. Touches pins (through ``mimi.hw.gpio``), never sessions
    or the bus. Never raises.
    """
    try:
        if "gpio" in (_denied(msg) if denied_groups is None else denied_groups):
            return None
    except Exception as e:  # noqa: BLE001 - unsure whether GPIO is allowed: do not act
        log.exc(TAG, "denied groups", e)
        return None
    text = msg.get("text") if isinstance(msg, dict) else msg
    if not isinstance(text, str) or len(text) > config.HW_FASTPATH_MAX_CHARS:
        return None
    try:
        known = datasheets.aliases()
        if not known:
            return None
        cmd = parse(text, known)
        if cmd is None:
            return None
        action, alias, zh = cmd
        pin, kind = known[alias]
        return _run(action, alias, pin, kind, zh)
    except Exception as e:  # noqa: BLE001 - a fast-path failure must never cost the message
        log.exc(TAG, "fast path", e)
        return None
