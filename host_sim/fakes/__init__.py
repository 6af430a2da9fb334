"""Local fake servers that speak real wire formats (Telegram Bot API, LLM APIs).

Each is trusted only because a real client library accepts it (tests/fakes/).
"""
