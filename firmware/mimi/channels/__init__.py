"""Channels: where messages come from and replies go (Telegram; the serial console is
``mimi.cli``). Importing the package does nothing; ``mimi.app`` builds what is configured.

A channel has ``start()``, ``tick(now_ms)`` (one step of its work, never blocking long),
``deliver(msg)`` (take one outbound bus message; False when it has no room yet) and
``stop()``.
"""
