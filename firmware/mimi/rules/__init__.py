"""Automations: rules taught in chat, stored as JSON (``store``), run by the I/O thread
without the LLM (``engine``). docs/automations.md describes them."""
