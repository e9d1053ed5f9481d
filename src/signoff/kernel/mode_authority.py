"""A thread's review mode never carries more authority than the person who set it.

``auto`` and ``full`` let calls run without a human; set by a person (``threads.set_by``),
they only stand in for what that person could have approved themselves. So a call whose
ask needs a role the setter lacks, a quorum above one, or dual control still goes to
humans (``policy.asking``, reason codes ``mode_setter_*`` and ``mode_needs_*``), and a
setter who can no longer sign in (disabled, removed, token expired) lends nothing. The
setter's roles are read as stored when each call is judged, not when the mode was set:
a role taken away takes its authority with it.

Who may set ``full`` at all is ``[review] full_mode_role``: admins, and the holders of
that role when one is named (``full_mode_not_allowed`` otherwise). A mode set by trusted
code (no setter) or given by the run's caller is the operator's and is not bounded here.
"""

from __future__ import annotations

import dataclasses

from signoff.errors import Forbidden
from signoff.identity import Account, IdentityKind
from signoff.model import ReviewMode, RunContext
from signoff.store.base import Store, Tx

CODE_FULL = "full_mode_not_allowed"


def roles_lent(account: Account | None, now: float) -> tuple[str, ...] | None:
    """The roles a mode set by ``account`` lends now; ``None``: it lends nothing (gone,
    disabled, token expired, or an agent)."""
    if account is None or account.status(now) != "active" or not account.identity.may_decide:
        return None
    return account.identity.roles


def lent(store: Store, context: RunContext, now: float) -> RunContext:
    """``context`` with its mode setter's roles as stored now (``mode_roles``); unchanged
    when no person set the run's mode."""
    if context.mode_setter is None:
        return context
    with store.transaction() as tx:
        account = tx.account(context.mode_setter)
    return dataclasses.replace(context, mode_roles=roles_lent(account, now))


def may_set_full(account: Account | None, role: str | None, now: float) -> bool:
    """Admins may set ``full``; so may holders of ``role`` when the policy names one."""
    if roles_lent(account, now) is None:
        return False
    assert account is not None
    identity = account.identity
    return identity.kind is IdentityKind.ADMIN or (role is not None and role in identity.roles)


def full_mode_refusal(tx: Tx, actor: str, mode: ReviewMode, role: str | None,
                      now: float) -> Forbidden | None:
    """Why ``actor`` may not set ``mode`` (only ``full`` is restricted), read in the
    transaction that would write it."""
    if mode is not ReviewMode.FULL or may_set_full(tx.account(actor), role, now):
        return None
    who = "admins" + (f" and holders of the role {role}" if role else "")
    return Forbidden(f"{actor} may not set review mode full: only {who} may "
                     "([review] full_mode_role)", code=CODE_FULL)
