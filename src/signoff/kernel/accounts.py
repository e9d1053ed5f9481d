"""Managing who may decide, and each thread's review mode (a part of the gate).

Every change here is audited like a decision, in the same transaction: adding a
user, changing roles, disabling, enabling, removing, rotating a token,
switching a thread's mode (which a thread's own party may not raise). ``actor``
names who did it — the admin over HTTP, ``os:<user>`` from the CLI. Disabling,
removing and rotating end the user's sessions and unused login links in that
transaction too, and the last admin who can sign in (active, token not expired) can
be neither disabled nor removed (``last_admin``): someone must be able to manage users.
"""

from __future__ import annotations

import functools
import getpass
import os
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from signoff.audit import AuditKind, to_us
from signoff.errors import (
    ConfigurationError,
    Conflict,
    Forbidden,
    NotFound,
    SignoffError,
    Unauthenticated,
)
from signoff.identity import (
    Account,
    Identity,
    IdentityKind,
    check_name,
    new_token,
    token_hash,
)
from signoff.kernel.mode_authority import full_mode_refusal
from signoff.kernel.ownership import mode_refusal
from signoff.model import ReviewMode
from signoff.policy import Policy
from signoff.policy.config import parse_duration
from signoff.policy.modes import parse_review_mode
from signoff.store.base import Store, Tx

TOKEN_FRESH = 0.25  # seconds a token checked here is trusted without reading it again
# ... and where the store hears every account change (PostgreSQL's listener), until one is
# heard, or this many seconds (a listener cut off without an error hears nothing).
TOKEN_HEARD = 2.0
_TOKENS_KEPT = 10_000  # remembered tokens at most (then forgotten all at once)
_T = TypeVar("_T")


def _changes_accounts(method: Callable[..., _T]) -> Callable[..., _T]:
    """Forget remembered tokens before and after ``method`` changes an account: no check
    made meanwhile is remembered past it (``remembered_identity``)."""
    @functools.wraps(method)
    def wrapped(self: Accounts, *args: Any, **kwargs: Any) -> _T:
        self._forget_tokens()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._forget_tokens()
    return wrapped


class Accounts:
    """Users and their tokens, and each thread's review mode."""

    def __init__(self, store: Store, policy: Policy, *, clock: Callable[[], float]) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        # Tokens checked here lately (``remembered_identity``), and the generation that
        # every account change moves on, so no check made before it is trusted after.
        self._token_cache: dict[str, tuple[int, float, Account, object | None]] = {}
        self._token_generation = 0

    def add_user(self, name: str, *, roles: Sequence[str] = (),
                 kind: IdentityKind | str = IdentityKind.APPROVER,
                 expires_in: float | None = None,
                 actor: str | None = None) -> tuple[Identity, str]:
        """Create an identity; returns it and its token (shown once; only a hash is kept).
        ``expires_in``: the token stops working that many seconds from now."""
        if name.startswith("os:"):  # the CLI's actors: an identity must not look like one
            raise ConfigurationError(f"user names may not start with 'os:' ({name!r})",
                                     code="invalid_name")
        identity = Identity(name=check_name(name), kind=IdentityKind(kind),
                            roles=tuple(check_name(r) for r in roles))
        token = new_token()
        now = self.clock()
        expires_at = now + expires_in if expires_in is not None else None
        with self.store.transaction() as tx:
            existing = tx.account(name)
            if existing is not None and existing.removed_at is not None:
                raise Conflict(f"user {name!r} was removed; a removed name is not reused",
                               code="user_removed")
            if existing is not None:
                raise Conflict(f"user {name!r} exists", code="user_exists")
            tx.insert_user(identity, token_hash=token_hash(token), at=now, expires_at=expires_at)
            tx.append_audit(AuditKind.USER_ADDED, at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name, "kind": identity.kind.value,
                                  "roles": list(identity.roles),
                                  "token_expires_at": expires_at})
        return identity, token

    @_changes_accounts
    def set_roles(self, name: str, roles: Sequence[str], *, actor: str | None = None) -> Account:
        roles = tuple(check_name(r) for r in dict.fromkeys(roles))
        now = self.clock()
        with self.store.transaction() as tx:
            account = _live(tx, name)
            tx.set_user(name, roles=roles)
            tx.append_audit(AuditKind.USER_ROLES, at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name, "roles": list(roles),
                                  "before": list(account.identity.roles)})
            return _reread(tx, name)

    @_changes_accounts
    def disable_user(self, name: str, *, actor: str | None = None) -> tuple[Account, bool]:
        """Disable the user and end its sessions; ``(account, changed)``."""
        now = self.clock()
        with self.store.transaction() as tx:
            # held first, in name order: no deadlock between two
            admins = tx.active_admins(at=now)
            account = _live(tx, name)
            if account.identity.disabled:
                return account, False
            _not_last_admin(admins, account, "disable")
            tx.set_user(name, disabled=True)
            ended = tx.delete_sessions(user=name)
            tx.end_login_links(name, at=now)
            tx.append_audit(AuditKind.USER_DISABLED, at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name, "sessions_ended": [s.id for s in ended]})
            return _reread(tx, name), True

    @_changes_accounts
    def enable_user(self, name: str, *, actor: str | None = None) -> tuple[Account, bool]:
        now = self.clock()
        with self.store.transaction() as tx:
            account = _live(tx, name)
            if not account.identity.disabled:
                return account, False
            tx.set_user(name, disabled=False)
            tx.append_audit(AuditKind.USER_ENABLED, at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name})
            return _reread(tx, name), True

    @_changes_accounts
    def remove_user(self, name: str, *, actor: str | None = None) -> Account:
        """Remove for good: its token and sessions stop working; the name stays reserved
        (decisions and audit events name it) and ``users list --all`` still shows it."""
        now = self.clock()
        with self.store.transaction() as tx:
            admins = tx.active_admins(at=now)
            account = _live(tx, name)
            _not_last_admin(admins, account, "remove")
            tombstone = "removed:" + secrets.token_hex(16)  # no token hashes to this
            tx.mark_removed(name, at=now, tombstone_hash=tombstone)
            ended = tx.delete_sessions(user=name)
            tx.end_login_links(name, at=now)
            tx.append_audit(AuditKind.USER_REMOVED, at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name, "sessions_ended": [s.id for s in ended]})
            return _reread(tx, name)

    @_changes_accounts
    def rotate_token(self, name: str, *, expires_in: float | None = None,
                     actor: str | None = None) -> tuple[Account, str]:
        """A new token (shown once); the old one stops working now, and so do the user's
        sessions (a rotation is what one does when a token may have leaked)."""
        token = new_token()
        now = self.clock()
        expires_at = now + expires_in if expires_in is not None else None
        with self.store.transaction() as tx:
            _live(tx, name)
            tx.set_token(name, token_hash=token_hash(token), at=now, expires_at=expires_at)
            ended = tx.delete_sessions(user=name)
            tx.end_login_links(name, at=now)
            tx.append_audit(AuditKind.USER_TOKEN_ROTATED, at_us=to_us(now), request_id=None,
                            actor=actor, data={"name": name, "token_expires_at": expires_at,
                                               "sessions_ended": [s.id for s in ended]})
            return _reread(tx, name), token

    def users(self, *, removed: bool = False) -> list[Account]:
        return self.store.accounts(removed=removed)

    def user(self, name: str) -> Account:
        with self.store.transaction() as tx:
            account = tx.account(name)
        if account is None:
            raise NotFound(f"no user {name!r}", code="not_found")
        return account

    def remembered_identity(self, token: str | None) -> Identity | None:
        """``authenticate``'s answer for ``token`` if it still holds now (expiry is checked
        again) and was read from the store in the last ``TOKEN_FRESH`` seconds — or, where
        the store hears every account change (``Store.accounts_token``), in the last
        ``TOKEN_HEARD`` seconds with no change heard since; ``None``: call
        ``authenticate``. Never reads the store: the server asks on its event loop, which
        spares a request a thread hop and a read. An account changed through this gate is
        forgotten at once; one changed by another process or server, when its notice
        arrives, and at most ``TOKEN_FRESH`` after it if the store cannot hear it
        (docs/server.md, "Who may do what")."""
        if not token:
            return None
        entry = self._token_cache.get(token_hash(token))
        if entry is None:
            return None
        generation, read_at, account, heard = entry
        age = time.monotonic() - read_at
        if generation != self._token_generation \
                or account.status(self.clock()) != "active":
            return None
        if age <= TOKEN_FRESH or (heard is not None and age <= TOKEN_HEARD
                                  and self.store.accounts_token() == heard):
            return account.identity
        return None

    def _forget_tokens(self) -> None:
        self._token_generation += 1
        self._token_cache.clear()

    def authenticate(self, token: str | None) -> Identity:
        """The identity holding ``token``; ``Unauthenticated`` otherwise (``unauthenticated``,
        ``identity_disabled``, ``token_expired``)."""
        if not token:
            raise Unauthenticated("a token is required", code="unauthenticated")
        generation = self._token_generation
        heard = self.store.accounts_token()  # before the read: a change after it is heard
        hashed = token_hash(token)
        account = self.store.account_by_token(hashed)
        if account is None:
            raise Unauthenticated("unknown or disabled token", code="unauthenticated")
        status = account.status(self.clock())
        if status == "disabled":
            raise Unauthenticated(f"{account.name} is disabled", code="identity_disabled")
        if status == "token_expired":
            raise Unauthenticated(f"{account.name}'s token expired; an admin can issue a new "
                                  "one (signoff users rotate)", code="token_expired")
        if status != "active":
            raise Unauthenticated("unknown or disabled token", code="unauthenticated")
        tokens = self._token_cache
        if len(tokens) >= _TOKENS_KEPT:
            tokens.clear()
        tokens[hashed] = (generation, time.monotonic(), account, heard)
        return account.identity

    def set_thread_mode(self, thread_id: str, mode: ReviewMode | str, *,
                        actor: str | None = None) -> ReviewMode:
        """Store the thread's mode, set by ``actor`` (``None``: trusted code). Only admins
        and ``[review] full_mode_role`` may set ``full`` (``Forbidden(full_mode_not_allowed)``);
        the mode lends no more than ``actor`` holds (``kernel.mode_authority``). A party of
        the thread may not raise it unless the policy allows self-service modes
        (``signoff.kernel.ownership``): ``Forbidden(self_approval)``."""
        parsed = parse_review_mode(mode)
        config = self.policy.config
        now = self.clock()
        with self.store.transaction() as tx:
            stored = tx.thread_mode(thread_id)
            current = parse_review_mode(stored) if stored else config.default_review_mode
            if actor is not None:  # a person: the ceiling, and never under a running call
                refused = mode_change_refusal(tx, thread_id, parsed, config.ceiling)
                if refused is not None:
                    raise refused
            if actor is not None and parsed.rank > current.rank \
                    and not config.self_service_modes:
                refused = mode_refusal(actor, thread_id, parsed, current,
                                       tx.thread_parties(thread_id), self_service=False)
                if refused is not None:
                    raise refused
            if actor is not None:  # full: admins and [review] full_mode_role only
                refused = full_mode_refusal(tx, actor, parsed, config.review.full_mode_role,
                                            now)
                if refused is not None:
                    raise refused
            tx.set_thread_mode(thread_id, parsed.value, at=now, by=actor)
            tx.append_audit(AuditKind.THREAD_MODE, at_us=to_us(now), request_id=None, actor=actor,
                            data={"thread_id": thread_id, "review_mode": parsed.value})
        return parsed


def mode_change_refusal(tx: Tx, thread_id: str, mode: ReviewMode,
                        ceiling: ReviewMode) -> SignoffError | None:
    """Why a person may not set ``thread_id`` to ``mode`` now, read in the transaction that
    would write it: above the policy's ceiling (``above_ceiling``), or while one of the
    thread's calls executes (``run_in_progress``: a run's mode must not change under it;
    waiting for approval is not running)."""
    if mode.rank > ceiling.rank:
        return Forbidden(f"review mode {mode.value} is above this policy's ceiling "
                         f"{ceiling.value}", code="above_ceiling")
    if tx.thread_executing(thread_id):
        return Conflict(f"thread {thread_id} has a call executing; change its mode when it "
                        "ends", code="run_in_progress")
    return None


def os_actor() -> str:
    """The audit actor of a change made from this machine's command line: ``os:<user>``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        user = f"uid{os.getuid()}"
    return f"os:{user}"


def expiry(value: str | float | None) -> float | None:
    """A token's lifetime in seconds from ``--expires``/``"expires"`` (``"90d"``, ``"12h"``,
    seconds, or ``"never"``/``None``); ``invalid_duration`` otherwise."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigurationError(f"expires: {exc}", code="invalid_duration") from None


def _live(tx: Tx, name: str) -> Account:
    """The user's account, held until commit: not found and removed users are errors."""
    account = tx.account(name, lock=True)
    if account is None:
        raise NotFound(f"no user {name!r}", code="not_found")
    if account.removed_at is not None:
        raise Conflict(f"user {name!r} was removed", code="user_removed")
    return account


def _reread(tx: Tx, name: str) -> Account:
    account = tx.account(name)
    assert account is not None  # held by this transaction
    return account


def _not_last_admin(admins: list[str], account: Account, verb: str) -> None:
    """``admins`` are those who can sign in (``active_admins(at=now)``): one whose token
    expired manages nobody until rotated, so it does not count as the one remaining."""
    if account.identity.kind is not IdentityKind.ADMIN or account.identity.disabled:
        return
    if admins == [account.name]:
        raise Conflict(f"{account.name} is the last admin who can sign in; add, enable or "
                       f"renew the token of another admin before you {verb} it",
                       code="last_admin")
