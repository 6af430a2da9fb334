"""Telegram files to flash: ``getFile`` then the download, streamed (the agent thread
calls this for a photo or voice note it is about to give the model).

https://core.telegram.org/bots/api#getfile: ``getFile(file_id)`` answers a ``File`` with
``file_path``, valid for at least an hour; the file is then
``<tg_api_base>/file/bot<token>/<file_path>`` ("Bots can download files of up to 20 MB"),
answered with its bytes. The body goes to flash piece by piece through one small buffer,
never whole in RAM. The token is part of the path: nothing here logs a URL. (A local Bot
API server in ``--local`` mode gives an absolute ``file_path`` on its own disk instead,
which cannot be fetched over HTTP: that is a clear error.)
"""
import json

from micropython import const

from mimi import config
from mimi.storage import fs

_TG_FILE_PIECE_BYTES = const(1024)  # download buffer; also where getFile's answer is read
_TG_FILE_DEADLINE_MS = const(60000)  # the whole download


def fetch(file_id, path, cap_bytes):
    """Save Telegram file ``file_id`` as ``path`` (a device path under ``/data``); return
    its size in bytes. Raises ``OSError`` (network, an answer that is not the Bot API's,
    a file over ``cap_bytes``: ``"too big"``, the partial file removed) or ``ValueError``
    (Telegram refused the file id, or its path is a local server's)."""
    from mimi.net import http

    base = "%s/%%s%s/" % (config.get("tg_api_base").rstrip("/"), config.get("tg_token"))
    buf = bytearray(_TG_FILE_PIECE_BYTES)
    r = http.request("POST", base % "bot" + "getFile", {"Content-Type": "application/json"},
                     json.dumps({"file_id": file_id}), timeout_ms=config.TG_SEND_TIMEOUT_MS, buf=buf,
                     deadline_ms=config.TG_CALL_DEADLINE_MS)
    try:
        d = r.json()
    except ValueError:
        raise OSError("getFile: not the Bot API's answer (HTTP %d)" % r.status)
    res = d.get("result") if isinstance(d, dict) else None
    if r.status != 200 or not isinstance(res, dict):
        raise ValueError("getFile: %s" % (d.get("description") if isinstance(d, dict) else r.status))
    fp = res.get("file_path")
    if not isinstance(fp, str) or not fp or fp[0] == "/":
        raise ValueError("getFile gave no downloadable path")
    size = res.get("file_size")
    if type(size) is int and size > cap_bytes:
        raise OSError("too big")
    n = [0]
    f = fs.open_write(path)
    try:
        def sink(piece):
            n[0] += len(piece)
            if n[0] > cap_bytes:
                raise OSError("too big")
            f.write(piece)

        r = http.start("GET", base % "file/bot" + fp, timeout_ms=config.TG_SEND_TIMEOUT_MS,
                       deadline_ms=_TG_FILE_DEADLINE_MS).finish(buf=buf, sink=sink)
        if r.status != 200:
            raise OSError("download: HTTP %d" % r.status)
    except BaseException:
        f.close()
        fs.remove(path)
        raise
    f.close()
    return n[0]
