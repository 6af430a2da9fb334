"""The fast path: a message that is plainly an on/off command on a known pin alias runs
without the LLM and is answered at once (seed 004: "开灯" must answer within a second; an
LLM round trip takes seconds).

``try_handle(msg)`` is called by the agent before any LLM call. It acts only when the
whole message is one of these forms, with ALIAS exactly an alias of the configured board
or a generic one (``mimi.hw.datasheets.aliases``), after dropping "please", "the", "my",
"now", "thanks" and punctuation:
- English: ``turn|switch|power on ALIAS``, ``turn|switch|power ALIAS on``, ``ALIAS on``,
  the same with ``off`` (also ``shut off ALIAS``), ``toggle ALIAS``.
- Chinese: ``[请|帮我|麻烦|给我][把]`` then ``打开|开启|开|关闭|关掉|关上|关`` + ALIAS, or
  ALIAS + one of those, then ``[吧|了|一下|啦]`` ("关灯" when an alias is 灯, "把客厅灯关了");
  with 了 but no 把 or polite word first ("灯开了", "the light is on") it is a report: the agent.
Anything else returns None and goes to the agent: questions (``?``/``吗``), negations
(the words "not", "don't", "never"; 不要, 别, 没), unknown aliases, extra words ("turn on
the porch light at 7").

An alias of kind ``in`` (a button) is not switched: the reply says so and gives its level.
An alias of kind ``ws2812`` is lit with ``HW_RGB_ON`` (dim white) or set dark. A pin the
policy refuses gets a reply naming the rule. Every reply names the alias and the GPIO.
"""
from micropython import const

from mimi import config, log
from mimi.hw import datasheets

# Tunables (config.py holds those shared by several modules and the settings).
_HW_FASTPATH_MAX_CHARS = const(80)  # longer messages are never a plain command

# Word lists, "|" between them, each word between spaces: signs that a message is not a
# plain command, found anywhere (questions, Chinese negations) or as words (English
# negations); English words dropped anywhere; English verbs; Chinese polite openings;
# Chinese closing particles; Chinese verbs, on then off, longest first.
_WORDS = const(" ? ？ 吗 不要 别 不用 没 | don't dont never not | please pls plz the my now thanks thx |"
               " turn switch power shut | 请 帮我 麻烦 给我 把 | 一下 吧 了 啦 呀 哦 |"
               " 打开 开启 开 关闭 关掉 关上 关 ")
# The replies, English and Chinese: done, not done (refused or failed), an input.
_SAY = const(("Turned %s %s.|I did not switch %s: %s|%s is an input; I can read it but not switch it. It reads %s now.",
              "已%s %s。|没有操作 %s：%s|%s 是输入，只能读取，不能开关。现在读数：%s。"))


def parse(text, known):
    """The command in ``text`` as ``(action, alias, chinese)`` with action "on", "off" or
    "toggle", or None when it is not a plain command on an alias in ``known`` (a dict or
    list of aliases)."""
    t = text.strip().lower()
    words = _WORDS.split("|")
    if len(t) > _HW_FASTPATH_MAX_CHARS:
        return None
    for n in words[0].split():
        if n in t:
            return None
    # English: [turn|switch|power|shut] on|off|toggle ALIAS, or [turn|...] ALIAS on|off
    w = []
    for x in t.replace(",", " ").replace(".", " ").replace("!", " ").split():
        if " %s " % x in words[1]:
            return None
        if " %s " % x not in words[2]:
            w.append(x)
    if w and " %s " % w[0] in words[3]:
        w.pop(0)
    act = w and (w.pop(0) if w[0] in ("on", "off", "toggle") else w.pop() if w[-1] in ("on", "off") else None)
    if act and "_".join(w) in known:
        return (act, "_".join(w), False)
    if len(t.encode()) == len(t):  # ASCII: none of the Chinese verbs below can be in it
        return None
    # Chinese: polite words and 把 off the front, particles off the end, then the verb
    s = "".join(t.split())
    for x in "。！!，,.~～":
        s = s.replace(x, "")
    opener = done = False
    for _ in range(3):  # a few polite words, a few particles
        for x in words[4].split():
            if s.startswith(x) and len(s) > len(x):
                s = s[len(x):]
                opener = True
        for x in words[5].split():
            if s.endswith(x) and len(s) > len(x):
                s = s[:-len(x)]
                done = done or x == "了"
    if done and not opener:  # "灯开了": the light is on (a report); "把灯关了" is the order
        return None
    for v in words[6].split():
        for a in (s[len(v):] if s.startswith(v) else None, s[:-len(v)] if s.endswith(v) else None):
            if a in known:
                return ("off" if v[0] == "关" else "on", a, True)
    return None


def try_handle(msg, denied_groups=None):
    """Handle ``msg`` (an inbound bus message dict with ``text``, or a str) when it is a
    plain command on a known alias; return the reply str, or None to let the agent run.

    ``denied_groups``: the tool groups this chat may not use; None asks the agent's rule
    (``mimi.agent.loop.denied_groups(msg)``: group chats lose ``gpio`` unless the owner
    allows it), the same groups ``registry.offered`` withholds; if that rule cannot be
    imported, a group chat gets no GPIO. When ``"gpio"`` is among them the fast path never
    acts. Touches pins (through ``mimi.hw.gpio``), never sessions or the bus. Never raises:
    a failure returns None (the message goes to the agent).
    """
    try:
        is_dict = isinstance(msg, dict)
        if denied_groups is None and is_dict:
            try:
                from mimi.agent.loop import denied_groups

                denied_groups = denied_groups(msg)
            except ImportError:
                denied_groups = ("gpio",) if msg.get("is_group") else ()
        text = msg.get("text") if is_dict else msg
        known = "gpio" not in (denied_groups or ()) and isinstance(text, str) and datasheets.aliases()
        cmd = known and parse(text, known)
        if not cmd:
            return None
        act, alias, zh = cmd
        pin, kind = known[alias]
        if kind not in ("in", "out", "ws2812"):  # a sensor (dht22, adc...): the agent reads it
            return None
        say = _SAY[zh].split("|")
        from mimi.hw import gpio  # only once a command matched: most messages never need it

        where = "%s (GPIO%d)" % (alias.replace("_", " "), pin)
        try:
            if kind == "in":
                r = say[2] % (where, gpio.read(pin)[1])
            else:
                if act == "toggle":  # what mimi drives; a pin it never set counts as off
                    st = gpio.state(pin)
                    lit = st and st[0] != "in" and (st[1][0] if st[0] == "pwm" else st[1] not in (0, (0, 0, 0)))
                    act = "off" if lit else "on"
                warn = gpio.rgb(pin, *(config.HW_RGB_ON if act == "on" else (0, 0, 0))) if kind == "ws2812" else \
                    gpio.write(pin, act == "on")[1]
                r = say[0] % (("打开" if act == "on" else "关闭", where) if zh else (where, act))
                if warn:
                    r = "%s\n(%s)" % (r, warn)
        except (ValueError, OSError) as e:  # a refused pin (PinRefused) names its rule
            r = say[1] % (where, e)
        log.info("fast", r)
        return r
    except Exception as e:  # noqa: BLE001 - a fast-path failure must never cost the message
        log.exc("fast", "fast path", e)
        return None
