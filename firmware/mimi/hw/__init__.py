"""The board's hardware: pin policy (``pins``), pin actions (``gpio``), datasheets and pin
aliases (``datasheets``), per-message hardware notes (``retrieval``) and the fast path
that runs a plain on/off command without the LLM (``fastpath``).

Nothing is imported here: each module costs RAM, so callers import the one they need.
"""
