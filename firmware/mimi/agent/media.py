"""Photos and voice notes for a turn: fetched from Telegram to flash, given to the model,
then removed.

An inbound message may carry ``media``: ``[{"kind": "image"|"voice", "file_id", "size",
"mime", "cap"}]`` (``mimi.channels.tgupdate.media``). ``prepare`` runs at the start of
the turn, on the agent thread:
- each file is fetched (``getFile``, then the download, streamed to
  ``/data/state/media_<n>``: https://core.telegram.org/bots/api#getfile, "the file can
  then be downloaded via https://api.telegram.org/file/bot<token>/<file_path>"; at most its
  ``cap`` bytes). A local Bot API server in ``--local`` mode gives an absolute path on
  its own disk instead, which cannot be fetched: the user is told.
- an image is given to the model as an image block (``mimi.llm.wire`` streams it from
  flash into the request, base64 on the fly). The history keeps "[photo]" and the
  caption, not the image; ``clean`` removes the files after the turn. A provider known to
  have no vision (the ``deepseek`` preset: its API takes text only) gets no request: the
  user is told at once; elsewhere a 400 naming the image becomes the same plain answer
  (``mimi.agent.loop``).
- a voice note is transcribed where the provider has OpenAI's
  ``POST {base}/audio/transcriptions`` (https://platform.openai.com/docs/api-reference/
  audio/createTranscription: multipart ``file`` and ``model``, answer ``{"text"}``): the
  ``openai`` preset and ``custom`` servers. Its text goes to the model and the history,
  marked as a transcript. Other providers: the user is told the bot cannot listen there.
What the user reads is in ``mimi/texts.md`` (``## media_*``). RAM: one 1 KB buffer for
the download, then 768 bytes of file and their 1 KB of base64 at a time while the
request is written: a file is never whole in RAM. Flash: the files live for the turn.
The token is part of the download's path: nothing here logs a URL.
"""
import json

from micropython import const

from mimi import config, log
from mimi.llm import LLMError

_TRANSCRIBE_MODEL = const("gpt-4o-mini-transcribe")
_NO_VISION = const(" deepseek ")  # presets whose API takes no images
_MEDIA_DEADLINE_MS = const(60000)  # one download, whole
_files = []  # the media files of the turn under way


def prepare(msg, provider):
    """The turn's ``(text, images, note)`` for ``msg``: the text the model and the history
    get (placeholders, captions, transcripts), the images (``[{"path", "mime", "size"}]``
    for ``wire``), and ``note``, a reply for the user instead of a turn (no vision, no
    transcription, a failed download), or None."""
    from mimi import commands

    text = msg.get("text") or ""
    images = []
    heard = []
    for i, m in enumerate(msg.get("media") or ()):
        kind = m.get("kind")
        if kind == "image" and " %s " % provider.name in _NO_VISION:
            return text, [], commands.text("media_no_vision", provider.model)
        if kind == "voice" and (provider.protocol != "openai" or provider.name not in ("openai", "custom")):
            return text, [], commands.text("media_no_hearing", provider.name)
        path = "/data/state/media_%d" % i  # tools may read, not write, there
        try:
            size = fetch(m["file_id"], path, m.get("cap") or 0)
        except (OSError, ValueError) as e:
            log.warn("agent", "media: %s", e)
            clean()
            return text, [], commands.text("media_fetch_failed", "photo" if kind == "image" else "voice note",
                                           str(e)[:60])
        _files.append(path)
        if kind == "image":
            images.append({"path": path, "mime": m["mime"], "size": size})
        else:
            try:
                heard.append(transcribe(provider, path))
            except LLMError as e:
                clean()
                return text, [], commands.text("media_not_transcribed", e.user_message)
    lead = ""
    if images:
        lead = "[photo]" if len(images) == 1 else "[%d photos]" % len(images)
    for t in heard:
        lead += ("\n" if lead else "") + ("[voice note, transcribed:] " + t if t else "[voice note: silence]")
    return (lead + "\n" + text if text.strip() else lead) if lead else text, images, None


def clean():
    """Remove the turn's media files (after the turn; never raises)."""
    from mimi.storage import fs

    while _files:
        try:
            fs.remove(_files.pop())
        except (OSError, ValueError):
            pass


def fetch(file_id, path, cap):
    """Save Telegram file ``file_id`` as ``path`` (a device path under ``/data``); return
    its size in bytes. Raises ``OSError`` (network, an answer that is not the Bot API's,
    a file over ``cap`` bytes: "too big", the partial file removed) or ``ValueError``
    (Telegram refused the file id, or its path is a local server's)."""
    from mimi.net import http
    from mimi.storage import fs

    base, token = config.get("tg_api_base").rstrip("/"), config.get("tg_token")
    buf = bytearray(1024)
    r = http.request("POST", "%s/bot%s/getFile" % (base, token), {"Content-Type": "application/json"},
                     json.dumps({"file_id": file_id}), timeout_ms=config.TG_SEND_TIMEOUT_MS, buf=buf,
                     deadline_ms=config.TG_CALL_DEADLINE_MS)
    d = fp = size = None
    try:
        d = r.json()
        fp, size = d["result"]["file_path"], d["result"].get("file_size")
    except Exception:  # noqa: BLE001 - not JSON, an error answer, no path: the status says it
        pass
    if r.status != 200 or not isinstance(fp, str) or not fp or fp[0] == "/":  # "/": a local server's own disk
        raise ValueError("getFile: HTTP %d %s" % (r.status, d.get("description") if isinstance(d, dict) else ""))
    if type(size) is int and size > cap:
        raise OSError("too big")
    f = fs.open_write(path)
    try:  # straight to flash, at most cap + 1 bytes read: one more means too big
        r = http.start("GET", "%s/file/bot%s/%s" % (base, token, fp), timeout_ms=config.TG_SEND_TIMEOUT_MS,
                       deadline_ms=_MEDIA_DEADLINE_MS).finish(buf=buf, cap=cap, sink=f.write)
        if r.status != 200 or r.truncated:
            raise OSError("too big" if r.truncated else "download: HTTP %d" % r.status)
    except BaseException:
        f.close()
        fs.remove(path)
        raise
    f.close()
    return fs.size(path)


def transcribe(provider, path):
    """The text of the voice note ``path`` (OGG Opus, as Telegram sends them): ``POST
    {base}/audio/transcriptions`` as multipart/form-data, the file streamed from flash.
    Raises ``LLMError``."""
    import os

    from mimi.llm import common, init, wire
    from mimi.net import http
    from mimi.storage import fs

    b = "mimi-voice-%s" % "".join(["%02x" % c for c in os.urandom(8)])
    head = ('--%s\r\nContent-Disposition: form-data; name="model"\r\n\r\n%s\r\n--%s\r\nContent-Disposition: '
            'form-data; name="file"; filename="voice.ogg"\r\nContent-Type: audio/ogg\r\n\r\n') % (
        b, _TRANSCRIBE_MODEL, b)

    def body(w):
        w(head)
        f, _ = fs.open_read(path)
        try:
            buf = bytearray(768)
            mv = memoryview(buf)
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                w(mv[:n])
        finally:
            f.close()
        w("\r\n--%s--\r\n" % b)

    h = {"content-type": "multipart/form-data; boundary=" + b}
    if provider.headers.get("authorization"):
        h["authorization"] = provider.headers["authorization"]
    url = provider.base_url + "/audio/transcriptions"
    try:
        r = http.request("POST", url, h, body, config.LLM_TIMEOUT_MS, init())
    except OSError as e:
        raise LLMError("could not reach %s (%s)" % (http.parse_url(url)[1], str(e)[:60]), None, True)
    if r.status != 200:
        raise common._status_error(r, provider.name)
    try:
        t = r.json().get("text")
    except (ValueError, AttributeError):
        t = None
    if not isinstance(t, str):
        raise LLMError("%s sent a transcription without text" % provider.name, 200)
    return wire.repair_utf16(t).strip()
