"""The listening socket a server binds itself, before it announces anything.

``signoff serve`` and ``signoff mcp-proxy --listen`` bind first, then print where to go:
a busy port or a bad host is one typed line (``ListenError``, exit 2), never a
"serving at …" followed by a traceback. Binding here, not in uvicorn, is also what makes
``--port 0`` work and the printed URL name the port really bound.
"""

from __future__ import annotations

import errno
import socket

from signoff.errors import ListenError
from signoff.server.holders import port_holder

BACKLOG = 2048


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening; ``OSError`` as the system says."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: accepted sockets inherit it, and asyncio turns on
    # TCP_NODELAY only for sockets whose proto says TCP. Without it every response that
    # Starlette writes in two pieces (headers, then body) on a kept-alive connection waits
    # for the client's delayed ACK: about 40 ms on Linux, on every long-poll wake.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def listen(host: str, port: int, *, hint: str = "pass --port N, or --port 0 for a free one"
           ) -> socket.socket:
    """``bind``, with what went wrong as a ``ListenError``: ``port_in_use`` (naming the
    process holding the port where it can be found, and ``hint``), ``bad_host``,
    ``port_denied`` or ``listen_failed``."""
    where = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
    if _dotted_numbers(host):  # 999.1.1.1 is no name either: say so without a DNS query
        try:
            socket.inet_aton(host)
        except OSError:
            raise ListenError(f"{host!r} is not an IPv4 address (four numbers 0-255); pass "
                              "--host 127.0.0.1, or an address of this machine",
                              code="bad_host") from None
    try:
        return bind(host, port)
    except socket.gaierror as exc:
        raise ListenError(f"{host!r} is not an IP address or a name that resolves "
                          f"({exc.strerror}); pass --host 127.0.0.1, or an address of this "
                          "machine", code="bad_host") from None
    except (UnicodeError, ValueError, TypeError) as exc:  # a label over 63 characters, a NUL
        raise ListenError(f"{host!r} is not an IP address or a host name ({exc})",
                          code="bad_host") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            holder = port_holder(port)
            by = f" (by {holder})" if holder else ""
            raise ListenError(f"{where} is already in use{by} — {hint}",
                              code="port_in_use") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise ListenError(f"{host} is not an address of this machine, so {where} cannot "
                              "be listened on; pass --host 127.0.0.1 (this machine only) or "
                              "0.0.0.0 (every interface)", code="bad_host") from None
        if exc.errno == errno.EACCES:
            why = "ports below 1024 need privileges" if port < 1024 else "permission denied"
            raise ListenError(f"{where}: {why} — {hint}", code="port_denied") from None
        raise ListenError(f"cannot listen on {where}: {exc.strerror or exc}",
                          code="listen_failed") from None


def _dotted_numbers(host: str) -> bool:
    return bool(host) and all(part.isdigit() for part in host.split("."))
