"""Receipts of approvals, on both backends: every kind of approval signs one in its own
transaction, it verifies with the JWKS alone, and every tampering or misuse is refused
with its code. A rotation keeps old receipts verifiable; two gates on one database verify
each other's."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from signoff import keys, receipts
from signoff.canonical import args_hash
from signoff.errors import ConfigurationError, NotFound, SignatureInvalid
from signoff.identity import Identity
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import ProposalKind
from signoff.model import ApproveScope, Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore

POLICY = """
[policy]
version = "receipts-1"
gated = ["deploy", "note"]
[tools.deploy]
[tools.note]

[[rules]]
id = "deploy-two-ops"
effect = "ask"
tool = "deploy"
roles = ["ops"]
approvals = 2
expires = "1h"
"""
RUN = RunContext(thread_id="t-1", run_id="r-1", principal="paula")
ISSUER = "https://signoff.test"


def _gate(store: Store, key: keys.SigningKey | None = None) -> tuple[Gate, dict[str, Identity]]:
    gate = Gate(Policy.from_toml(POLICY), store, signing_key=key, issuer=ISSUER)
    who = {}
    for name in ("alice", "bob"):
        _, token = gate.add_user(name, roles=["ops"])
        who[name] = gate.authenticate(token)
    return gate, who


def _ask(gate: Gate, call_id: str, tool: str = "note", **args: str) -> str:
    proposal = gate.propose(ToolCall(id=call_id, name=tool, args=args or {"text": call_id}),
                            RUN)
    assert proposal.kind is ProposalKind.PENDING and proposal.request is not None
    return proposal.request.id


def _flip(token: str, part: int) -> str:
    """``token`` with one byte of its ``part`` (0 header, 1 payload, 2 signature) changed,
    still well-formed base64url."""
    pieces = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(pieces[part] + "=" * (-len(pieces[part]) % 4)))
    raw[len(raw) // 2] ^= 0x01
    pieces[part] = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return ".".join(pieces)


def test_a_quorum_of_two_signs_one_receipt_naming_both(policy: Policy, store: Store) -> None:
    key = keys.SigningKey.generate()
    gate, who = _gate(store, key)
    rid = _ask(gate, "c-1", "deploy", to="prod")
    gate.decide(rid, Decision.approve(), identity=who["alice"])
    with pytest.raises(NotFound) as missing:  # one vote of two: not approved, no receipt
        gate.receipt(rid)
    assert missing.value.code == "receipt_unavailable"
    gate.decide(rid, Decision.approve(), identity=who["bob"])
    token = gate.receipt(rid)
    request = gate.request(rid)
    got = receipts.verify(token, gate.jwks(), request_id=rid,
                          args_hash=args_hash({"to": "prod"}), issuer=ISSUER)
    assert got.kid == key.kid and got.tool == "deploy" and got.thread_id == "t-1"
    assert got.args_hash == request.run_hash == got.proposed_hash
    assert got.policy_version == "receipts-1"
    assert [(a.approver, a.roles, a.kind, a.scope) for a in got.approvals] == [
        ("alice", ("ops",), "approve", "once"), ("bob", ("ops",), "approve", "once")]
    assert request.expires_at is not None and got.expires_at == request.expires_at
    assert got.approved_at == request.updated_at
    assert all(a.passkey is None for a in got.approvals)
    # The claim hands it over with the arguments to run.
    execution = gate.claim(rid)
    assert isinstance(execution, Execution) and execution.receipt == token


def test_an_edit_signs_the_edited_arguments(policy: Policy, store: Store) -> None:
    gate, who = _gate(store, keys.SigningKey.generate())
    rid = _ask(gate, "c-1", text="draft")
    gate.decide(rid, Decision.edit({"text": "final"}, reason="tone"), identity=who["alice"])
    got = receipts.verify(gate.receipt(rid), gate.jwks())
    assert got.args_hash == args_hash({"text": "final"}) != got.proposed_hash
    assert got.proposed_hash == args_hash({"text": "draft"})
    assert [(a.approver, a.kind) for a in got.approvals] == [("alice", "edit")]
    assert got.expires_at == gate.request(rid).expires_at  # the request's own expiry
    with pytest.raises(SignatureInvalid) as refused:
        receipts.verify(gate.receipt(rid), gate.jwks(), args_hash=args_hash({"text": "draft"}))
    assert refused.value.code == "wrong_args"


def test_auto_approving_the_thread_signs_every_request_it_approves(
        policy: Policy, store: Store) -> None:
    gate, who = _gate(store, keys.SigningKey.generate())
    first, second = _ask(gate, "c-1"), _ask(gate, "c-2")
    listed = [(second, gate.request(second).run_hash)]
    result = gate.decide(first, Decision.approve(scope=ApproveScope.AUTO_THREAD, listed=listed),
                         identity=who["bob"])
    assert result.also_approved == (second,)
    for rid in (first, second):
        got = receipts.verify(gate.receipt(rid), gate.jwks(), request_id=rid)
        assert [(a.approver, a.scope) for a in got.approvals] == [("bob", "auto_thread")]


def test_a_rejection_or_a_gate_without_a_key_signs_nothing(policy: Policy,
                                                           store: Store) -> None:
    gate, who = _gate(store, keys.SigningKey.generate())
    rid = _ask(gate, "c-1")
    gate.decide(rid, Decision.reject("no"), identity=who["alice"])
    with pytest.raises(NotFound) as none:
        gate.receipt(rid)
    assert none.value.code == "receipt_unavailable"
    keyless = Gate(Policy.from_toml(POLICY), store)
    rid = _ask(keyless, "c-2")
    keyless.decide(rid, Decision.approve(), identity=who["alice"])
    assert keyless.request(rid).status is RequestStatus.APPROVED
    with pytest.raises(NotFound) as unavailable:
        keyless.receipt(rid)
    assert unavailable.value.code == "receipt_unavailable"
    execution = keyless.claim(rid)
    assert isinstance(execution, Execution) and execution.receipt is None


def test_every_tampering_and_misuse_is_refused_with_its_code(policy: Policy,
                                                             store: Store) -> None:
    gate, who = _gate(store, keys.SigningKey.generate())
    rid = _ask(gate, "c-1")
    gate.decide(rid, Decision.approve(), identity=who["alice"])
    token, jwks = gate.receipt(rid), gate.jwks()
    good = receipts.verify(token, jwks)

    def code(candidate: str, **kwargs: object) -> str:
        with pytest.raises(SignatureInvalid) as refused:
            receipts.verify(candidate, kwargs.pop("document", jwks), **kwargs)  # type: ignore[arg-type]
        return refused.value.code

    assert code(_flip(token, 2)) == "signature_invalid"
    assert code(_flip(token, 1)) in ("signature_invalid", "malformed")
    assert code(token[:-3]) in ("signature_invalid", "malformed")
    assert code("not.a.receipt") == "malformed"
    assert code(token, now=good.expires_at + 1) == "expired"
    assert code(token, issuer="https://elsewhere") == "wrong_issuer"
    assert code(token, request_id="req_other") == "wrong_request"
    assert code(token, args_hash=args_hash({"text": "other"})) == "wrong_args"
    # A key of another deployment, never published here: its receipt is unknown here, and
    # this deployment's receipt is unknown to the other's JWKS.
    other_store_key = keys.SigningKey.generate()
    forged = receipts.sign(good, other_store_key)
    assert code(forged) == "unknown_key"
    assert code(token, document=keys.jwks([other_store_key.jwk()])) == "unknown_key"
    # A payload re-signed with the right key but changed fields is another receipt: only
    # the server's key makes one (the signature over the changed payload does not hold).
    header, payload, signature = token.split(".")
    changed = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    changed["args_hash"] = args_hash({"text": "rm -rf /"})
    spliced = ".".join([header, keys.b64url(json.dumps(changed).encode()), signature])
    assert code(spliced) == "signature_invalid"


def test_rotation_keeps_old_receipts_verifiable_and_signs_new_ones_with_the_new_key(
        policy: Policy, store: Store) -> None:
    old, new = keys.SigningKey.generate(), keys.SigningKey.generate()
    gate, who = _gate(store, old)
    before = _ask(gate, "c-1")
    gate.decide(before, Decision.approve(), identity=who["alice"])
    assert gate.rotate_signing_key(new, actor="root") == old.kid
    after = _ask(gate, "c-2")
    gate.decide(after, Decision.approve(), identity=who["alice"])
    jwks = gate.jwks()
    assert receipts.verify(gate.receipt(before), jwks).kid == old.kid
    assert receipts.verify(gate.receipt(after), jwks).kid == new.kid
    published = {k["kid"]: k["retired_at"] for k in gate.published_keys()}
    assert published[old.kid] is not None and published[new.kid] is None
    rotated = [e for e in gate.audit_events() if e.kind == "key.rotated"]
    assert [json.loads(e.data) for e in rotated] == [{"retired": old.kid, "published": new.kid}]
    # A server started again with the retired key is refused: it must sign nothing new.
    with pytest.raises(ConfigurationError) as retired:
        Gate(Policy.from_toml(POLICY), store, signing_key=old)
    assert retired.value.code == "signing_key_retired"


def test_two_gates_on_one_database_verify_each_others_receipts(policy: Policy,
                                                                store: Store) -> None:
    first_key, second_key = keys.SigningKey.generate(), keys.SigningKey.generate()
    first, who = _gate(store, first_key)
    second = Gate(Policy.from_toml(POLICY), store, signing_key=second_key, issuer=ISSUER)
    one, two = _ask(first, "c-1"), _ask(second, "c-2")
    first.decide(one, Decision.approve(), identity=who["alice"])
    second.decide(two, Decision.approve(), identity=who["bob"])
    for jwks in (first.jwks(), second.jwks()):
        assert receipts.verify(second.receipt(one), jwks, issuer=ISSUER).kid == first_key.kid
        assert receipts.verify(first.receipt(two), jwks, issuer=ISSUER).kid == second_key.kid


def test_a_receipt_of_another_deployment_is_unknown_here(policy: Policy, store: Store,
                                                         tmp_path: Path) -> None:
    """Another deployment: its own database and key, never published here. Each side's
    receipt names a key the other's JWKS does not hold."""
    here, who = _gate(store, keys.SigningKey.generate())
    there, others = _gate(SqliteStore(tmp_path / "elsewhere.db"), keys.SigningKey.generate())
    try:
        mine, theirs = _ask(here, "c-1"), _ask(there, "c-1")
        here.decide(mine, Decision.approve(), identity=who["alice"])
        there.decide(theirs, Decision.approve(), identity=others["alice"])
        for token, jwks in ((there.receipt(theirs), here.jwks()),
                            (here.receipt(mine), there.jwks())):
            with pytest.raises(SignatureInvalid) as refused:
                receipts.verify(token, jwks, issuer=ISSUER)
            assert refused.value.code == "unknown_key"
        assert receipts.verify(there.receipt(theirs), there.jwks()).request_id == theirs
    finally:
        there.store.close()
