"""Which ``Host`` and ``Origin`` the proxy's HTTP listener answers: a DNS-rebinding guard.

A web page can point a name it controls at 127.0.0.1 and have the browser send
requests to the listener, cookies or not: the page's name is then the request's
``Host`` (and ``Origin``). Nothing authenticates an MCP client here, so the
listener answers only the names it was started under — the listen address and
``localhost`` (loopback literals too when it listens on loopback or on every
address), with the
port — and those added with ``--allow-host``/``--allow-origin``. A refused
request is a typed problem (421 ``host_not_allowed``, 403 ``origin_not_allowed``)
given before any session exists or any upstream starts. A request without
``Origin`` (not a browser) is judged by ``Host`` alone.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signoff.errors import ConfigurationError

_NAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+")
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _host_form(host: str) -> str:
    """A host as it appears in a ``Host`` header (IPv6 literals in brackets)."""
    bare = host.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return host.lower()
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host_name(name: str) -> str:
    """An ``--allow-host`` value: a DNS name or IP literal, optionally ``:PORT``."""
    host, port = name, ""
    if name.startswith("["):
        host, _, rest = name.partition("]")
        host += "]"
        port = rest[1:] if rest.startswith(":") else rest
    elif name.count(":") == 1:
        host, _, port = name.partition(":")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ConfigurationError(f"--allow-host {name!r}: the port must be a number",
                                 code="invalid_allow_host")
    bare = host.strip("[]")
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        if host.startswith("[") or not _NAME.fullmatch(host) or len(host) > 253:
            raise ConfigurationError(f"--allow-host {name!r} is not a host name or address",
                                     code="invalid_allow_host") from None
    return _host_form(host) + (f":{port}" if port else "")


def check_origin(origin: str) -> str:
    """An ``--allow-origin`` value: ``http(s)://HOST[:PORT]``, nothing after it."""
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or "/" in rest:
        raise ConfigurationError(f"--allow-origin {origin!r} must be http(s)://HOST[:PORT]",
                                 code="invalid_allow_origin")
    return f"{scheme.lower()}://{check_host_name(rest)}"


@dataclass(frozen=True, slots=True)
class HostGuard:
    hosts: frozenset[str]  # exact Host header values answered
    origins: frozenset[str]  # exact Origin header values answered

    @classmethod
    def for_listen(cls, host: str, port: int, *, extra_hosts: Sequence[str] = (),
                   extra_origins: Sequence[str] = ()) -> HostGuard:
        names = [_host_form(host), "localhost"]
        if _is_loopback(host) or host.strip("[]") in ("0.0.0.0", "::"):  # noqa: S104
            names += list(_LOOPBACK_NAMES)  # reached on loopback too
        hosts: set[str] = set()
        for name in names:
            hosts.add(f"{name}:{port}")
            if port == 80:
                hosts.add(name)
        for given in extra_hosts:
            checked = check_host_name(given)
            hosts.add(checked if checked.rsplit("]", 1)[-1].count(":") else
                      f"{checked}:{port}")
        origins = {f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")}
        origins.update(check_origin(o) for o in extra_origins)
        return cls(frozenset(hosts), frozenset(origins))

    def refusal(self, headers: Sequence[tuple[str, str]]) -> tuple[int, str, str] | None:
        """``(status, code, detail)`` for a request this listener does not answer (a
        missing or repeated ``Host``, a repeated ``Origin`` included)."""
        hosts = [v.lower() for k, v in headers if k == "host"]
        if len(hosts) != 1 or hosts[0] not in self.hosts:
            shown = hosts[0] if len(hosts) == 1 else hosts
            return (421, "host_not_allowed", f"this MCP proxy does not answer Host {shown!r}; "
                    "start it with --allow-host NAME to add a name")
        origins = [v.lower() for k, v in headers if k == "origin"]
        if len(origins) > 1 or (origins and origins[0] not in self.origins):
            shown = origins[0] if len(origins) == 1 else origins
            return (403, "origin_not_allowed", f"this MCP proxy does not answer requests from "
                    f"Origin {shown!r}; start it with --allow-origin ORIGIN to add one")
        return None

    def wrap(self, app: Any) -> Any:
        """``app`` behind the guard: a refused request reaches nothing of it."""
        from signoff.server.problems import problem  # noqa: PLC0415 (only for --listen)

        guard = self

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            if scope.get("type") == "http":
                headers = [(k.decode("latin-1").lower(), v.decode("latin-1"))
                           for k, v in scope.get("headers", [])]
                refused = guard.refusal(headers)
                if refused is not None:
                    status, code, detail = refused
                    await problem(status, code, detail)(scope, receive, send)
                    return
            await app(scope, receive, send)

        return guarded
