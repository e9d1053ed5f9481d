"""SQLite's signed checkpoints: a thread that signs the audit head while it moves.

SQLite chains each event inside its writer's transaction (``signoff.store.auditlog``), so no
later pass exists to sign in, as PostgreSQL's sealer does. Signing in every commit would put
a signature and a row on the path of every write; instead one thread per store looks at the
head every ``EVERY`` seconds (a read of one row) and, when it moved since it last signed,
signs it in a transaction of its own — which joins the group commit of whatever writers are
busy then (``signoff.store.groupcommit``), so under load it costs an INSERT once a second
and no fsync. ``stop`` signs the head a last time: a server that stops leaves its log
covered. Events of other processes on the same file (the CLI) are signed with the next
look: a signature says what the chain was when it was made.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING

from signoff.audit import to_us

if TYPE_CHECKING:
    from signoff.keys import SigningKey
    from signoff.store.sqlstore import SqlStore

EVERY = 1.0  # seconds between looks at the head: the longest a moved head waits unsigned


class Checkpointer:
    """One store's signing thread (``start``, ``stop``)."""

    def __init__(self, store: SqlStore, key: SigningKey, *, every: float | None = None) -> None:
        self.store = store
        self.key = key
        self.every = EVERY if every is None else every
        self._signed: tuple[int, str] | None = None  # the head this thread last signed
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="signoff-checkpoints",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop looking, and sign the head if it moved since the last look."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with contextlib.suppress(Exception):  # closing: a database away signs nothing
            self.sign_if_moved()

    def sign_if_moved(self) -> bool:
        """Sign the head if it is not the one signed last; whether a checkpoint was made."""
        if self.store.audit_head() == self._signed:
            return False
        with self.store.transaction() as tx:
            checkpoint = tx.sign_audit_head(self.key, at_us=to_us(time.time()))
        if checkpoint is None:
            return False
        self._signed = (checkpoint.index, checkpoint.hash)
        return True

    def _run(self) -> None:
        while not self._stopping.wait(self.every):
            with contextlib.suppress(Exception):  # the database busy or away: next look
                self.sign_if_moved()
