"""Signed audit checkpoints, on both backends: a server signs the chain's head as events are
written, and verification with keys from outside the database finds what the chain alone
cannot — a log rewritten with every hash recomputed, a forged or foreign checkpoint, an end
cut off, events no checkpoint covers."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from backdoor import raw, rewrite_chain
from kit import twin_store
from signoff import checkpoints, keys
from signoff.audit import to_us
from signoff.errors import SignatureInvalid
from signoff.kernel.auditing import Trust
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store import checkpointer, sealer
from signoff.store.base import Store
from signoff.store.retention import purge


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sign every 50 ms instead of every second: the tests wait less, nothing else changes."""
    monkeypatch.setattr(checkpointer, "EVERY", 0.05)
    monkeypatch.setattr(sealer, "SIGN_EVERY", 0.05)


def trust(*signing: keys.SigningKey) -> Trust:
    return Trust({key.kid: key.public for key in signing}, "the test's keys")


def signed_head(store: Store, *, timeout: float = 90.0, seal: bool = True) -> tuple[int, str]:
    """Wait until a checkpoint names the audit head; the head. (``seal``: seal first, which
    on PostgreSQL signs what it seals; else the store's own sealer and signer must.)"""
    deadline = time.monotonic() + timeout
    while True:
        if seal:
            store.seal()
        head = store.audit_head()
        if any(c.index == head[0] for c in store.audit_signatures(after=head[0] - 1)):
            return head
        assert time.monotonic() < deadline, f"no checkpoint at the head {head}"
        time.sleep(0.02)


def write(gate: Gate, *names: str) -> None:
    for name in names:
        gate.add_user(name, roles=["ops"])


@pytest.fixture
def key() -> keys.SigningKey:
    return keys.SigningKey.generate()


@pytest.fixture
def signed(policy: Policy, store: Store, key: keys.SigningKey) -> Iterator[Gate]:
    """A gate with a key that has written events, the head signed."""
    gate = Gate(policy, store, signing_key=key)
    write(gate, "alice", "bob", "carol")
    signed_head(store)
    yield gate


def test_checkpoints_appear_as_events_are_written(signed: Gate, store: Store,
                                                  key: keys.SigningKey) -> None:
    first = signed_head(store)
    write(signed, "dave", "erin")
    second = signed_head(store)
    assert second[0] == first[0] + 2
    found = {c.index: c for c in store.audit_signatures()}
    for index, digest in (first, second):
        checkpoint = found[index]
        assert (checkpoint.kid, checkpoint.hash) == (key.kid, digest)
        checkpoints.check(checkpoint, {key.kid: key.public})  # a real signature over it
        assert abs(checkpoint.at_us - to_us(time.time())) < 60_000_000
    result = signed.verify_audit(trust(key))
    assert result.ok and result.findings == ()
    summary = result.to_dict()["checkpoints"]
    assert summary["keys"] == "outside" and summary["verified"] == len(found) >= 2
    assert (summary["newest"], summary["newest_hash"]) == second and summary["unsigned"] == 0
    assert summary["kids"] == [key.kid]


@pytest.mark.parametrize("with_key", [True, False])
def test_a_consistent_rewrite_is_found_by_the_signatures_alone(
        policy: Policy, store: Store, key: keys.SigningKey, with_key: bool) -> None:
    gate = Gate(policy, store, signing_key=key if with_key else None)
    write(gate, "alice", "bob", "carol")
    if with_key:
        signed_head(store)
    else:
        store.seal()
    head = store.audit_head()
    rewrite_chain(store, index=2, actor="mallory")
    assert [e.actor for e in store.audit_events()][1] == "mallory"  # the rewrite took
    assert store.audit_head()[0] == head[0] and store.audit_head()[1] != head[1]
    result = gate.verify_audit(trust(key))
    if not with_key:  # every hash recomputed: the chain alone is consistent
        assert result.ok and result.findings == ()
        return
    assert not result.ok
    mismatched = [f for f in result.findings if f.code == "checkpoint_mismatch"]
    assert head[0] in {f.index for f in mismatched}
    assert all(f.kid == key.kid and f.index >= 2 for f in mismatched)
    assert result.first_bad == min(f.index for f in result.findings if f.index is not None)
    assert "rewritten" in (result.reason or "")
    # The database's own keys find it too, as long as the rewriter left them.
    assert not gate.verify_audit().ok


def test_a_forged_or_foreign_checkpoint_is_named(signed: Gate, store: Store,
                                                 key: keys.SigningKey) -> None:
    head = store.audit_head()
    other = keys.SigningKey.generate()
    real = next(c for c in store.audit_signatures() if c.index == head[0])
    tampered = real.signature[:-4] + ("AAAA" if not real.signature.endswith("AAAA") else "BBBB")
    with raw(store) as conn:
        mark = "?" if store.backend == "sqlite" else "%s"
        insert = (f"INSERT INTO audit_signatures (idx, kid, hash, at_us, signature) "
                  f"VALUES ({mark}, {mark}, {mark}, {mark}, {mark})")
        # Another key's valid signature over the true head: a key nobody trusts.
        foreign = checkpoints.sign(other, index=head[0], hash=head[1], at_us=real.at_us)
        conn.execute(insert, (foreign.index, foreign.kid, foreign.hash, foreign.at_us,
                              foreign.signature))
        # The real one's bytes broken, filed under its key at an index to come.
        conn.execute(insert, (head[0] + 1, key.kid, real.hash, real.at_us, tampered))
        # The real signature copied onto another index: it signs another than its row's.
        conn.execute(insert, (head[0] + 2, key.kid, real.hash, real.at_us, real.signature))
    result = signed.verify_audit(trust(key))
    codes = {(f.code, f.index, f.kid) for f in result.findings}
    assert codes == {("unknown_key", head[0], other.kid),
                     ("signature_invalid", head[0] + 1, key.kid),
                     ("malformed", head[0] + 2, key.kid)}
    assert not result.ok and result.first_bad == head[0]
    # Trusting the other key too, only the forged two are left.
    both = signed.verify_audit(trust(key, other))
    assert {f.code for f in both.findings} == {"signature_invalid", "malformed"}


def test_checkpoints_are_append_only(signed: Gate, store: Store) -> None:
    with raw(store) as conn:
        for statement in ("UPDATE audit_signatures SET hash = 'x'",
                          "DELETE FROM audit_signatures"):
            with pytest.raises(Exception, match="append-only"):
                conn.execute(statement)
    assert store.audit_signatures()


def test_a_cut_off_end_is_named_by_the_checkpoint_past_it(signed: Gate, store: Store,
                                                          key: keys.SigningKey) -> None:
    head = store.audit_head()
    with raw(store) as conn:
        mark = "?" if store.backend == "sqlite" else "%s"
        if store.backend == "sqlite":
            conn.execute("DROP TRIGGER audit_no_delete")
        else:
            conn.execute("ALTER TABLE audit DISABLE TRIGGER USER")
        conn.execute(f"DELETE FROM audit WHERE idx = {mark}", (head[0],))
        prev = conn.execute(f"SELECT hash FROM audit WHERE idx = {mark}",
                            (head[0] - 1,)).fetchone()[0]
        conn.execute(f"UPDATE audit_head SET idx = {mark}, hash = {mark} WHERE id = 1",
                     (head[0] - 1, prev))
    result = signed.verify_audit(trust(key))
    assert [(f.code, f.index) for f in result.findings] == [("checkpoint_beyond_end", head[0])]
    assert not result.ok


def test_events_no_checkpoint_covers_are_named_with_outside_keys(
        policy: Policy, store: Store, key: keys.SigningKey) -> None:
    server = twin_store(store)
    gate = Gate(policy, server, signing_key=key)
    write(gate, "alice")
    covered = signed_head(server)
    server.close()  # the server stops; another process without a key writes on (an hour
    quiet = Gate(policy, store, clock=lambda: time.time() - 3600)  # ago, by its clock)
    write(quiet, "bob", "carol")
    store.seal()
    verifier = Gate(policy, store)  # on the wall clock
    result = verifier.verify_audit(trust(key))
    assert [(f.code, f.index) for f in result.findings] == [("unsigned", covered[0] + 1)]
    assert "2 events" in result.findings[0].reason
    assert result.to_dict()["checkpoints"]["unsigned"] == 2
    # Without outside keys the tail is counted, not named: the database's word is all there is.
    alone = verifier.verify_audit()
    assert alone.ok and alone.to_dict()["checkpoints"]["unsigned"] == 2
    assert alone.to_dict()["checkpoints"]["keys"] == "database"
    # Once a server with the key runs again, its checkpoint covers them.
    again = Gate(policy, store, signing_key=key)
    write(again, "dave")
    signed_head(store)
    assert again.verify_audit(trust(key)).ok


def test_retention_keeps_the_checkpoints_below_its_anchor(
        policy: Policy, store: Store, key: keys.SigningKey) -> None:
    old = time.time() - 30 * 86_400
    past = Gate(policy, store, clock=lambda: old, signing_key=key)
    write(past, "alice", "bob")
    early = signed_head(store)
    write(past, "carol")
    late = signed_head(store)
    now = time.time()
    done = purge(store, before=now - 86_400, now=now, actor="os:ops")
    assert done.anchor is not None and done.anchor[0] == late[0] > early[0]
    result = past.verify_audit(trust(key))
    assert result.ok, result.to_dict()
    summary = result.to_dict()["checkpoints"]
    assert result.anchor == late[0]
    assert summary["below_anchor"] >= 1  # kept: they still prove a backup taken before
    assert summary["verified"] >= 1 and summary["newest"] is not None
    # After the purge, a rewrite of what is left is still found.
    write(past, "dave")
    signed_head(store)
    rewrite_chain(store, index=late[0] + 1, actor="mallory")
    assert {f.code for f in past.verify_audit(trust(key)).findings} == {"checkpoint_mismatch"}


@pytest.mark.slow  # two real servers: seconds
def test_two_servers_on_one_postgres_each_sign_with_their_own_key(
        policy: Policy, postgres_store: Store) -> None:
    first_key, second_key = keys.SigningKey.generate(), keys.SigningKey.generate()
    first = Gate(policy, postgres_store, signing_key=first_key)
    other = twin_store(postgres_store)
    try:
        second = Gate(policy, other, signing_key=second_key)
        deadline = time.monotonic() + 90  # a transaction held open on the shared server
        n = 0                                # holds every sealer back (conftest.SEAL_WAIT)
        while {c.kid for c in postgres_store.audit_signatures()} != {first_key.kid,
                                                                     second_key.kid}:
            assert time.monotonic() < deadline
            n += 1
            write(first, f"a{n}")
            write(second, f"b{n}")
            time.sleep(0.06)
        signed_head(postgres_store)
        assert {k["kid"] for k in first.jwks()["keys"]} == {first_key.kid, second_key.kid}
        result = first.verify_audit(trust(first_key, second_key))
        assert result.ok, result.to_dict()
        assert result.to_dict()["checkpoints"]["kids"] == sorted([first_key.kid,
                                                                  second_key.kid])
        # Trusting one server's key alone: the other's checkpoints are named, by index.
        alone = first.verify_audit(trust(first_key))
        foreign = {f.index for f in alone.findings if f.code == "unknown_key"}
        assert foreign == {c.index for c in postgres_store.audit_signatures()
                           if c.kid == second_key.kid}
        assert all(f.kid == second_key.kid for f in alone.findings)
    finally:
        other.close()


def test_a_checkpoint_signature_is_no_receipt(key: keys.SigningKey) -> None:
    checkpoint = checkpoints.sign(key, index=3, hash="sha256:" + "a" * 64, at_us=1)
    checkpoints.check(checkpoint, {key.kid: key.public})
    with pytest.raises(SignatureInvalid) as caught:
        keys.verify_jws(checkpoint.signature, {key.kid: key.public}, typ="signoff-receipt+jws")
    assert caught.value.code == "malformed"


def test_a_closing_store_signs_the_head_it_left(policy: Policy, store: Store,
                                                key: keys.SigningKey,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Signatures due only once in a long while: what is signed at the end is the close's.
    monkeypatch.setattr(checkpointer, "EVERY", 1000.0)
    monkeypatch.setattr(sealer, "SIGN_EVERY", 1000.0)
    server = twin_store(store)
    gate = Gate(policy, server, signing_key=key)
    for n, name in enumerate(("alice", "bob"), start=1):
        write(gate, name)
        # Sealed by the server's own sealer (PostgreSQL), which waits out every transaction
        # running on the shared server as long as it lasts (conftest.SEAL_WAIT, doubled).
        deadline = time.monotonic() + 60
        while store.audit_head()[0] < n:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    head = store.audit_head()
    # PostgreSQL's sealer signed its first pass (nothing signed before: due), not the later
    # one; SQLite's thread has not looked yet.
    assert head[0] not in {c.index for c in store.audit_signatures()}
    server.close()
    last = [c for c in store.audit_signatures() if c.index == head[0]]
    assert [(c.kid, c.hash) for c in last] == [(key.kid, head[1])]
    assert Gate(policy, store).verify_audit(trust(key)).ok


def test_a_head_left_unsigned_by_a_busy_pass_is_signed_once_due(
        policy: Policy, store: Store, key: keys.SigningKey,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpointer, "EVERY", 0.3)
    monkeypatch.setattr(sealer, "SIGN_EVERY", 0.3)
    gate = Gate(policy, store, signing_key=key)
    started = time.monotonic()
    write(gate, *(f"user{n}" for n in range(12)))  # passes closer together than 0.3 s
    # Nobody seals or signs by hand: the store's own sealer (or thread) signs the head.
    deadline = time.monotonic() + 90
    while signed_head(store, seal=False)[0] < 12:
        assert time.monotonic() < deadline  # sealed a part at a time (a busy shared server)
        time.sleep(0.02)
    took = time.monotonic() - started
    signed = [c.index for c in store.audit_signatures()]
    assert signed[-1] == 12
    assert len(signed) <= took / 0.3 + 2  # one a 0.3 s at most (and the first, and the last)


def test_a_caller_sealing_after_every_write_signs_once_per_interval_still(
        policy: Policy, postgres_store: Store, key: keys.SigningKey,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that seals first (``audit_events``, a wait) seals in the caller's thread; it
    signs the head no more often than the sealer's own passes do, and a head it sealed
    unsigned is still signed once that is due."""
    monkeypatch.setattr(sealer, "SIGN_EVERY", 0.5)
    gate = Gate(policy, postgres_store, signing_key=key)
    started = time.monotonic()
    for n in range(30):
        gate.add_user(f"u{n}", roles=["ops"])
        assert postgres_store.seal(wait=30)
    took = time.monotonic() - started
    signed = [c for c in postgres_store.audit_signatures() if c.kid == key.kid]
    assert len(signed) <= took / 0.5 + 2, (len(signed), took)
    head = signed_head(postgres_store, seal=False)  # the thread signs what is owed
    assert head[0] == postgres_store.audit_head()[0]
