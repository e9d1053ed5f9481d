"""Capabilities (``signoff.store.capabilities``): a store implements every one it lists, and
without one it falls back as the core contract says."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from signoff.errors import Conflict
from signoff.identity import Identity, token_hash
from signoff.store.base import Store
from signoff.store.capabilities import STORE_PROTOCOLS, TX_PROTOCOLS, Capability, supports

from .harness import Base, append, insert, make_request


class CapabilitiesContract(Base):
    """What a store lists in ``capabilities``, held to its protocols and its behaviour."""

    def test_every_capability_listed_is_implemented(self, store: Store) -> None:
        assert isinstance(store.capabilities, frozenset)
        for capability in store.capabilities:
            assert isinstance(capability, Capability)
            assert isinstance(store, STORE_PROTOCOLS[capability]), capability
            assert supports(store, capability)
        with store.transaction() as tx:
            for capability in store.capabilities & TX_PROTOCOLS.keys():
                assert isinstance(tx, TX_PROTOCOLS[capability]), capability

    def test_guards_unread_is_the_capability(self, store: Store) -> None:
        assert store.guards_unread is supports(store, Capability.GUARDS_UNREAD)

    def test_unread_guards_refuse_or_guard(self, store: Store) -> None:
        request = insert(store, make_request(thread_id="t-g"))
        if not supports(store, Capability.GUARDS_UNREAD):
            with pytest.raises(ValueError), store.transaction() as tx:
                tx.expect_no_thread_memory("t-g")
            with pytest.raises(ValueError), store.transaction() as tx:
                tx.expect_as_known(request, Identity(name="alice"))
            assert store.request_to_run(request.id) == (request, None)
            return
        with store.transaction() as tx:  # no memory yet: the guard lets the write through
            tx.expect_no_thread_memory("t-g")
            tx.insert_request(make_request(thread_id="t-g", call_id="c-unread"))
        with store.transaction() as tx:
            tx.set_thread_mode("t-g", "auto", at=1.0)
        late = make_request(thread_id="t-g", call_id="c-late")
        with pytest.raises(Conflict) as refused, store.transaction() as tx:
            tx.expect_no_thread_memory("t-g")
            tx.insert_request(late)
        assert refused.value.code == "changed_underneath"
        assert store.get_request(late.id) is None

    def test_seal_has_nothing_to_do_unless_sealing_after_commit(self, store: Store) -> None:
        append(store, 2)
        assert store.seal() is True
        if supports(store, Capability.SEALS_AFTER_COMMIT):
            assert store.unsealed() == (0, None)  # type: ignore[attr-defined]
        assert store.verify_audit().unsealed == 0
        assert [e.index for e in store.audit_events()] == [1, 2]

    def test_accounts_token_is_none_unless_hearing_other_processes(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.insert_user(Identity(name="ann"), token_hash=token_hash("so_ann"), at=1.0)
        if not supports(store, Capability.HEARS_OTHER_PROCESSES):
            assert store.accounts_token() is None
            return
        deadline = time.monotonic() + 5
        while store.accounts_token() is None:
            assert time.monotonic() < deadline, "the store never listened"
            time.sleep(0.01)

    def test_an_online_backup_is_a_verified_copy(self, store: Store, tmp_path: Path) -> None:
        if not supports(store, Capability.ONLINE_BACKUP):
            assert not hasattr(store, "backup")  # a store that takes none offers none
            return
        append(store, 3)
        done = store.backup(tmp_path / "copy.db")  # type: ignore[attr-defined]
        assert (done.audit_events, done.audit_head) == (3, store.audit_head()[1])
        assert Path(done.path).stat().st_size == done.bytes
