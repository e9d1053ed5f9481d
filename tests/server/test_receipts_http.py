"""Receipts over HTTP, on a real server: the public JWKS, a request's receipt for its asker
and approvers, the claim that hands it over, and ``Client`` reading both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_helpers import Served, propose_deploy, serve

from signoff import receipts
from signoff.canonical import args_hash
from signoff.errors import NotFound
from signoff.kernel.execution import Execution
from signoff.keys import SigningKey
from signoff.remote import Client

KEY = SigningKey.generate()


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, signing_key=KEY)


def _approve(served: Served, request_id: str) -> None:
    for token in (served.alice, served.bob):
        with served.client(token) as approver:
            answer = approver.post(f"/api/v1/requests/{request_id}/decisions",
                                   json={"kind": "approve"})
            assert answer.status_code == 200, answer.text


def test_the_jwks_is_public_cacheable_and_verifies_the_receipt(signed: Served) -> None:
    rid = propose_deploy(signed, "t-1")
    with signed.client(signed.agent) as agent:
        missing = agent.get(f"/api/v1/requests/{rid}/receipt")
        assert missing.status_code == 404 and missing.json()["code"] == "receipt_unavailable"
        _approve(signed, rid)
        answer = agent.get(f"/api/v1/requests/{rid}/receipt")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    keys = httpx.get(signed.url + "/.well-known/jwks.json")  # no token
    assert keys.status_code == 200 and "max-age" in keys.headers["cache-control"]
    schema = httpx.get(signed.url + "/openapi.json").json()["paths"]
    assert schema["/.well-known/jwks.json"]["get"]["security"] == []  # public, as served
    assert "/api/v1/requests/{request_id}/receipt" in schema
    assert [k["kid"] for k in keys.json()["keys"]] == [KEY.kid]
    got = receipts.verify(body["receipt"], keys.json(), request_id=rid,
                          args_hash=args_hash({"env": "prod"}), issuer="https://signoff.test")
    assert body["kid"] == got.kid == KEY.kid
    assert body["payload"] == got.to_dict()
    assert sorted(a.approver for a in got.approvals) == ["alice", "bob"]
    # Approvers read every receipt; an agent that did not ask is told nothing exists.
    with signed.client(signed.carol) as carol:
        assert carol.get(f"/api/v1/requests/{rid}/receipt").json()["receipt"] == body["receipt"]
    _, stranger = signed.gate.add_user("other-bot", kind="agent")
    with signed.client(stranger) as other:
        refused = other.get(f"/api/v1/requests/{rid}/receipt")
    assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    with signed.client() as anonymous:
        assert anonymous.get(f"/api/v1/requests/{rid}/receipt").status_code == 401
    # The claim hands over the same receipt with the arguments to run.
    with signed.client(signed.agent) as agent:
        claimed = agent.post(f"/api/v1/calls/{rid}/claim")
    assert claimed.status_code == 200 and claimed.json()["receipt"] == body["receipt"]


def test_the_client_reads_the_receipt_and_the_keys(signed: Served) -> None:
    rid = propose_deploy(signed, "t-2")
    client = Client(signed.url, token=signed.agent)
    try:
        with pytest.raises(NotFound) as unavailable:
            client.receipt(rid)
        assert unavailable.value.code == "receipt_unavailable"
        _approve(signed, rid)
        execution = client.claim(rid)
        assert isinstance(execution, Execution) and execution.receipt is not None
        assert execution.receipt == client.receipt(rid)
        got = receipts.verify(execution.receipt, client.jwks(), request_id=rid,
                              args_hash=args_hash(execution.args))
        assert got.tool == "deploy"
    finally:
        client.close()


def test_a_server_without_a_key_serves_an_empty_jwks_and_no_receipt(served: Served) -> None:
    rid = propose_deploy(served, "t-3")
    _approve(served, rid)
    assert httpx.get(served.url + "/.well-known/jwks.json").json() == {"keys": []}
    with served.client(served.agent) as agent:
        missing = agent.get(f"/api/v1/requests/{rid}/receipt")
        claimed = agent.post(f"/api/v1/calls/{rid}/claim").json()
    assert missing.status_code == 404 and missing.json()["code"] == "receipt_unavailable"
    assert claimed["receipt"] is None
