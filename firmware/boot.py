# Runs first on the device (and under host_sim): bring up the board, never block the REPL.
# Everything lives in mimi.boot so it can be tested; a failure here is printed and the
# REPL still starts.
try:
    from mimi import boot as _boot

    _boot.run()
except Exception as _e:  # noqa: BLE001 - boot must never leave the board without a REPL
    import sys

    print("[boot] failed:")
    sys.print_exception(_e) if hasattr(sys, "print_exception") else print(repr(_e))
