"""Where and how ``signoff serve`` listens: from flags, then the environment, then
``signoff.toml``'s ``[server]`` table, then defaults.

Hosts and origins are allow-lists because a server on 127.0.0.1 is still reachable
from any web page the approver has open: a DNS-rebinding page arrives with a
foreign ``Host``, a cross-site form with a foreign ``Origin``; both are refused.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from signoff.errors import ConfigurationError
from signoff.kernel.sessions import SessionLimits
from signoff.policy.config import parse_duration

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_KEYS = {"host", "port", "public_url", "allowed_hosts", "allowed_origins", "long_poll_max",
         "login_link_ttl", "session_idle", "session_max"}
# [server] key → environment variable, for the sign-in limits (durations: "10m", "8h", 30).
_LIMITS = {"login_link_ttl": "SIGNOFF_LOGIN_LINK_TTL", "session_idle": "SIGNOFF_SESSION_IDLE",
           "session_max": "SIGNOFF_SESSION_MAX"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    public_url: str | None = None  # how approvers reach us, if not http://host:port
    allowed_hosts: tuple[str, ...] = ()  # extra Host names (behind a proxy, say)
    allowed_origins: tuple[str, ...] = ()  # extra origins allowed to POST (no CORS either way)
    long_poll_max: float = 60.0  # the longest a GET /calls/{id}?wait= may hold
    secure_cookies: bool = False  # set by an https public_url
    limits: SessionLimits = field(default_factory=SessionLimits)  # login links, sessions
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def host_names(self) -> frozenset[str]:
        """Every Host header value (without port) this server answers to."""
        names = {self.host, *self.allowed_hosts}
        if self.host in LOOPBACK or self.host in ("0.0.0.0", "::"):  # noqa: S104
            names.update(LOOPBACK)
        if self.public_url:
            names.add(_host_of(self.public_url))
        return frozenset(n.lower() for n in names)

    def with_port(self, port: int) -> ServerSettings:
        return replace(self, port=port)


def _host_of(url: str) -> str:
    rest = url.split("://", 1)[-1].split("/", 1)[0]
    if rest.startswith("["):
        return rest[: rest.index("]") + 1]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def load_settings(*, policy_path: str | None = None, host: str | None = None,
                  port: int | None = None, public_url: str | None = None,
                  environ: Mapping[str, str] | None = None) -> ServerSettings:
    """Flags beat ``SIGNOFF_HOST``/``SIGNOFF_PORT``/``SIGNOFF_PUBLIC_URL``, which beat
    ``[server]`` in the policy file. Unknown ``[server]`` keys are refused by name."""
    env = os.environ if environ is None else environ
    table: dict[str, Any] = {}
    if policy_path and Path(policy_path).is_file():
        try:
            with open(policy_path, "rb") as fh:
                table = dict(tomllib.load(fh).get("server", {}))
        except (OSError, tomllib.TOMLDecodeError):
            table = {}  # loading the policy itself reports it, with the line
    if not isinstance(table, dict):
        raise ConfigurationError(f"{policy_path}: [server] must be a table",
                                 code="policy_invalid")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigurationError(f"{policy_path}: [server]: unknown key {unknown[0]!r}",
                                 code="policy_invalid")
    chosen_port = port if port is not None else _int(env.get("SIGNOFF_PORT"), "SIGNOFF_PORT")
    where = f"{policy_path}: [server]"
    url = public_url or env.get("SIGNOFF_PUBLIC_URL") or _typed(table, "public_url", str, where)
    table_port = _typed(table, "port", int, where)
    settings = ServerSettings(
        host=host or env.get("SIGNOFF_HOST") or _typed(table, "host", str, where)
        or DEFAULT_HOST,
        port=chosen_port if chosen_port is not None else
        (DEFAULT_PORT if table_port is None else table_port),
        public_url=str(url) if url else None,
        allowed_hosts=tuple(_typed(table, "allowed_hosts", list, where) or ()),
        allowed_origins=tuple(o.rstrip("/")
                              for o in _typed(table, "allowed_origins", list, where) or ()),
        long_poll_max=float(_typed(table, "long_poll_max", float, where) or 60.0),
        secure_cookies=bool(url and str(url).startswith("https://")),
        limits=_limits(table, env, policy_path),
    )
    if url is not None and not str(url).startswith(("http://", "https://")):
        raise ConfigurationError(f"public URL {url!r} must start with http:// or https://",
                                 code="invalid_public_url")
    if not 0 <= settings.port <= 65535:
        raise ConfigurationError(f"port {settings.port} is not a TCP port", code="invalid_port")
    return settings


_KINDS: dict[type, str] = {int: "a whole number", str: "a string", float: "a number",
                          list: "a list of strings"}


def _typed(table: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """``table[key]`` if it is of ``kind`` (``None`` if absent); else a typed error naming
    the key — ``port = "abc"`` must not reach the socket as a traceback."""
    if key not in table:
        return None
    value = table[key]
    ok = (isinstance(value, kind) and not isinstance(value, bool)) or (
        kind is float and isinstance(value, int) and not isinstance(value, bool))
    if kind is list:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind is float and ok and not value > 0:
        ok = False
    if not ok:
        raise ConfigurationError(f"{where}: {key} = {value!r} is not {_KINDS[kind]}"
                                 + (" above 0" if kind is float else ""),
                                 code="invalid_port" if key == "port" else "policy_invalid")
    return value


def _limits(table: Mapping[str, Any], env: Mapping[str, str],
            policy_path: str | None) -> SessionLimits:
    """``SIGNOFF_LOGIN_LINK_TTL`` / ``SIGNOFF_SESSION_IDLE`` / ``SIGNOFF_SESSION_MAX``, else
    ``[server]``'s ``login_link_ttl`` / ``session_idle`` / ``session_max``, else defaults."""
    defaults = SessionLimits()
    chosen: dict[str, float] = {}
    for key, variable in _LIMITS.items():
        value: Any = env.get(variable) or table.get(key)
        if value is None:
            continue
        where = variable if env.get(variable) else f"{policy_path}: [server] {key}"
        if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
            value = float(value)
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise ConfigurationError(f"{where}: {exc}", code="invalid_duration") from None
        if seconds is None:
            raise ConfigurationError(f"{where}: must be a duration, not 'never'",
                                     code="invalid_duration")
        chosen[key] = seconds
    return SessionLimits(link_ttl=chosen.get("login_link_ttl", defaults.link_ttl),
                         idle=chosen.get("session_idle", defaults.idle),
                         lifetime=chosen.get("session_max", defaults.lifetime))


def _int(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"{name}={value!r} is not a number",
                                 code="invalid_port") from None
