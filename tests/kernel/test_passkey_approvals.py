"""Passkey approvals in the kernel, on both backends: a request that needs a passkey is
approved only by the approver's own registered passkey over exactly this request, these
arguments and this decision (user verified), and the claim checks every such approval
again — a decision written into the database by hand never runs. Assertions come from a
software authenticator (``tests/softkey.py``); the verification is py_webauthn's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backdoor import raw
from signoff.errors import NotFound, PasskeyRequired, SignatureInvalid
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind, ProposalKind
from signoff.model import (
    Decision,
    Effect,
    InteractionMode,
    RequestStatus,
    ReviewMode,
    RunContext,
    ToolCall,
)
from signoff.policy import Policy
from signoff.store.base import Store
from softkey import ORIGIN, RP_ID, SoftKey

POLICY = """
[policy]
version = "pk-1"
unknown_tools = "allow"
passkey_from_risk = "critical"
unattended_asks = "allow"

[workspace]
root = "{root}"

[tools.release]
[tools.restart]
[tools.page]

[[rules]]
id = "signed-release"
effect = "ask"
tool = "release"
signature = "passkey"

[[rules]]
id = "restart"
effect = "ask"
tool = "restart"

[[rules]]
id = "page-critical"
effect = "ask"
tool = "page"
risk = "critical"
"""


class Kit:
    def __init__(self, root: Path, store: Store) -> None:
        self.store = store
        self.gate = Gate(Policy.from_toml(POLICY.format(root=root), source="pk.toml"), store,
                         agent="bot")
        self.ran: list[dict[str, Any]] = []

        @self.gate.tool()
        def release(version: str) -> str:
            self.ran.append({"version": version})
            return f"released {version}"

        self.alice, _ = self.gate.add_user("alice")
        self.bob, _ = self.gate.add_user("bob")
        self.alice_key = self.register(self.alice)
        self.bob_key = self.register(self.bob)
        self.n = 0

    def register(self, who: Identity, key: SoftKey | None = None) -> SoftKey:
        key = key or SoftKey()
        options = self.gate.passkeys.registration_options(who, rp_id=RP_ID, origin=ORIGIN)
        self.gate.passkeys.register(who, key.register(options), name=f"{who.name}'s key")
        return key

    def pending(self, version: str = "1.0") -> str:
        self.n += 1
        proposal = self.gate.propose(ToolCall(id=f"c{self.n}", name="release",
                                              args={"version": version}),
                                     RunContext(thread_id="t", principal="paula"))
        assert proposal.kind is ProposalKind.PENDING and proposal.request is not None
        assert proposal.request.passkey
        return proposal.request.id

    def signed(self, request_id: str, who: Identity, key: SoftKey, *, kind: str = "approve",
               args: dict[str, Any] | None = None) -> dict[str, Any]:
        options = self.gate.passkeys.assertion_options(request_id, who, rp_id=RP_ID, kind=kind,
                                                       args=args)
        assert options["allowCredentials"] and options["userVerification"] == "required"
        return key.assert_(options["challenge"])

    def approve(self, request_id: str, who: Identity, key: SoftKey) -> None:
        self.gate.decide(request_id, Decision.approve(
            assertion=self.signed(request_id, who, key)), identity=who)


@pytest.fixture
def kit(workspace: Path, store: Store) -> Kit:
    return Kit(workspace, store)


def test_policy_requires_passkeys_by_rule_and_by_risk(kit: Kit) -> None:
    check = kit.gate.check
    context = RunContext(thread_id="t")
    assert check(ToolCall(id="a", name="release", args={"version": "1"}), context).passkey
    assert not check(ToolCall(id="b", name="restart", args={}), context).passkey
    paged = check(ToolCall(id="c", name="page", args={}), context)
    assert paged.passkey and paged.to_dict()["passkey"] is True
    # No shortcut answers it: full mode, an unattended run with unattended_asks = allow.
    full = check(ToolCall(id="d", name="release", args={"version": "1"}),
                 RunContext(thread_id="t", review_mode=ReviewMode.FULL))
    assert full.effect is Effect.ASK and full.passkey
    assert check(ToolCall(id="e", name="restart", args={}), RunContext(
        thread_id="t", review_mode=ReviewMode.FULL)).effect is Effect.ALLOW
    unattended = RunContext(thread_id="t", interaction_mode=InteractionMode.SCHEDULED)
    assert check(ToolCall(id="f", name="release", args={"version": "1"}),
                 unattended).effect is Effect.BLOCKED
    assert check(ToolCall(id="g", name="restart", args={}), unattended).effect is Effect.ALLOW


def test_a_valid_assertion_approves_and_the_call_runs_once(kit: Kit) -> None:
    request_id = kit.pending()
    kit.approve(request_id, kit.alice, kit.alice_key)
    assert kit.gate.request(request_id).status is RequestStatus.APPROVED
    (decision,) = kit.store.decisions(request_id)
    stored = json.loads(decision.assertion or "")
    assert stored["passkey"] == kit.alice_key.id
    assert stored["challenge"]["args_hash"] == kit.gate.request(request_id).args_hash
    assert kit.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert kit.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert kit.ran == [{"version": "1.0"}]
    assert kit.gate.verify_audit().ok
    (key,) = kit.gate.passkeys.passkeys("alice")
    assert key.sign_count == 1 and key.last_used_at is not None


def _refused(kit: Kit, request_id: str, who: Identity, assertion: dict[str, Any] | None,
             code: str) -> None:
    with pytest.raises((SignatureInvalid, PasskeyRequired)) as refused:
        kit.gate.decide(request_id, Decision.approve(assertion=assertion), identity=who)
    assert refused.value.code == code, refused.value
    assert kit.gate.request(request_id).status is RequestStatus.PENDING
    assert kit.store.decisions(request_id) == []


def test_assertions_that_do_not_hold_are_refused(kit: Kit) -> None:
    first, second = kit.pending("1.0"), kit.pending("2.0")
    # Signed for another request.
    _refused(kit, second, kit.alice, kit.signed(first, kit.alice, kit.alice_key),
             "passkey_invalid")
    # Signed for other arguments (an edit's challenge, presented as an approve).
    _refused(kit, first, kit.alice, kit.signed(first, kit.alice, kit.alice_key, kind="edit",
                                               args={"version": "9.9"}), "passkey_invalid")
    # The authenticator did not verify the user.
    with pytest.raises(SignatureInvalid):  # registering needs user verification too
        kit.register(kit.alice, SoftKey(uv=False))
    lazy = kit.register(kit.alice)
    lazy.uv = False
    _refused(kit, first, kit.alice, kit.signed(first, kit.alice, lazy), "passkey_unverified")
    # Another user's authenticator.
    _refused(kit, first, kit.alice, kit.signed(first, kit.bob, kit.bob_key), "passkey_not_yours")
    # A passkey nobody registered.
    stranger = SoftKey()
    options = kit.gate.passkeys.assertion_options(first, kit.alice, rp_id=RP_ID)
    _refused(kit, first, kit.alice, stranger.assert_(options["challenge"]), "passkey_unknown")
    # No assertion at all: an API token, the CLI, Slack, a resume.
    _refused(kit, first, kit.alice, None, "passkey_required")
    # Replayed: the same assertion twice (its sign count does not move on).
    signed = kit.signed(first, kit.alice, kit.alice_key)
    kit.gate.decide(first, Decision.approve(assertion=signed), identity=kit.alice)
    with pytest.raises(Exception):  # noqa: B017 (already decided, or replayed: never counted)
        kit.gate.decide(first, Decision.approve(assertion=signed), identity=kit.bob)
    # Rejecting needs no passkey.
    kit.gate.decide(second, Decision.reject("not now"), identity=kit.bob)
    assert kit.gate.request(second).status is RequestStatus.REJECTED


def test_an_edit_is_signed_over_the_edited_arguments(kit: Kit) -> None:
    request_id = kit.pending("1.0")
    wrong = kit.signed(request_id, kit.alice, kit.alice_key)  # the approve's challenge
    with pytest.raises(SignatureInvalid) as refused:
        kit.gate.decide(request_id, Decision.edit({"version": "1.1"}, assertion=wrong),
                        identity=kit.alice)
    assert refused.value.code == "passkey_invalid"
    signed = kit.signed(request_id, kit.alice, kit.alice_key, kind="edit",
                        args={"version": "1.1"})
    kit.gate.decide(request_id, Decision.edit({"version": "1.1"}, assertion=signed),
                    identity=kit.alice)
    assert kit.gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert kit.ran == [{"version": "1.1"}]


def _invalidated(kit: Kit, request_id: str) -> None:
    outcome = kit.gate.resume(request_id)
    assert outcome.kind is not OutcomeKind.EXECUTED
    request = kit.gate.request(request_id)
    assert request.status is RequestStatus.INVALIDATED
    assert request.outcome_code == "signature_invalid"
    assert kit.ran == []
    assert any(e.kind == "request.invalidated" and e.request_id == request_id
               for e in kit.gate.audit_events())


def test_a_decision_written_into_the_database_never_runs(kit: Kit) -> None:
    request_id = kit.pending()
    request = kit.gate.request(request_id)
    with raw(kit.store) as conn:
        conn.execute("INSERT INTO decisions (id, request_id, kind, approver, created_at, "
                     "args_hash, reason, alternatives, args, message, scope, assertion) "
                     "VALUES ('dec_forged', %s, 'approve', 'alice', 1, %s, NULL, '[]', NULL, "
                     "NULL, 'once', NULL)".replace("%s", "?" if kit.store.backend == "sqlite"
                                                   else "%s"), (request_id, request.args_hash))
        conn.execute("UPDATE requests SET status = 'approved', version = version + 1 "
                     "WHERE id = " + ("?" if kit.store.backend == "sqlite" else "%s"),
                     (request_id,))
    found = kit.gate.verify_audit()
    assert not found.ok and request_id in (found.reason or "") and "alice" in (found.reason or "")
    _invalidated(kit, request_id)


def test_a_removed_passkey_or_a_forged_assertion_fails_the_claim(kit: Kit) -> None:
    removed = kit.pending("1.0")
    kit.approve(removed, kit.alice, kit.alice_key)
    kit.gate.passkeys.remove("alice", kit.alice_key.id, actor="alice")
    with pytest.raises(NotFound):
        kit.gate.passkeys.remove("alice", kit.alice_key.id, actor="alice")
    assert "alice" in (kit.gate.verify_audit().reason or "")  # it would not run
    _invalidated(kit, removed)
    assert kit.gate.verify_audit().ok  # refused, as it should be: nothing to name
    # An assertion copied from another request onto this one's decision.
    first, second = kit.pending("2.0"), kit.pending("3.0")
    kit.approve(first, kit.bob, kit.bob_key)
    kit.approve(second, kit.bob, kit.bob_key)
    (donor,) = kit.store.decisions(first)
    mark = "?" if kit.store.backend == "sqlite" else "%s"
    with raw(kit.store) as conn:
        conn.execute(f"UPDATE decisions SET assertion = {mark} WHERE request_id = {mark}",
                     (donor.assertion, second))
    _invalidated(kit, second)
    assert second in (kit.gate.verify_audit().reason or "")  # forged: named for good
    assert kit.gate.resume(first).kind is OutcomeKind.EXECUTED
    assert kit.ran == [{"version": "2.0"}]
    # A passkey removed after its approval ran takes no history back.
    kit.gate.passkeys.remove("bob", kit.bob_key.id, actor="bob")
    assert first not in (kit.gate.verify_audit().reason or "")


def test_registration_is_single_use_and_listed(kit: Kit) -> None:
    key = SoftKey()
    options = kit.gate.passkeys.registration_options(kit.alice, rp_id=RP_ID, origin=ORIGIN)
    answer = key.register(options)
    with pytest.raises(SignatureInvalid):  # another user's challenge
        kit.gate.passkeys.register(kit.bob, answer, name="x")
    with pytest.raises(SignatureInvalid):  # used up by the attempt
        kit.gate.passkeys.register(kit.alice, answer, name="x")
    assert [p.name for p in kit.gate.passkeys.passkeys("alice")] == ["alice's key"]
    kinds = [e.kind for e in kit.gate.audit_events()]
    assert kinds.count("passkey.registered") == 2


def test_a_resume_or_elicitation_without_a_passkey_is_refused(kit: Kit) -> None:
    request_id = kit.pending()
    once = kit.gate.decide_once(request_id, Decision.approve(), user="alice", key="k1",
                                via="resume")
    assert once.result is None and once.code == "passkey_required"
    assert kit.gate.request(request_id).status is RequestStatus.PENDING


def test_a_thread_grant_does_not_answer_the_next_passkey_call(kit: Kit) -> None:
    request_id = kit.pending("1.0")
    signed = kit.signed(request_id, kit.alice, kit.alice_key)
    kit.gate.decide(request_id, Decision.approve(scope="thread", assertion=signed),
                    identity=kit.alice)
    assert kit.gate.request(request_id).status is RequestStatus.APPROVED
    again = kit.gate.propose(ToolCall(id="again", name="release", args={"version": "1.0"}),
                             RunContext(thread_id="t", principal="paula"))
    assert again.kind is ProposalKind.PENDING and again.request is not None
    assert again.request.passkey


def test_turning_the_requirement_off_in_the_database_does_not_help(kit: Kit) -> None:
    request_id = kit.pending()
    mark = "?" if kit.store.backend == "sqlite" else "%s"
    with raw(kit.store) as conn:
        conn.execute("INSERT INTO decisions (id, request_id, kind, approver, created_at, "
                     "args_hash, alternatives, scope) VALUES ('dec_forged', "
                     f"{mark}, 'approve', 'alice', 1, {mark}, '[]', 'once')",
                     (request_id, kit.gate.request(request_id).args_hash))
        conn.execute("UPDATE requests SET status = 'approved', passkey = 0, "
                     f"version = version + 1 WHERE id = {mark}", (request_id,))
    outcome = kit.gate.resume(request_id)
    assert outcome.kind is not OutcomeKind.EXECUTED and kit.ran == []
    request = kit.gate.request(request_id)
    # The policy, asked again before the run, wants a passkey the request no longer asks for.
    assert request.status is RequestStatus.INVALIDATED and request.outcome_code == "policy_changed"


def test_a_receipt_carries_the_passkey_assertion_an_executor_can_check(
        workspace: Path, store: Store) -> None:
    """A keyed gate's receipt of a passkey approval holds the stored assertion itself, so an
    executor elsewhere can check the person's signature over exactly what it will run."""
    from signoff import keys, receipts

    key = keys.SigningKey.generate()
    kit = Kit(workspace, store)
    gate = Gate(kit.gate.policy, store, agent="bot", signing_key=key)
    request_id = kit.pending()
    options = gate.passkeys.assertion_options(request_id, kit.alice, rp_id=RP_ID)
    gate.decide(request_id, Decision.approve(assertion=kit.alice_key.assert_(
        options["challenge"])), identity=kit.alice)
    token = gate.receipt(request_id)
    request = gate.request(request_id)
    got = receipts.verify(token, gate.jwks(), request_id=request_id,
                          args_hash=request.args_hash)
    (approval,) = got.approvals
    assert approval.approver == "alice"
    assert isinstance(approval.passkey, dict)
    assert approval.passkey["passkey"] == kit.alice_key.id
    assert approval.passkey["challenge"]["args_hash"] == request.args_hash


def test_a_registration_started_on_one_server_finishes_on_another(
        workspace: Path, store: Store) -> None:
    """Servers with signing keys keep no registration state: the challenge is signed by the
    server that made it, and any server of the deployment takes the answer — once."""
    from signoff import keys

    kit = Kit(workspace, store)
    policy = kit.gate.policy
    one = Gate(policy, store, signing_key=keys.SigningKey.generate())
    other = Gate(policy, store, signing_key=keys.SigningKey.generate())
    carol, _ = one.add_user("carol")
    softkey = SoftKey()
    options = one.passkeys.registration_options(carol, rp_id=RP_ID, origin=ORIGIN)
    answer = softkey.register(options)
    assert other.passkeys.register(carol, answer, name="laptop").user == "carol"
    with pytest.raises(SignatureInvalid) as again:  # the same answer a second time
        one.passkeys.register(carol, answer, name="laptop")
    assert again.value.code == "passkey_invalid"
    dave, _ = one.add_user("dave")  # carol's challenge is not dave's to answer
    stolen = SoftKey().register(one.passkeys.registration_options(carol, rp_id=RP_ID,
                                                                  origin=ORIGIN))
    with pytest.raises(SignatureInvalid):
        other.passkeys.register(dave, stolen, name="x")
    outsider = keys.SigningKey.generate()  # never published: a challenge it signed is nobody's
    forged = outsider.jws({"user": "carol", "rp_id": RP_ID, "origin": ORIGIN,
                           "exp": 1e12, "nonce": "x"}, typ="signoff-passkey-registration+jws")
    with pytest.raises(SignatureInvalid):
        other.passkeys.register(carol, SoftKey().register(
            {"challenge": keys.b64url(forged.encode())}), name="y")
