"""Where a webhook may be sent: not into the server's own network unless the config says so.

A webhook is a POST the server makes to a URL an admin typed; pointed at
``169.254.169.254``, ``localhost`` or ``10.0.0.5`` it turns the server into a client of
its cloud's metadata service and its private network (SSRF). So unless ``[notify]
allow_private_targets = true``, a target is refused when it is loopback, link-local,
private (RFC 1918, ``fc00::/7``), shared (``100.64.0.0/10``), unspecified, multicast,
reserved — anything not globally routable — or one of this server's own addresses.

It is checked twice. When an endpoint is registered, from what the URL says (an
address, ``localhost``, this server's own name), without asking DNS. At every
delivery, after resolving the name once: every address the name resolves to must
pass, and the connection is made to the address that was checked, with the name kept
as the Host header and the TLS server name — a name that answers one address to the
check and another to the connection (DNS rebinding) gets nowhere.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from signoff.errors import ConfigurationError

CODE = "webhook_target_refused"
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class TargetRefused(ConfigurationError):
    """A webhook target inside the server's own network (``webhook_target_refused``)."""


def kind_of(address: Address) -> str | None:
    """Why ``address`` is no place to send a webhook (``None``: it is globally routable)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for refused, label in ((address.is_unspecified, "unspecified"),
                           (address.is_loopback, "loopback"),
                           (address.is_link_local, "link-local"),
                           (address.is_multicast, "multicast"),
                           (address in _SHARED, "shared (CGNAT)"),
                           (address.is_private, "private"),
                           (address.is_reserved, "reserved"),
                           (not address.is_global, "not globally routable")):
        if refused:
            return label
    return None


def literal(host: str) -> Address | None:
    """The address a host part spells, in any form a resolver takes without asking DNS
    (``127.0.0.1``, ``::1``, and the old ``127.1``, ``0x7f.1``, ``2130706433``)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def host_of(url: str) -> str:
    """The URL's host, lower-case, without brackets or a final dot."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    if not host:
        raise TargetRefused(f"{url!r} names no host", code=CODE)
    return host.rstrip(".").lower()


def check_url(url: str, *, allow_private: bool, own: Collection[str] = ()) -> None:
    """Registration: refuse a URL whose host is a refused address, ``localhost`` (or a
    name under it), or one of this server's own names. No DNS is asked here."""
    if allow_private:
        return
    host = host_of(url)
    why = None
    if host == "localhost" or host.endswith(".localhost"):
        why = "loopback (localhost)"
    elif host in {h.strip("[]").rstrip(".").lower() for h in own if h}:
        why = "this server's own name"
    else:
        address = literal(host)
        why = kind_of(address) if address is not None else None
    if why is not None:
        raise TargetRefused(f"webhook target {host} is {why}; set [notify] "
                            "allow_private_targets = true to allow it", code=CODE)


@dataclass(frozen=True, slots=True)
class Pinned:
    """A delivery's connection: the checked address to connect to, and the URL's own
    host to send as Host and as the TLS server name."""

    url: str  # the URL with the checked address in place of the name
    host_header: str
    server_name: str


@dataclass
class Targets:
    """The delivery-time check: resolve once, check every address, pin the connection.
    ``own_names``: this server's names (its public URL's host), read when first needed."""

    allow_private: bool = False
    own_names: Callable[[], Collection[str]] = tuple
    _own: frozenset[Address] | None = field(default=None, repr=False)

    def own_addresses(self) -> frozenset[Address]:
        """This server's addresses: its own names and this machine's, resolved once (a
        name that does not resolve adds nothing)."""
        if self._own is None:
            found: set[Address] = set()
            for name in {*self.own_names(), socket.gethostname()}:
                try:
                    found.update(resolve(name, 0))
                except OSError:
                    continue
            self._own = frozenset(found)
        return self._own

    def pin(self, url: str) -> Pinned:
        """Where to connect for ``url``: ``TargetRefused`` if the name resolves to any
        refused address (or with ``allow_private``, connect where it resolves)."""
        import httpx  # noqa: PLC0415 (the channel's client library; the rest needs none)

        parsed = httpx.URL(url)
        host = parsed.host.rstrip(".")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        check_url(url, allow_private=self.allow_private, own=self.own_names())
        try:
            addresses = resolve(host, port)
        except OSError as exc:
            raise TargetRefused(f"webhook target {host} does not resolve: {exc}",
                                code="webhook_target_unresolved") from None
        if not addresses:
            raise TargetRefused(f"webhook target {host} has no address",
                                code="webhook_target_unresolved")
        if not self.allow_private:
            own = self.own_addresses()
            for address in addresses:
                why = kind_of(address) or ("this server's own address"
                                           if address in own else None)
                if why is not None:
                    raise TargetRefused(f"webhook target {host} resolves to {address}, "
                                        f"{why}; set [notify] allow_private_targets = true "
                                        "to allow it", code=CODE)
        chosen = str(addresses[0])
        netloc = parsed.netloc.decode("ascii")
        return Pinned(url=str(parsed.copy_with(host=chosen)), host_header=netloc,
                      server_name=host)


def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order (an address literal:
    itself, no DNS)."""
    found = literal(host)
    if found is not None:
        return [found]
    infos = socket.getaddrinfo(host, port or None, type=socket.SOCK_STREAM)
    seen: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in seen:
            seen.append(address)
    return seen
