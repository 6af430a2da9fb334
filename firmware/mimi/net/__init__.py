"""Networking: a small HTTP/1.1 client (``http``) and the TLS trust store (``certs``)."""
