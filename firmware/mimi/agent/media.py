"""Photos and voice notes for a turn: fetched to flash, given to the model, then removed.

An inbound message may carry ``media``: ``[{"kind": "image"|"voice", "file_id", "size",
"mime"}]`` (``mimi.channels.tgupdate.media``). ``prepare`` runs at the start of the turn,
on the agent thread:
- an image is saved to ``/data/state/media_<n>`` (``tgfile.fetch``, capped at
  ``TG_IMAGE_MAX_BYTES``) and given to the model as an image block (``mimi.llm.wire``
  streams it from flash into the request, base64 on the fly). The history keeps
  "[photo]" and the caption, not the image; ``clean`` removes the files after the turn.
  A provider known to have no vision (the ``deepseek`` preset: its API takes text only)
  gets no request: the user is told at once. Elsewhere a 400 naming the image becomes the
  same plain answer (``no_vision``).
- a voice note is transcribed where the provider has OpenAI's
  ``POST {base}/audio/transcriptions`` (https://platform.openai.com/docs/api-reference/
  audio/createTranscription: multipart ``file`` and ``model``, answer ``{"text"}``): the
  ``openai`` preset and ``custom`` servers. Its text goes to the model and the history,
  marked as a transcript. Other providers: the user is told the bot cannot listen there.
RAM: a 1 KB download buffer, then 768 bytes of file and their 1 KB of base64 at a time
while the request is written: the image is never whole in RAM. Flash: the files live
only for the turn.
"""
from micropython import const

from mimi import config, log
from mimi.llm import LLMError, pick

_MEDIA_DIR = const("/data/state/")  # tools may read, not write, here
_TRANSCRIBE_MODEL = const("gpt-4o-mini-transcribe")
_NO_VISION = const(" deepseek ")  # presets whose API takes no images
_TAG = const("media")
_MSG = const("|see %s cannot look at images. Describe it in words, or switch to a model that can (/provider, "
             "/model).|hear I cannot listen to voice notes with %s (it has no transcription service): please "
             "type it, or use the openai provider.|fail I could not fetch that %s from Telegram (%s): please send it "
             "again.|photo [photo]|voice [voice note, transcribed:]|empty [voice note: nothing could be heard]|")
_files = []  # the media files of the turn under way


def prepare(msg, provider):
    """The turn's ``(text, images, note)`` for ``msg``: the text the model and the history
    get (placeholders, captions, transcripts), the images (``[{"path", "mime", "size"}]``
    for ``wire``), and ``note``, a reply for the user instead of a turn (no vision, no
    transcription, a failed download), or None."""
    from mimi.channels import tgfile, tgupdate

    text = msg.get("text") or ""
    images = []
    heard = []
    for i, m in enumerate(msg.get("media") or ()):
        kind = m.get("kind")
        if kind == "image":
            if " %s " % provider.name in _NO_VISION:
                return text, [], pick(_MSG, "see") % provider.model
            cap = tgupdate.TG_IMAGE_MAX_BYTES
        elif kind == "voice":
            if provider.protocol != "openai" or provider.name not in ("openai", "custom"):
                return text, [], pick(_MSG, "hear") % provider.name
            cap = tgupdate.TG_VOICE_MAX_BYTES
        else:
            continue
        path = "%smedia_%d" % (_MEDIA_DIR, i)
        try:
            size = tgfile.fetch(m["file_id"], path, cap)
        except (OSError, ValueError) as e:
            log.warn(_TAG, "fetch: %s", e)
            clean()
            return text, [], pick(_MSG, "fail") % ("photo" if kind == "image" else "voice note", str(e)[:60])
        _files.append(path)
        if kind == "image":
            images.append({"path": path, "mime": m.get("mime") or "image/jpeg", "size": size})
        else:
            try:
                heard.append(transcribe(provider, path, m.get("mime") or "audio/ogg"))
            except LLMError as e:
                clean()
                return text, [], "Sorry, I could not transcribe that voice note: %s." % e.user_message
    lead = ""
    if images:
        lead = pick(_MSG, "photo") if len(images) == 1 else "[%d photos]" % len(images)
    for t in heard:
        lead += ("\n" if lead else "") + (pick(_MSG, "voice") + " " + t if t.strip() else pick(_MSG, "empty"))
    return (lead + "\n" + text if text.strip() else lead) if lead else text, images, None


def clean():
    """Remove the turn's media files (after the turn; never raises)."""
    from mimi.storage import fs

    while _files:
        try:
            fs.remove(_files.pop())
        except (OSError, ValueError):
            pass


def no_vision(e, provider):
    """The answer for ``LLMError`` ``e`` on a turn with images: "cannot look at images"
    when the server refused the request (400) naming an image, else None."""
    m = (e.user_message or "").lower()
    if e.status == 400 and ("image" in m or "vision" in m or "multimodal" in m):
        return pick(_MSG, "see") % provider.model
    return None


def transcribe(provider, path, mime):
    """The text of the audio file ``path``: ``POST {base}/audio/transcriptions`` as
    multipart/form-data, the file streamed from flash. Raises ``LLMError``."""
    from mimi import seam
    from mimi.llm import common, init
    from mimi.net import http
    from mimi.storage import fs

    b = "mimi%08x" % seam.ticks_ms()
    head = ('--%s\r\nContent-Disposition: form-data; name="model"\r\n\r\n%s\r\n--%s\r\nContent-Disposition: '
            'form-data; name="file"; filename="voice.%s"\r\nContent-Type: %s\r\n\r\n') % (
        b, _TRANSCRIBE_MODEL, b, "ogg" if "ogg" in mime else "bin", mime)
    tail = "\r\n--%s--\r\n" % b

    def body(w):
        w(head)
        f, _ = fs.open_read(path)
        try:
            piece = bytearray(768)
            mv = memoryview(piece)
            while True:
                n = f.readinto(piece)
                if not n:
                    break
                w(mv[:n])
        finally:
            f.close()
        w(tail)

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
    from mimi.llm import wire

    return wire.repair_utf16(t).strip()
