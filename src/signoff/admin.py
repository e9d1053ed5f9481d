"""Managing who may decide, and each thread's review mode (a mixin of the gate).

Every change here is audited like a decision: adding a user, changing roles,
switching a thread's mode (which a thread's own party may not raise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from signoff.audit import to_us
from signoff.errors import Conflict, NotFound, Unauthenticated
from signoff.identity import Identity, IdentityKind, check_name, new_token, token_hash
from signoff.model import ReviewMode
from signoff.ownership import mode_refusal
from signoff.policy import Policy
from signoff.policy.modes import parse_review_mode
from signoff.store.base import Store


class Administering:
    store: Store
    policy: Policy
    clock: Callable[[], float]

    def add_user(self, name: str, *, roles: Sequence[str] = (),
                 kind: IdentityKind | str = IdentityKind.APPROVER) -> tuple[Identity, str]:
        """Create an identity; returns it and its token (shown once; only a hash is kept)."""
        identity = Identity(name=check_name(name), kind=IdentityKind(kind), roles=tuple(roles))
        token = new_token()
        now = self.clock()
        with self.store.transaction() as tx:
            if tx.get_user(name) is not None:
                raise Conflict(f"user {name!r} exists", code="user_exists")
            tx.insert_user(identity, token_hash=token_hash(token), at=now)
            tx.append_audit("user.added", at_us=to_us(now), request_id=None, actor=None,
                            data={"name": name, "kind": identity.kind.value,
                                  "roles": list(identity.roles)})
        return identity, token

    def set_roles(self, name: str, roles: Sequence[str], *, actor: str | None = None) -> None:
        now = self.clock()
        with self.store.transaction() as tx:
            if not tx.set_user(name, roles=tuple(roles)):
                raise NotFound(f"no user {name!r}", code="not_found")
            tx.append_audit("user.roles", at_us=to_us(now), request_id=None, actor=actor,
                            data={"name": name, "roles": list(roles)})

    def authenticate(self, token: str | None) -> Identity:
        """The identity holding ``token``; ``Unauthenticated`` otherwise."""
        if not token:
            raise Unauthenticated("a token is required", code="unauthenticated")
        identity = self.store.user_by_token(token_hash(token))
        if identity is None or identity.disabled:
            raise Unauthenticated("unknown or disabled token", code="unauthenticated")
        return identity

    def set_thread_mode(self, thread_id: str, mode: ReviewMode | str, *,
                        actor: str | None = None) -> ReviewMode:
        """Store the thread's mode, set by ``actor`` (``None``: trusted code). A party of
        the thread may not raise it unless the policy allows self-service modes
        (``signoff.ownership``): ``Forbidden(self_approval)``."""
        parsed = parse_review_mode(mode)
        config = self.policy.config
        now = self.clock()
        with self.store.transaction() as tx:
            stored = tx.thread_mode(thread_id)
            current = parse_review_mode(stored) if stored else config.default_review_mode
            if actor is not None and parsed.rank > current.rank \
                    and not config.self_service_modes:
                refused = mode_refusal(actor, thread_id, parsed, current,
                                       tx.thread_parties(thread_id), self_service=False)
                if refused is not None:
                    raise refused
            tx.set_thread_mode(thread_id, parsed.value, at=now, by=actor)
            tx.append_audit("thread.mode", at_us=to_us(now), request_id=None, actor=actor,
                            data={"thread_id": thread_id, "review_mode": parsed.value})
        return parsed
