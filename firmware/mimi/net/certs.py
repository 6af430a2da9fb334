"""The TLS trust store: PEM files in ``/data/certs``, one certificate in RAM at a time.

``/data/certs/ca.pem`` is the bundle shipped in ``spiffs_seed/certs`` (roots for
api.anthropic.com, api.openai.com, api.telegram.org; README "LLM providers and HTTP");
the owner may drop more ``*.pem`` files beside it for a self-hosted server. The unix
port's mbedTLS cannot parse PEM, so each certificate is decoded to DER here and handed
to ``seam.tls_context`` one by one. One context is built on first use and shared by
every thread's connections (``seam.Conn`` keeps handshakes from drawing on its random
generator at once where the runtime needs that); ``reset()`` after adding a file. Its
parsed roots live in internal RAM on the board, about 2.5 KB each (docs/heap.md,
"Internal RAM"): one store, not one per thread.
"""
import binascii

from micropython import const

from mimi import config, log, seam
from mimi.storage import fs

_TAG = const("tls")
_LINE_MAX = const(256)  # PEM lines are 64 characters; longer ones are not PEM
_CERT_B64_MAX = const(8192)  # base64 of one certificate (a 4096-bit root is about 1.9 KB)

_ctx = []  # the context, once built
_build = seam.allocate_lock()  # two threads' first requests build it once


def reset():
    """Forget the built context (after a certificate file was added or removed)."""
    del _ctx[:]


def files(folder=config.CERTS_DIR):
    """Device paths of the PEM files to trust: ``ca.pem`` first, then the others sorted."""
    out = []
    try:
        for name, is_dir, _ in fs.listdir(folder):
            if not is_dir and name.endswith(".pem"):
                out.append((name != "ca.pem", folder + "/" + name))
    except OSError:
        pass
    out.sort()
    for i in range(len(out)):
        out[i] = out[i][1]
    return out


def ders(paths):
    """Yield each certificate in the PEM files ``paths`` as DER bytes.

    Lines outside ``BEGIN/END CERTIFICATE`` are ignored (comments, labels). A broken block
    is skipped with a log line naming the file; nothing else is lost.
    """
    for path in paths:
        try:
            f, _ = fs.open_read(path)
        except OSError as e:
            log.warn(_TAG, "%s: %s", path, e)
            continue
        try:
            parts = None
            while True:
                line = f.readline(_LINE_MAX)
                if not line:
                    break
                line = line.strip()
                if line.startswith(b"-----BEGIN"):  # CERTIFICATE (anything else fails to load, counted)
                    parts, size = [], 0
                elif parts is None or not line:
                    pass
                elif line.startswith(b"-----END "):
                    try:
                        der = binascii.a2b_base64(b"".join(parts))
                    except ValueError:
                        der = None
                    parts = None
                    if der:
                        yield der
                    else:
                        log.warn(_TAG, "%s: bad", path)
                else:
                    size += len(line)
                    parts.append(line)
                    if size > _CERT_B64_MAX:
                        log.warn(_TAG, "%s: bad", path)
                        parts = None
        finally:
            f.close()


def context():
    """The verifying TLS context all threads share, built on its first use from ``files()``.

    Raises ``seam.TLSError`` when no certificate could be loaded (then no HTTPS request
    can be verified: the message says where the bundle belongs).
    """
    if _ctx:
        return _ctx[0]
    with _build:
        if not _ctx:
            ctx, n, bad = seam.tls_context(ders(files()))
            if not n:
                raise seam.TLSError("no CA certificates in %s" % config.CERTS_DIR)
            log.info(_TAG, "%d of %d CA certificates loaded", n, n + bad)
            _ctx.append(ctx)
    return _ctx[0]
