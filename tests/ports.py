"""A free loopback port for a server a test starts (CPython side only)."""
import socket


def free_port(kind=socket.SOCK_STREAM):
    """A TCP (or, with ``socket.SOCK_DGRAM``, UDP) port free on 127.0.0.1 now."""
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
