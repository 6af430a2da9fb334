"""Test-time certificates (host only): a throwaway CA and a ``localhost`` server cert.

Made fresh for each test session with the ``cryptography`` package and written to a temp
folder; no private key is ever committed.
"""
import datetime
import os
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make(folder=None, cn="mimi test CA", host="localhost", not_before_days=-1):
    """Write ``ca.pem``, ``server.pem`` and ``server.key`` into ``folder`` (a new temp folder
    when None) and return ``{"dir", "ca", "cert", "key"}`` (paths).

    ``not_before_days``: when the server certificate starts being valid, relative to now
    (a positive value makes one from the future).
    """
    folder = folder or tempfile.mkdtemp(prefix="mimi-certs-")
    now = datetime.datetime.now(datetime.timezone.utc)
    day = datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - day).not_valid_after(now + 30 * day)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(host)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + not_before_days * day).not_valid_after(now + 20 * day)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    out = {"dir": folder, "ca": os.path.join(folder, "ca.pem"),
           "cert": os.path.join(folder, "server.pem"), "key": os.path.join(folder, "server.key")}
    with open(out["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(out["cert"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(out["key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return out
