"""The rule and sensor tools: rule_add, rule_list, rule_remove, rule_pause, rule_test (group
``cron``), sensor_read, i2c_scan (group ``gpio``); their text is in ``tools.jsonl``.

Every app registers them at init, so this module holds only the registration: each
handler imports ``mimi.rules.chat`` (what the tools do, about 5 KB of heap) when it is
first called (docs/heap.md, "Automations").
"""
from mimi.tools import registry

_NAMES = ("rule_add", "rule_list", "rule_remove", "rule_pause", "rule_test", "sensor_read", "i2c_scan")


def _handler(name):
    def run(args, ctx):
        from mimi.rules import chat

        return getattr(chat, name)(args, ctx)

    return run


def register_all():
    """Register the rule and sensor tools."""
    registry.add(named=[(n, _handler(n)) for n in _NAMES])
