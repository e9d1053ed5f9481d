"""The ``[notify]`` table of ``signoff.toml``: channels, what each is told, and retries.

A notification setting with a typo must not load any more than a policy rule
with one: unknown keys, wrong types, an unknown event type or risk, a secret
that is not a Standard Webhooks secret — each is a ``ConfigurationError``
naming the key. Secrets are best given by environment variable
(``secret_env``); a secret written in the file works too.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standardwebhooks.webhooks import Webhook

from signoff.errors import ConfigurationError
from signoff.model import Risk
from signoff.notify.targets import TargetRefused
from signoff.notify.targets import check_url as check_target
from signoff.policy.config import parse_duration

EVENT_TYPES = ("request.created", "request.decided", "request.expired", "request.cancelled",
               "request.invalidated", "request.executed", "request.failed", "request.unknown",
               "request.reminder", "request.escalated", "request.edited")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """What a channel is told: each list empty means everything."""

    events: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # glob patterns (fnmatch), on the tool's policy name
    threads: tuple[str, ...] = ()  # glob patterns on the thread id

    def wants(self, event_type: str, *, risk: str, tool: str, thread_id: str | None) -> bool:
        if self.events and event_type not in self.events:
            return False
        if self.risks and risk not in self.risks:
            return False
        if self.tools and not any(fnmatch.fnmatchcase(tool, p) for p in self.tools):
            return False
        return not self.threads or (thread_id is not None and any(
            fnmatch.fnmatchcase(thread_id, p) for p in self.threads))

    def to_dict(self) -> dict[str, list[str]]:
        return {"events": list(self.events), "risks": list(self.risks),
                "tools": list(self.tools), "threads": list(self.threads)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookEndpoint:
    name: str
    url: str
    secret: str = field(repr=False)
    filters: Filters = Filters()
    source: str = "config"  # "config" (signoff.toml) or "api" (registered by an admin)

    @property
    def channel(self) -> str:
        return f"webhook:{self.name}"

    def to_dict(self) -> dict[str, Any]:
        """What an admin is shown: never the secret."""
        return {"name": self.name, "url": self.url, "source": self.source,
                "channel": self.channel, **self.filters.to_dict()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    base: float = 5.0  # the first retry waits about this long; each next one twice as long
    cap: float = 3600.0  # no wait is longer
    max_attempts: int = 12  # then the delivery is dead (``signoff webhooks replay``)
    timeout: float = 10.0  # one attempt

    def delay(self, attempts: int, jitter: float) -> float:
        """The wait after ``attempts`` failed attempts; ``jitter`` in [0, 1) spreads
        retries of many deliveries (full jitter over the upper half)."""
        wait: float = min(self.cap, self.base * 2.0 ** max(0, attempts - 1))
        return wait * (0.5 + jitter / 2)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackConfig:
    """``[notify.slack]``: one channel of interactive approval messages."""

    token: str = field(repr=False)  # the bot token (chat:write)
    signing_secret: str = field(repr=False)  # verifies interaction callbacks
    channel: str  # the conversation id requests are posted to
    users: Mapping[str, str]  # Slack user id → signoff identity
    base_url: str = "https://slack.com/api/"
    team_id: str | None = None  # interactions from another workspace are refused
    filters: Filters = Filters()

    @property
    def channel_name(self) -> str:
        return "slack"


@dataclass(frozen=True, slots=True, kw_only=True)
class SmtpConfig:
    """``[notify.smtp]``: the mail server every email channel sends through."""

    host: str
    port: int = 587
    security: str = "starttls"  # starttls | ssl | none
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None  # trust this CA (a private mail server) besides the system's
    sender: str = "signoff@localhost"


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailList:
    """``[notify.email.<name>]``: who is mailed, about what, one by one or as a digest."""

    name: str
    to: tuple[str, ...]
    filters: Filters = Filters(events=("request.created",))
    digest: float | None = None  # seconds: one message per period instead of one per event

    @property
    def channel(self) -> str:
        return f"email:{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    """``[[notify.escalation]]``: for the requests it matches (the first rule that does),
    a reminder after ``remind_after`` to every channel that hears reminders, and after
    ``escalate_after`` a ``request.escalated`` event to the channels of ``escalate_to``."""

    filters: Filters = Filters()
    remind_after: float | None = None
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConfig:
    webhooks: tuple[WebhookEndpoint, ...] = ()
    slack: SlackConfig | None = None
    smtp: SmtpConfig | None = None
    email: tuple[EmailList, ...] = ()
    escalation: tuple[Escalation, ...] = ()
    retry: Retry = Retry()
    # Webhooks may target loopback, private, link-local and this server's own addresses
    # (``signoff.notify.targets``); off by default.
    allow_private_targets: bool = False


def load_notify(policy_path: str | None, *, environ: Mapping[str, str] | None = None,
                read_secrets: bool = True) -> NotifyConfig:
    """The ``[notify]`` table of the policy file (nothing to notify without one).
    ``read_secrets=False``: for commands that list or manage endpoints but send nothing — the
    secrets' environment variables need not be set, and no secret is read."""
    if not policy_path or not Path(policy_path).is_file():
        return NotifyConfig()
    try:
        with open(policy_path, "rb") as fh:
            table = tomllib.load(fh).get("notify", {})
    except (OSError, tomllib.TOMLDecodeError):
        return NotifyConfig()  # loading the policy itself reports it, with the line
    return parse_notify(table, where=f"{policy_path}: [notify]", environ=environ,
                        read_secrets=read_secrets)


def parse_notify(table: object, *, where: str = "[notify]",
                 environ: Mapping[str, str] | None = None,
                 read_secrets: bool = True) -> NotifyConfig:
    env = os.environ if environ is None else environ
    t = _table(table, where)
    _known(t, {"retry_base", "retry_max", "max_attempts", "timeout", "webhooks", "slack",
               "smtp", "email", "escalation", "allow_private_targets"}, where)
    allow_private = t.get("allow_private_targets", False)
    if not isinstance(allow_private, bool):
        raise ConfigurationError(f"{where}: allow_private_targets must be true or false",
                                 code="policy_invalid")
    retry = Retry(base=_duration(t, "retry_base", 5.0, where),
                  cap=_duration(t, "retry_max", 3600.0, where),
                  max_attempts=_count(t, "max_attempts", 12, where),
                  timeout=_duration(t, "timeout", 10.0, where))
    hooks = _table(t.get("webhooks", {}), f"{where}.webhooks")
    slack = None
    if "slack" in t:
        slack = _slack(t["slack"], f"{where}.slack", env, read_secrets)
    smtp = _smtp(t["smtp"], f"{where}.smtp", env, read_secrets) if "smtp" in t else None
    lists = _table(t.get("email", {}), f"{where}.email")
    email = tuple(_email(name, raw, f"{where}.email.{name}") for name, raw in lists.items())
    if email and smtp is None:
        raise ConfigurationError(f"{where}: email lists need [notify.smtp] (host, port, …)",
                                 code="invalid_email")
    rules = t.get("escalation", [])
    if not isinstance(rules, list):
        raise ConfigurationError(f"{where}: escalation must be [[notify.escalation]] tables",
                                 code="policy_invalid")
    escalation = tuple(_escalation(raw, f"{where}.escalation[{i}]", slack is not None,
                                   {e.name for e in email}) for i, raw in enumerate(rules))
    return NotifyConfig(retry=retry, slack=slack, smtp=smtp, email=email,
                        escalation=escalation, allow_private_targets=allow_private,
                        webhooks=tuple(
        _webhook(name, raw, f"{where}.webhooks.{name}", env, read_secrets,
                 allow_private=allow_private)
        for name, raw in hooks.items()))


def check_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(f"{where}: {name!r} is not a name (letters, digits, '_', "
                                 "'.', '-'; up to 64)", code="invalid_webhook")
    return name


def check_url(url: object, where: str) -> str:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) \
            or any(c.isspace() or ord(c) < 32 for c in url) or len(url) > 2000:
        raise ConfigurationError(f"{where}: url must be an http:// or https:// URL",
                                 code="invalid_webhook")
    return url


def new_secret() -> str:
    """A fresh Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def check_secret(secret: object, where: str) -> str:
    """A Standard Webhooks secret (``whsec_`` and base64 of 24 to 64 bytes)."""
    try:
        if not isinstance(secret, str) or not secret.startswith("whsec_"):
            raise ValueError
        key = Webhook(secret)._whsecret
        if not 24 <= len(key) <= 64:
            raise ValueError
    except Exception:
        raise ConfigurationError(f"{where}: the secret must be 'whsec_' and the base64 of "
                                 "24 to 64 random bytes (signoff webhooks add makes one)",
                                 code="invalid_webhook") from None
    return secret


def parse_filters(raw: Mapping[str, Any], where: str) -> Filters:
    events = _strings(raw, "events", where)
    for event in events:
        if event not in EVENT_TYPES:
            raise ConfigurationError(f"{where}: unknown event {event!r} (one of "
                                     f"{', '.join(EVENT_TYPES)})", code="invalid_webhook")
    risks = _strings(raw, "risks", where)
    for risk in risks:
        if risk not in {r.value for r in Risk}:
            raise ConfigurationError(f"{where}: unknown risk {risk!r}", code="invalid_webhook")
    return Filters(events=events, risks=risks, tools=_strings(raw, "tools", where),
                   threads=_strings(raw, "threads", where))


def _webhook(name: str, raw: object, where: str, env: Mapping[str, str], read_secrets: bool,
             *, allow_private: bool) -> WebhookEndpoint:
    check_name(name, where)
    t = _table(raw, where)
    _known(t, {"url", "secret", "secret_env", "events", "risks", "tools", "threads"}, where)
    if ("secret" in t) == ("secret_env" in t):
        raise ConfigurationError(f"{where}: give exactly one of secret_env (an environment "
                                 "variable's name) or secret", code="invalid_webhook")
    if not read_secrets:
        secret = ""
    elif "secret_env" in t:
        variable = t["secret_env"]
        if not isinstance(variable, str) or variable not in env:
            raise ConfigurationError(f"{where}: secret_env = {variable!r}: no such environment "
                                     "variable is set", code="invalid_webhook")
        secret = env[variable]
    else:
        secret = t["secret"]
    url = check_url(t.get("url"), where)
    try:
        check_target(url, allow_private=allow_private)
    except TargetRefused as exc:
        raise TargetRefused(f"{where}: {exc.message}", code=exc.code) from None
    return WebhookEndpoint(name=name, url=url,
                           secret=check_secret(secret, where) if read_secrets else "",
                           filters=parse_filters(t, where))


def _slack(raw: object, where: str, env: Mapping[str, str], read_secrets: bool) -> SlackConfig:
    t = _table(raw, where)
    _known(t, {"token_env", "signing_secret_env", "channel", "users", "base_url", "team_id",
               "risks", "tools", "threads"}, where)
    token = _env_secret(t, "token_env", where, env) if read_secrets else ""
    signing = _env_secret(t, "signing_secret_env", where, env) if read_secrets else ""
    channel = t.get("channel")
    if not isinstance(channel, str) or not channel.strip():
        raise ConfigurationError(f"{where}: channel must name the conversation (its id, "
                                 "e.g. C0123456789)", code="invalid_slack")
    users = _table(t.get("users", {}), f"{where}.users")
    for slack_user, name in users.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{where}.users: {slack_user} must map to a signoff "
                                     "user's name", code="invalid_slack")
    base_url = t.get("base_url", "https://slack.com/api/")
    check_url(base_url, where)
    team_id = t.get("team_id")
    if team_id is not None and not (isinstance(team_id, str) and team_id):
        raise ConfigurationError(f"{where}: team_id must be a string", code="invalid_slack")
    filters = parse_filters(t, where)
    return SlackConfig(token=token, signing_secret=signing, channel=channel,
                       users=dict(users), base_url=base_url.rstrip("/") + "/", team_id=team_id,
                       filters=filters)


def _smtp(raw: object, where: str, env: Mapping[str, str], read_secrets: bool) -> SmtpConfig:
    t = _table(raw, where)
    _known(t, {"host", "port", "security", "username_env", "password_env", "ca_file", "from"},
           where)
    host = t.get("host")
    if not isinstance(host, str) or not host.strip():
        raise ConfigurationError(f"{where}: host must name the mail server",
                                 code="invalid_email")
    security = t.get("security", "starttls")
    if security not in ("starttls", "ssl", "none"):
        raise ConfigurationError(f"{where}: security must be starttls, ssl or none",
                                 code="invalid_email")
    port = t.get("port", {"starttls": 587, "ssl": 465, "none": 25}[security])
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ConfigurationError(f"{where}: port must be a TCP port", code="invalid_email")
    username = password = None
    if read_secrets and "username_env" in t:
        username = _env_secret(t, "username_env", where, env, code="invalid_email")
    if read_secrets and "password_env" in t:
        password = _env_secret(t, "password_env", where, env, code="invalid_email")
    sender = t.get("from", "signoff@localhost")
    ca_file = t.get("ca_file")
    if not isinstance(sender, str) or "@" not in sender or (
            ca_file is not None and not isinstance(ca_file, str)):
        raise ConfigurationError(f"{where}: from must be an address; ca_file a path",
                                 code="invalid_email")
    return SmtpConfig(host=host, port=port, security=security, username=username,
                      password=password, ca_file=ca_file, sender=sender)


def _escalation(raw: object, where: str, slack: bool, lists: set[str]) -> Escalation:
    t = _table(raw, where)
    _known(t, {"risks", "tools", "threads", "remind_after", "escalate_after", "escalate_to"},
           where)
    filters = parse_filters(t, where)
    remind = _duration(t, "remind_after", 0.0, where) if "remind_after" in t else None
    escalate = _duration(t, "escalate_after", 0.0, where) if "escalate_after" in t else None
    to = _strings(t, "escalate_to", where)
    if (escalate is None) != (not to):
        raise ConfigurationError(f"{where}: escalate_after and escalate_to go together",
                                 code="invalid_escalation")
    if remind is None and escalate is None:
        raise ConfigurationError(f"{where}: give remind_after, escalate_after, or both",
                                 code="invalid_escalation")
    for channel in to:
        kind, _, name = channel.partition(":")
        known = (channel == "slack" and slack) or (kind == "email" and name in lists) or (
            kind == "webhook" and _NAME.fullmatch(name) is not None)
        if not known:
            raise ConfigurationError(f"{where}: escalate_to names {channel!r}: not a channel "
                                     "here ('slack', 'email:<list>', 'webhook:<name>')",
                                     code="invalid_escalation")
    return Escalation(filters=filters, remind_after=remind, escalate_after=escalate,
                      escalate_to=to)


def _email(name: str, raw: object, where: str) -> EmailList:
    check_name(name, where)
    t = _table(raw, where)
    _known(t, {"to", "events", "risks", "tools", "threads", "digest"}, where)
    to = _strings(t, "to", where)
    if not to or not all("@" in a and not any(c in a for c in "\r\n,<>") for a in to):
        raise ConfigurationError(f"{where}: to must list one or more addresses",
                                 code="invalid_email")
    filters = parse_filters(t, where)
    if not filters.events:
        filters = Filters(events=("request.created",), risks=filters.risks,
                          tools=filters.tools, threads=filters.threads)
    digest = _duration(t, "digest", 0.0, where) if "digest" in t else None
    return EmailList(name=name, to=to, filters=filters, digest=digest)


def _env_secret(t: Mapping[str, Any], key: str, where: str, env: Mapping[str, str], *,
                code: str = "invalid_slack") -> str:
    variable = t.get(key)
    if not isinstance(variable, str) or not env.get(variable):
        raise ConfigurationError(f"{where}: {key} = {variable!r}: name an environment "
                                 "variable that is set", code=code)
    return env[variable]


def _table(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{where} must be a table", code="policy_invalid")
    return raw


def _known(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigurationError(f"{where}: unknown key {key!r}", code="policy_invalid")


def _strings(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigurationError(f"{where}: {key} must be a list of strings",
                                 code="policy_invalid")
    return tuple(value)


def _duration(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    if key not in table:
        return default
    try:
        value = parse_duration(table[key])
    except ValueError as exc:
        raise ConfigurationError(f"{where}: {key}: {exc}", code="policy_invalid") from None
    if value is None:
        raise ConfigurationError(f"{where}: {key} cannot be 'never'", code="policy_invalid")
    return value


def _count(table: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
        raise ConfigurationError(f"{where}: {key} must be a whole number from 1 to 1000",
                                 code="policy_invalid")
    return value
