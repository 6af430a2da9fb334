"""Which copy of the mimi package this boot runs: the slot choice of updates over WiFi.

Lives in ``/`` beside ``/boot.py`` and runs before any ``mimi`` module is imported, so
that a broken update can never stop its own rollback: nothing here comes from a slot.
It touches ``esp32.NVS``, ``vfs`` and ``machine`` itself (``mimi.seam`` is in a slot);
on the host the stand-ins in ``host_sim/stubs`` answer, as for the package.

Two slots hold the package (docs/updates.md):
- on a MicroPython with ROMFS, the two halves of the ``romfs`` partition: slot 0 at
  offset 0 (what ``tools/flash.sh deploy`` writes and the port mounts at ``/rom`` by
  itself at boot), slot 1 at half the partition (``slot_offset``);
- on one without (the micropython.org builds), folders: slot 0 ``/lib/mimi`` (deploy's),
  slot 1 ``/ota1/mimi`` (``FOLDERS``).

The state is one NVS blob (namespace ``mimi_ota``, key ``state``), so switching slots is
one write, which NVS makes atomic: the old state or the new one, never half. JSON:
``{"slot": 1, "trial": true, "boots": 0, "running": "v...", "previous": "v...",
"note": ""}``. No blob (never updated, or ``tools/flash.sh deploy`` since): slot 0.

A new version boots on trial (``trial``): each boot counts (``boots``; a soft reset does
not); it is confirmed
when the app has run healthy (``mimi.ota.confirm``, called by ``mimi.app.watch``). Boot
goes back to the other slot by itself when the trial version
- crashed: this boot comes from a panic, the watchdog or an unasked-for
  ``machine.reset()`` while the app ran (the rule of ``mimi.boot.check_safe_mode``, read
  from the same RTC memory record);
- booted ``TRIAL_BOOTS`` times without getting healthy;
- failed to import or start (``failed``, called by ``/boot.py`` and ``/main.py``).
"""
import json
import sys

TRIAL_BOOTS = 2  # boots a new version gets to run healthy; the next boot rolls back
NVS_NAMESPACE = "mimi_ota"
NVS_KEY = "state"
STATE_MAX = 512  # bytes: the blob's cap
FOLDERS = ("/lib", "/ota1")  # without ROMFS: the folder that holds mimi/, per slot
ROM_MOUNT = "/rom"

state = {}  # this boot's state, as select() found or left it


def _nvs():
    import esp32

    return esp32.NVS(NVS_NAMESPACE)


def load():
    """The stored state (dict); ``{}`` when there is none or it is unreadable."""
    buf = bytearray(STATE_MAX)
    try:
        n = _nvs().get_blob(NVS_KEY, buf)
        st = json.loads(bytes(buf[:n]))
        return st if isinstance(st, dict) else {}
    except (OSError, ValueError):
        return {}


def save(st):
    """Store ``st`` (dict) in one NVS write; ``None`` erases it (slot 0, no trial).

    Raises ``ValueError`` over ``STATE_MAX`` bytes (long version strings are cut by the
    callers), ``OSError`` from NVS."""
    nvs = _nvs()
    if st is None:
        try:
            nvs.erase_key(NVS_KEY)
        except OSError:
            pass
    else:
        data = json.dumps(st).encode()
        if len(data) > STATE_MAX:
            raise ValueError("update state over %d bytes" % STATE_MAX)
        nvs.set_blob(NVS_KEY, data)
    nvs.commit()


def rolled_back(st, why):
    """The state after giving up the trial version of ``st``: the other slot, confirmed,
    and a ``note`` saying which version was left and why (``/status`` shows it)."""
    return {"slot": 1 - st.get("slot", 0), "trial": False, "boots": 0, "running": st.get("previous", ""),
            "previous": st.get("running", ""), "note": "rolled back from %s: %s" % (st.get("running", "?"), why)}


def crashed(cause, rtc):
    """True when this boot comes from a crash of the app: ``cause`` is
    ``machine.reset_cause()``, ``rtc`` the RTC memory, whose record ``b"mimi:<n>:<1 if
    the app ran>:..."`` ``mimi.boot`` keeps. A hard reset (panic, ``machine.reset()``) or
    the watchdog while the app ran is one; a power-on, a soft reset, or a reset asked for
    while the app was stopped (``tools/flash.sh reset``, ``mimi.ota.apply``) is not."""
    import machine

    if cause not in (machine.HARD_RESET, machine.WDT_RESET):
        return False
    f = bytes(rtc or b"")
    return f[:5] == b"mimi:" and f[5:].split(b":")[1:2] == [b"1"]


def slot_offset(slot, size):
    """Byte offset of ``slot`` (0 or 1) in a ROMFS partition of ``size`` bytes: the
    second slot starts at half the partition, on a 4 KiB erase block."""
    return slot * (size // 2 // 4096 * 4096)


def rom_segment():
    """The ROMFS partition as ``(segment, memoryview)``, or None without ROMFS (no
    ``vfs.rom_ioctl``, or no ``romfs`` partition). The segment is what
    ``vfs.rom_ioctl(2, 0)`` gives: an ``esp32.Partition`` on the board (mapped, so the
    memoryview reads flash in place), a memoryview on the virtual board."""
    try:
        import vfs

        if not hasattr(vfs, "rom_ioctl") or vfs.rom_ioctl(1) < 1:
            return None
        seg = vfs.rom_ioctl(2, 0)
        return seg, memoryview(seg)
    except (ImportError, OSError, TypeError):  # CPython has no vfs
        return None


def mount(slot):
    """Make ``slot``'s package the one ``import mimi`` finds. Slot 0 is where the port
    and deploy put it already (``/rom``, or ``/lib`` on ``sys.path``). With ROMFS, slot 1
    replaces the port's mount of the partition's start at ``/rom`` (``/rom`` also goes
    on ``sys.path`` in case the port's mount failed); without, ``/ota1`` goes first."""
    if not slot:
        return
    rom = rom_segment()
    if rom is None:
        if FOLDERS[1] not in sys.path:
            sys.path.insert(1, FOLDERS[1])  # after "" (the current folder), before .frozen
        return
    import vfs

    mv = rom[1]
    try:
        vfs.umount(ROM_MOUNT)
    except OSError:
        pass  # the port found no valid image at the start (slot 0 was being written)
    vfs.mount(vfs.VfsRom(mv[slot_offset(slot, len(mv)):]), ROM_MOUNT)
    if ROM_MOUNT not in sys.path:
        sys.path.insert(1, ROM_MOUNT)


def select():
    """Called first by ``/boot.py``: count a boot of a trial version, roll back when it
    crashed or used its boots, then mount the chosen slot. Returns the slot (0 or 1).
    Never raises: any failure leaves slot 0 (the port's and deploy's own) in place."""
    global state
    try:
        st = load()
        import machine

        if st.get("trial") and machine.reset_cause() != machine.SOFT_RESET:
            # A soft reset (Ctrl-D, each mpremote command) is no boot of the trial: the
            # chip did not restart, and tools/flash.sh config must not use up its boots.
            st["boots"] = st.get("boots", 0) + 1
            why = None
            if st["boots"] > 1 and crashed(machine.reset_cause(), machine.RTC().memory()):
                why = "it crashed"
            elif st["boots"] > TRIAL_BOOTS:
                why = "%d boots without running healthy" % TRIAL_BOOTS
            if why:
                st = rolled_back(st, why)
                print("[ota] " + st["note"])
            save(st)
        state = st
        mount(st.get("slot", 0))
        return st.get("slot", 0)
    except Exception as e:  # noqa: BLE001 - boot goes on with slot 0
        print("[ota] slot choice failed: %r" % e)
        return 0


def failed(why):
    """Called by ``/boot.py`` and ``/main.py`` when the package failed to import or the
    app failed to start. On trial: roll back and reset the board (it starts over with the
    version before); else nothing (returns)."""
    try:
        st = load()
        if not st.get("trial"):
            return
        st = rolled_back(st, "failed to start (%s)" % str(why)[:80])
        print("[ota] " + st["note"])
        save(st)
    except Exception as e:  # noqa: BLE001 - nothing better to do than the REPL
        print("[ota] rollback failed: %r" % e)
        return
    import machine

    machine.reset()
