"""Managing who may decide, and each thread's review mode (a mixin of the gate).

Every change here is audited like a decision: adding a user, changing roles,
switching a thread's mode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from signoff.audit import to_us
from signoff.errors import Conflict, NotFound, Unauthenticated
from signoff.identity import Identity, IdentityKind, check_name, new_token, token_hash
from signoff.model import ReviewMode
from signoff.policy.modes import parse_review_mode
from signoff.store.base import Store


class Administering:
    store: Store
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
        parsed = parse_review_mode(mode)
        now = self.clock()
        with self.store.transaction() as tx:
            tx.set_thread_mode(thread_id, parsed.value, at=now)
            tx.append_audit("thread.mode", at_us=to_us(now), request_id=None, actor=actor,
                            data={"thread_id": thread_id, "review_mode": parsed.value})
        return parsed
