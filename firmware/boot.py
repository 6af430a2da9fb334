# Runs first on the device (and under host_sim): bring up the board, never block the REPL.
# Everything lives in mimi.boot so it can be tested; a failure here is printed and the
# REPL still starts.
# mimi_slot (beside this file, never in an update slot) first picks which copy of the
# package this boot imports: an update over WiFi on trial, or the one before it
# (docs/updates.md). A trial copy that fails to import goes back at once.
try:
    import mimi_slot as _slot
except ImportError:  # deployed before updates over WiFi (no /mimi_slot.py): the package as it is
    _slot = None
if _slot is not None:
    _slot.select()  # never raises
try:
    from mimi import boot as _boot

    _boot.run()
except Exception as _e:  # noqa: BLE001 - boot must never leave the board without a REPL
    import sys

    print("[boot] failed:")
    sys.print_exception(_e) if hasattr(sys, "print_exception") else print(repr(_e))
    if _slot is not None:
        _slot.failed(_e)  # on trial: back to the version before (resets); else returns
