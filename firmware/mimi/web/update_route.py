"""Updates over WiFi, the HTTP side: routes on the LAN web app (microdot 2.7.0).

``routes(app, authorized)`` adds, on the ``microdot.Microdot`` ``app``:

- ``POST /api/update``: the body is the new package image (``python -m host_sim.romfs``;
  ``tools/flash.sh --host HOST update`` sends it), its length in ``Content-Length``,
  its SHA-256 in ``X-Update-SHA256`` (64 hex digits). The body is streamed into the
  slot not running (``mimi.ota_image.Upload``), 4 KiB at a time, never held whole;
  then checked; then the answer ``{"version": new, "previous": running, "restarting":
  true}`` goes out and, ``OTA_RESTART_DELAY_MS`` later, the board switches to it on
  trial and resets (``mimi.ota.apply``). Errors (JSON ``{"error": "..."}``): 401 not
  authorized, 411 no Content-Length, 400 a malformed hash, a cut body, a SHA-256 other
  than announced, not a mimi image; 413 too big for the slot or the flash; 409 another
  upload under way, or the running version still on trial; 408 the sender stopped for
  ``OTA_READ_TIMEOUT_S``.
- ``POST /api/firmware``: the same for MicroPython itself (the app image of a build,
  ``build-BOARD/micropython.bin``), where the partition table has OTA slots
  (``mimi.ota_firmware.FirmwareUpload``, ``mimi.ota.apply_firmware``); 400 where it has
  none (the stock ESP32_GENERIC_S3 table: docs/updates.md).
- ``GET /api/version``: ``mimi.ota.info()`` (running, previous, slot, trial, boots,
  note), ``max_bytes`` (the largest image the slot takes), ``micropython`` (the running
  one) and ``firmware_slot`` (the OTA app partition an update of it would go to, or
  null).
- ``POST /api/rollback``: back to the version before (``mimi.ota.rollback``), then reset.
- ``GET /update``: a page with a file field that sends an image as ``tools/flash.sh``
  does (its SHA-256 computed in the page; ``crypto.subtle`` exists only on https or
  localhost, so the page has its own), and shows the version the board comes back with.

``authorized(request) -> bool`` decides who may (the web app's session with its CSRF
check, or ``Authorization: Bearer <password>``); the page sends the password typed in
it as a Bearer token, else (signed in) the session cookie and ``X-CSRF-Token`` copied
from the ``csrf`` cookie. ``Request.max_content_length`` is raised to 4 MiB (microdot's
own check, before any route; bodies over ``Request.max_body_length``, 16 KB, are
streamed by microdot, not read): each route checks its own cap.
"""
import json

from micropython import const

from mimi import log

OTA_READ_TIMEOUT_S = const(30)  # a sender silent this long is gone
OTA_RESTART_DELAY_MS = const(1000)  # the answer leaves before the reset
_OTA_CHUNK_BYTES = const(4096)
_OTA_CONTENT_MAX_BYTES = const(4194304)  # above any app partition (MicroPython itself) or ROMFS slot


def _json(obj, status=200):
    return json.dumps(obj), status, {"Content-Type": "application/json"}


def _error(message, status):
    return _json({"error": message}, status)


def max_bytes():
    """The largest image this board takes: half its ROMFS partition, else
    ``mimi.ota_image.OTA_FILES_MAX_BYTES`` (the flash may hold less: checked per upload)."""
    import mimi_slot
    from mimi import ota_flash, ota_image

    rom = ota_flash.rom_partition()
    return mimi_slot.slot_offset(1, rom.size) if rom is not None else ota_image.OTA_FILES_MAX_BYTES


def routes(app, authorized=None, apply=None, apply_firmware=None):
    """Add the update routes to microdot ``app``; ``authorized(request)`` -> bool guards
    all but the page (default, as the web server calls it with ``app`` alone: the bearer
    token, or a signed-in page's session with its CSRF token, ``mimi.web.auth``). ``apply(version)``, ``apply_firmware(version)``: what runs after a
    good upload (default ``mimi.ota.apply``, ``mimi.ota.apply_firmware``: switch and
    reset; tests record it instead)."""
    import asyncio

    from microdot import Request

    signed_in = None
    if authorized is None:
        from mimi.web import auth

        signed_in = auth.session_ok

        def authorized(request):
            return auth.bearer_ok(request) or auth.csrf_ok(request)

    # The update modules load at the first upload, not with the web app (docs/heap.md).
    # microdot refuses longer bodies (413) before any route runs; ours check their own caps
    # (the slot, the flash). Bodies over max_body_length are streamed, so this costs no RAM.
    Request.max_content_length = max(Request.max_content_length, _OTA_CONTENT_MAX_BYTES)

    @app.post("/api/update")
    async def update(request):
        from mimi import ota, ota_image

        if not authorized(request):
            return _error("not authorized", 401)
        got = await _receive(request, ota_image.Upload)
        if not isinstance(got, str):
            return got  # the refusal
        asyncio.create_task(_later(apply or ota.apply, got))
        return _json({"version": got, "previous": ota.running_version(), "restarting": True})

    @app.post("/api/firmware")
    async def firmware(request):
        from mimi import ota, ota_firmware, seam

        if not authorized(request):
            return _error("not authorized", 401)
        got = await _receive(request, ota_firmware.FirmwareUpload)
        if not isinstance(got, str):
            return got
        asyncio.create_task(_later(apply_firmware or ota.apply_firmware, got))
        return _json({"version": got, "previous": seam.describe(), "restarting": True})

    @app.get("/api/version")
    async def version(request):
        if not authorized(request):
            return _error("not authorized", 401)
        from mimi import ota

        from mimi import ota_flash, seam

        info = ota.info()
        info["max_bytes"] = max_bytes()
        info["micropython"] = seam.describe()
        part = ota_flash.app_partition()
        info["firmware_slot"] = part.info()[4] if part is not None else None
        return _json(info)

    @app.post("/api/rollback")
    async def rollback(request):
        if not authorized(request):
            return _error("not authorized", 401)
        from mimi import ota

        try:
            st = ota.rollback(reset=False)
        except ValueError as e:
            return _error(str(e), 409)
        asyncio.create_task(_later(lambda v: ota._restart(), st["running"]))
        return _json({"version": st["running"], "restarting": True})

    @app.get("/update")
    async def page(request):
        from mimi import data_path

        r = _page_file(data_path(__file__, "update.html"))
        if signed_in is not None and signed_in(request):
            # double submit: the page's script copies this cookie into X-CSRF-Token (another
            # site can neither read it nor, SameSite=Strict, send it)
            from mimi.web import auth

            r.headers["Set-Cookie"] = "csrf=%s; Path=/; SameSite=Strict" % auth.csrf_token(request)
        return r


async def _receive(request, make):
    """Stream the body into ``make(size, sha256_hex)`` (an ``Upload``); the version it
    checked (str), or the refusal to answer with."""
    import asyncio

    size = request.content_length
    if not size:
        return _error("Content-Length is required: the image's size in bytes", 411)
    try:
        u = make(size, request.headers.get("X-Update-SHA256"))
    except ValueError as e:
        return _error(str(e), 413 if "holds" in str(e) or "free on flash" in str(e) else 400)
    except RuntimeError as e:
        return _error(str(e), 409)
    except OSError as e:
        return _error("flash: %s" % e, 500)
    done = False
    try:
        left = size
        while left > 0:
            try:
                # Each chunk (at most 4 KiB) is garbage once written: nothing accumulates.
                chunk = await asyncio.wait_for(request.stream.read(min(_OTA_CHUNK_BYTES, left)), OTA_READ_TIMEOUT_S)
            except asyncio.TimeoutError:
                return _error("the upload stopped after %d of %d bytes" % (size - left, size), 408)
            if not chunk:
                break  # the sender closed early: finish() says "cut short"
            u.write(chunk)
            left -= len(chunk)
        version = u.finish()
        done = True
        return version
    except ValueError as e:
        log.warn("ota", "upload refused: %s", e)
        return _error(str(e), 400)
    except OSError as e:
        log.warn("ota", "upload: flash: %s", e)
        return _error("flash: %s" % e, 500)
    finally:
        if not done:
            u.abort()


async def _later(fn, version):
    import asyncio

    await asyncio.sleep(OTA_RESTART_DELAY_MS / 1000)
    fn(version)


def _page_file(path):
    from microdot import Response

    return Response.send_file(path, content_type="text/html; charset=utf-8")
