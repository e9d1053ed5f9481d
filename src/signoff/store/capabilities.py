"""What only some backends do: named capabilities, each a ``Protocol`` of its own.

Every backend implements the core contract (``signoff.store.base``). Beyond it, a store
lists what more it does in ``Store.capabilities``, and for each capability listed it
implements that capability's protocols (``STORE_PROTOCOLS``, ``TX_PROTOCOLS``). The
conformance suite (``tests/store/conformance``) holds every store to its list:
a capability listed is implemented and behaves; one not listed falls back as the core
says (``seal`` has nothing to do, ``accounts_token`` is ``None``, the ``expect_*``
guards refuse). Callers ask ``supports(store, capability)``.

Today: PostgreSQL seals after commit, guards writes on what it did not read and hears
other processes; SQLite takes an online backup.
"""

from __future__ import annotations

import enum
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from signoff.identity import Identity
from signoff.model import ApprovalRequest
from signoff.store.records import Backup


class Capability(enum.StrEnum):
    SEALS_AFTER_COMMIT = "seals_after_commit"
    GUARDS_UNREAD = "guards_unread"
    HEARS_OTHER_PROCESSES = "hears_other_processes"
    ONLINE_BACKUP = "online_backup"


@runtime_checkable
class SealsAfterCommit(Protocol):
    """Audit events are written unchained and chained after commit, in commit order, by
    one sealer at a time (PostgreSQL: no transaction waits on another's audit). Every read
    of the audit seals first; ``unsealed`` says what a running transaction still holds
    back. Without it events are chained inside their transaction and ``seal`` (core) has
    nothing to do."""

    def seal(self, *, wait: float = 1.0) -> bool:
        """Chain what was committed before the call; ``False``: some still held."""
        ...

    def unsealed(self) -> tuple[int, int | None]:
        """Committed events not sealed yet: how many, and the oldest one's ``at_us``."""
        ...


@runtime_checkable
class GuardsUnread(Protocol):
    """A transaction's writes can require, inside the database, what the process took for
    granted instead of reading it — a round trip less where a read is one (PostgreSQL).
    ``guards_unread`` is ``True`` exactly on a store with this capability: the kernel reads
    it before taking anything unread."""

    guards_unread: bool

    def assuming_no_thread_memory(self, thread_id: str) -> AbstractContextManager[None]:
        """In this context, ``thread_memory(thread_id)`` is empty without a read."""
        ...


@runtime_checkable
class GuardsUnreadTx(Protocol):
    """The transaction side of ``GuardsUnread``. Every ``Tx`` carries these two methods
    (the kernel calls them once ``guards_unread`` says so); a store without the capability
    refuses them (``ValueError``), which the conformance suite checks."""

    def expect_no_thread_memory(self, thread_id: str) -> None:
        """Commit only if the thread has no stored mode, rejection or own grant; else write
        nothing (``changed_underneath``)."""
        ...

    def expect_as_known(self, request: ApprovalRequest, user: Identity) -> None:
        """Take ``request`` as held, unread: the transaction's compare-and-set of it then
        also requires it to be pending with the arguments known, and ``user`` to be stored
        as given — or nothing is written (``changed_underneath``). The transaction must
        move it."""
        ...


@runtime_checkable
class HearsOtherProcesses(Protocol):
    """Commits of other processes are pushed to this one (PostgreSQL ``LISTEN`` on
    ``channel``): waiters wake at once, and ``accounts_token`` changes with every account
    written anywhere — it is ``None`` only while not listening. Without it other
    processes' commits are found by polling, and ``accounts_token`` is always ``None``."""

    channel: str

    def accounts_token(self) -> object | None: ...


@runtime_checkable
class OnlineBackup(Protocol):
    """A consistent, verified copy of the database while it is in use (SQLite's backup
    API). PostgreSQL has its own tools (``pg_dump``)."""

    def backup(self, destination: str | Path) -> Backup: ...


STORE_PROTOCOLS: dict[Capability, type[Any]] = {
    Capability.SEALS_AFTER_COMMIT: SealsAfterCommit,
    Capability.GUARDS_UNREAD: GuardsUnread,
    Capability.HEARS_OTHER_PROCESSES: HearsOtherProcesses,
    Capability.ONLINE_BACKUP: OnlineBackup,
}
TX_PROTOCOLS: dict[Capability, type[Any]] = {Capability.GUARDS_UNREAD: GuardsUnreadTx}


def supports(store: object, capability: Capability) -> bool:
    """Whether ``store`` lists ``capability``; one listed but not implemented is a bug in
    the backend, said at once (``TypeError``) rather than met half-way through."""
    if capability not in getattr(store, "capabilities", frozenset()):
        return False
    protocol = STORE_PROTOCOLS[capability]
    if not isinstance(store, protocol):
        raise TypeError(f"{type(store).__name__} lists {capability} but does not implement "
                        f"{protocol.__name__}")
    return True
