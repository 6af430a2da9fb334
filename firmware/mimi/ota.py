"""Updates over WiFi, the running side: versions, confirm, switch, roll back.

The slots and the state they share with boot are ``/mimi_slot.py``'s (it runs before
the package, so a broken update cannot stop its own rollback); receiving and checking an
image is ``mimi.ota_image``'s. docs/updates.md tells the whole story.

- ``running_version()``: the git description the image was built from (``build.txt``,
  written by ``host_sim.romfs`` when it stages the package), else ``VERSION``.
- ``confirm()``: the trial version ran healthy (``mimi.app.watch``): it stays.
- ``apply(version)``: after ``mimi.ota_image`` wrote and checked the other slot, switch
  to it on trial (one NVS write) and reset.
- ``rollback()``: back to the other slot by hand (the console, the web app), and reset.
- ``apply_firmware(version)``: MicroPython itself, where the partition table has OTA
  slots (``mimi.ota_firmware.FirmwareUpload``): boot the other app partition on trial.
"""
from mimi import VERSION, data_path, log, seam

_VERSION_MAX = 80  # bytes of a version string kept in the state (git describe: ~30)


def _slots():
    import mimi_slot  # in / beside boot.py (firmware/ on the host), never in a slot

    return mimi_slot


def running_version():
    """The running package's version (str): the first line of ``mimi/build.txt`` (``git
    describe --always --dirty`` at build time), else ``VERSION`` (a checkout, mip)."""
    try:
        with open(data_path(__file__, "build.txt")) as f:
            v = f.readline().strip()
        if v:
            return v[:_VERSION_MAX]
    except OSError:
        pass
    return VERSION


def info():
    """What ``/status`` and ``GET /api/version`` show (dict): ``running`` (this
    version), ``previous`` (the other slot's, "" before any update), ``slot`` (0 or 1),
    ``trial`` (True until it ran healthy), ``boots`` (of the trial version), ``note``
    (the last rollback, else "")."""
    st = _slots().load()
    return {"running": running_version(), "previous": st.get("previous", ""), "slot": st.get("slot", 0),
            "trial": bool(st.get("trial")), "boots": st.get("boots", 0), "note": st.get("note", "")}


def describe():
    """One line for ``/status``: ``v0.1-5-gabc (before: v0.1-3-gdef)``, with ``on trial``
    or the last rollback when there is one."""
    i = info()
    out = i["running"]
    if i["previous"]:
        out += " (before: %s)" % i["previous"]
    if i["trial"]:
        out += ", on trial (boot %d)" % i["boots"]
    if i["note"]:
        out += "; " + i["note"]
    return out


def confirm():
    """The running version ran healthy: end its trial, so boot keeps it (one NVS write;
    nothing when there is no trial). Returns True when a trial ended. Also tells the
    bootloader that this MicroPython works (``ota_flash.app_confirm``: after an update of
    MicroPython itself it would go back to the one before at the next reset)."""
    from mimi import ota_flash

    ota_flash.app_confirm()
    s = _slots()
    st = s.load()
    if not st.get("trial"):
        return False
    st["trial"] = False
    st["boots"] = 0
    s.save(st)
    log.info("ota", "%s confirmed", st.get("running", "?"))
    return True


def other_slot():
    """The slot an update writes: the one not running (0 or 1)."""
    return 1 - _slots().load().get("slot", 0)


def apply(version, reset=True):
    """Switch to the other slot, which ``mimi.ota_image`` filled and checked, on trial,
    and reset the board into it (``reset`` False: tests, and callers that reset later).

    One NVS write is the switch: a power cut before it keeps the running version, after
    it boots the new one on trial. The reset is one the app asked for: not a crash."""
    s = _slots()
    st = s.load()
    new = {"slot": 1 - st.get("slot", 0), "trial": True, "boots": 0, "running": str(version)[:_VERSION_MAX],
           "previous": running_version(), "note": ""}
    s.save(new)
    log.info("ota", "switching to %s (slot %d) on trial", new["running"], new["slot"])
    if reset:
        _restart()
    return new


def apply_firmware(version, reset=True):
    """Boot the MicroPython ``mimi.ota_firmware.FirmwareUpload`` wrote and checked, on trial
    (ESP-IDF's app rollback: a reset before ``confirm`` boots the one before), and reset
    into it. ``ValueError`` when the table has no OTA slots."""
    from mimi import ota_flash

    part = ota_flash.app_partition()
    if part is None:
        raise ValueError("no OTA app slot")
    ota_flash.app_boot(part)
    log.info("ota", "booting MicroPython %s from %s on trial", version, part.info()[4])
    if reset:
        _restart()
    return part.info()[4]


def rollback(reset=True):
    """Go back to the other slot (the version before) now, by hand; ``ValueError`` when
    there is none (never updated)."""
    s = _slots()
    st = s.load()
    if not st.get("previous"):
        raise ValueError("no previous version to go back to")
    st = s.rolled_back(st, "asked")
    s.save(st)
    log.info("ota", st["note"])
    if reset:
        _restart()
    return st


def _restart():
    from mimi import app, boot

    boot.app_running(False)  # asked for: the next boot is no crash (mimi_slot.crashed)
    boot.clear_crashes()
    tg = app.state.get("telegram")
    if tg:
        try:
            tg.save_offset(True)
        except Exception as e:  # noqa: BLE001 - the reset matters more
            log.warn("ota", "offset: %r", e)
    seam.reset()
