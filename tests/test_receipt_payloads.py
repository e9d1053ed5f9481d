"""``signoff.receipts`` alone (no gate, no store): a payload round-trips through its
signature, a passkey assertion on a decision record is carried, a malformed payload is
refused, ``peek`` shows without trusting, and a request without an expiry gets the
lifetime."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from signoff import keys, receipts
from signoff.errors import SignatureInvalid
from signoff.identity import Identity
from signoff.kernel.receipts import Receipts
from signoff.kernel.signing import Signing
from signoff.model import ApprovalRequest, DecisionKind, DecisionRecord, RequestStatus, Risk

RECEIPT = receipts.Receipt(
    version=1, issuer="https://signoff.test", request_id="req_1", tool="deploy",
    args_hash="sha256:" + "a" * 64, proposed_hash="sha256:" + "a" * 64, definition_hash=None,
    thread_id="t1", approvals=(receipts.Approval("alice", ("ops",), "approve", "once", 10.0),),
    policy_version="p-1", approved_at=10.0, expires_at=4000.0)


def test_a_receipt_round_trips_through_its_signature() -> None:
    key = keys.SigningKey.generate()
    token = receipts.sign(RECEIPT, key)
    got = receipts.verify(token, keys.jwks([key.jwk()]), now=100.0)
    assert dataclasses.replace(got, kid="") == RECEIPT and got.kid == key.kid
    assert receipts.peek(token) == got  # what it says, unverified
    with pytest.raises(SignatureInvalid) as late:
        receipts.verify(token, keys.jwks([key.jwk()]), now=4000.0)
    assert late.value.code == "expired"
    assert receipts.verify(token, keys.jwks([key.jwk()]), now=4000.0, leeway=5).request_id


@dataclasses.dataclass(frozen=True)
class WithPasskey:
    """A decision record as the passkey helper extends it: an ``assertion`` field."""

    assertion: Any


def test_a_passkey_assertion_on_the_record_is_carried() -> None:
    assertion = {"credential_id": "cred-1", "authenticator_data": "AAAA", "signature": "BBBB",
                 "client_data_json": "CCCC"}
    assert receipts.passkey_of(WithPasskey(assertion)) == assertion
    assert receipts.passkey_of(WithPasskey(None)) is None
    assert receipts.passkey_of(WithPasskey(object())) is None  # not JSON: left out
    assert receipts.passkey_of(object()) is None  # a record without the field
    with_passkey = dataclasses.replace(RECEIPT, approvals=(dataclasses.replace(
        RECEIPT.approvals[0], passkey=assertion),))
    key = keys.SigningKey.generate()
    got = receipts.verify(receipts.sign(with_passkey, key), keys.jwks([key.jwk()]), now=1.0)
    assert got.approvals[0].passkey == assertion


@pytest.mark.parametrize("change", [
    {"version": 2}, {"approvals": []}, {"approvals": "alice"}, {"iss": ""}, {"exp": "soon"},
    {"iat": True}, {"request_id": None}, {"approvals": [{"approver": "alice"}]}])
def test_a_payload_that_is_not_a_receipt_is_malformed(change: dict[str, Any]) -> None:
    key = keys.SigningKey.generate()
    token = key.jws({**RECEIPT.to_dict(), **change}, typ=receipts.TYP)
    with pytest.raises(SignatureInvalid) as refused:
        receipts.verify(token, keys.jwks([key.jwk()]), now=1.0)
    assert refused.value.code == "malformed"
    with pytest.raises(SignatureInvalid):
        receipts.peek(token)


def test_a_jws_of_another_type_is_no_receipt() -> None:
    key = keys.SigningKey.generate()
    token = key.jws(RECEIPT.to_dict(), typ="signoff-checkpoint+jws")
    with pytest.raises(SignatureInvalid) as refused:
        receipts.verify(token, keys.jwks([key.jwk()]), now=1.0)
    assert refused.value.code == "malformed"


class _Tx:
    def __init__(self) -> None:
        self.kept: list[tuple[str, str]] = []

    def put_receipt(self, request_id: str, token: str, *, kid: str, at: float) -> None:
        self.kept.append((request_id, token))


def test_a_request_without_an_expiry_gets_the_lifetime() -> None:
    key = keys.SigningKey.generate()
    signing = Signing.__new__(Signing)  # a key, no store: nothing here publishes
    signing.key = key
    part = Receipts(None, signing, issuer="https://signoff.test", lifetime=600.0)  # type: ignore[arg-type]
    request = ApprovalRequest(id="req_2", call_id="c", tool="note", args="{}",
                              args_hash="sha256:" + "b" * 64, status=RequestStatus.APPROVED,
                              risk=Risk.LOW, summary="", policy_version="p", created_at=1.0,
                              updated_at=2.0, expires_at=None)
    record = DecisionRecord(id="dec_1", request_id="req_2", kind=DecisionKind.APPROVE,
                            approver="bob", created_at=2.0, args_hash=request.args_hash)
    tx = _Tx()
    token = part.issue(tx, request, record, Identity(name="bob", roles=("ops",)), [],  # type: ignore[arg-type]
                       now=2.0)
    assert token is not None and tx.kept == [("req_2", token)]
    got = receipts.verify(token, keys.jwks([key.jwk()]), now=3.0)
    assert got.expires_at == 602.0 and got.approvals[0].roles == ("ops",)
