# Starts the assistant's threads, then returns so the REPL on the serial console stays live.
try:
    from mimi import app as _app, boot as _boot

    if not _boot.state["safe"]:
        _boot.app_running(True)  # from here an unasked-for reset counts as a crash (mimi.boot)
        from mimi import config as _config

        # The first start makes the web password and prints it once; not while the open
        # setup portal runs (a stored secret would make its access point WPA2).
        if not _boot.state["portal"] and not _config.get("web_made"):
            from mimi.web import auth as _auth

            _auth.first_start()
    if _boot.state["portal"]:
        _boot.open_portal()  # the WiFi setup portal instead of the assistant (mimi.web.portal)
    elif _app.init():
        _app.start()
except KeyboardInterrupt:
    # Ctrl-C while starting: stop what started; the REPL (or the host launcher) sees it.
    try:
        _app.stop()
    except Exception:  # noqa: BLE001
        pass
    raise
except Exception as _e:  # noqa: BLE001 - never leave the board without a REPL
    import sys

    try:
        _boot.app_running(False)  # not running: a later reset is no crash
    except Exception:  # noqa: BLE001
        pass

    print("[main] failed to start:")
    sys.print_exception(_e) if hasattr(sys, "print_exception") else print(repr(_e))
    try:
        import mimi_slot

        mimi_slot.failed(_e)  # an update on trial that cannot start: back to the one before (resets)
    except ImportError:
        pass
