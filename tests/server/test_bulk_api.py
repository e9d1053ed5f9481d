"""Bulk approval over HTTP (issue 48, item 3), on both backends: ``POST
/api/v1/requests/bulk-decisions`` approves each listed call by its own decision, under the
rules of one-by-one decisions, and answers what it approved and what it refused, with codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from bulk_policy import POLICY, add_people
from signoff import Gate, Policy
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from signoff.store.base import Store

ZERO = "sha256:" + "0" * 64
URL = "/api/v1/requests/bulk-decisions"


@dataclass
class Service:
    gate: Gate
    url: str
    tokens: dict[str, str]

    def client(self, name: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10,
                            headers={"Authorization": f"Bearer {self.tokens[name]}"})

    def ask(self, tool: str, args: dict[str, Any], call_id: str, *, by: str = "bot",
            thread: str = "t-bulk") -> str:
        with self.client(by) as client:
            answer = client.post("/api/v1/calls", json={
                "tool": tool, "args": args, "call_id": call_id,
                "context": {"thread_id": thread}})
        assert answer.status_code == 200 and answer.json()["status"] == "pending", answer.text
        return str(answer.json()["request_id"])

    def shown(self, *ids: str) -> list[dict[str, str]]:
        with self.client("ann") as ann:
            return [{"request_id": i, "args_hash": ann.get(f"/api/v1/requests/{i}").json()[
                "args_hash"]} for i in ids]

    def status(self, request_id: str) -> str:
        return self.gate.get_request(request_id).status.value


@pytest.fixture
def service(store: Store) -> Iterator[Service]:
    gate = Gate(Policy.from_toml(POLICY, source="bulk.toml"), store)
    tokens = add_people(gate)
    server = ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)).start()
    try:
        yield Service(gate=gate, url=server.url, tokens=tokens)
    finally:
        server.stop()


def _refused(answer: httpx.Response) -> list[tuple[str, str]]:
    assert answer.status_code == 200, answer.text
    return [(r["request_id"], r["code"]) for r in answer.json()["refused"]]


def test_one_post_approves_each_call_and_reports_the_rest(service: Service) -> None:
    ids = [service.ask("execute", {"command": f"pytest t{i}.py"}, f"c{i}") for i in range(3)]
    refund = service.ask("refund", {"amount": "5"}, "r1")
    sign = service.ask("sign", {"doc": "a"}, "s1")
    own = service.ask("execute", {"command": "pytest mine.py"}, "o1", by="ann",
                      thread="t-ann")
    listed = [*service.shown(*ids, own), {"request_id": "req_gone", "args_hash": ZERO}]
    with service.client("ann") as ann:
        answer = ann.post(URL, json={"calls": listed})
        assert _refused(answer) == [(own, "self_approval"), ("req_gone", "not_found")]
        body = answer.json()
        assert body["approved"] == ids and body["recorded"] == []
        assert body["shape"] == "execute(command): pytest"
        assert body["shape_parts"] == {"tool": "execute", "keys": ["command"],
                                       "commands": ["pytest"]}
        assert [d["request_id"] for d in body["decisions"]] == ids
        # each decision with its request as the decision left it (what a Client reads)
        assert [(d["request"]["id"], d["request"]["status"], d["request"]["args_hash"])
                for d in body["decisions"]] == [(c["request_id"], "approved", c["args_hash"])
                                                for c in listed[:3]]
        # mandatory and passkey asks are refused even when forged into a listing
        for rid, code in ((refund, "mandatory"), (sign, "passkey_required")):
            assert _refused(ann.post(URL, json={"calls": service.shown(rid)})) == [(rid, code)]
            assert service.gate.decisions(rid) == []
        decisions = ann.get(f"/api/v1/requests/{ids[0]}").json()["decisions"]
        assert [(d["approver"], d["kind"], d["scope"]) for d in decisions] == [
            ("ann", "approve", "once")]
    assert [service.status(i) for i in ids] == ["approved"] * 3
    assert service.status(own) == "pending"


def test_roles_quorum_and_changed_hashes_hold_per_call(service: Service) -> None:
    ids = [service.ask("deploy", {"env": f"e{i}"}, f"d{i}") for i in range(2)]
    shown = service.shown(*ids)
    with service.client("cy") as cy:  # no ops role
        assert _refused(cy.post(URL, json={"calls": shown})) == [(i, "role_missing")
                                                                 for i in ids]
    with service.client("bob") as bob:  # bob edits the second: one vote, a new hash
        edited = bob.post(f"/api/v1/requests/{ids[1]}/decisions",
                          json={"kind": "edit", "args": {"env": "elsewhere"}})
        assert edited.status_code == 200, edited.text
    with service.client("ann") as ann:
        answer = ann.post(URL, json={"calls": shown})
        assert _refused(answer) == [(ids[1], "args_changed")]
        assert answer.json()["recorded"] == [ids[0]]  # one vote of two
    with service.client("bob") as bob:
        assert bob.post(URL, json={"calls": shown[:1]}).json()["approved"] == [ids[0]]
    assert [service.status(i) for i in ids] == ["approved", "pending"]


def test_bad_listings_are_typed_and_write_nothing(service: Service) -> None:
    git = service.ask("execute", {"command": "git status"}, "g1")
    push = service.ask("execute", {"command": "git push"}, "g2")
    head = list(service.gate.audit_events())[-1].index  # sealed first
    with service.client("ann") as ann:
        for calls, status, code in (
                (service.shown(git, push), 422, "mixed_shapes"),
                ([], 422, "nothing_listed"),
                (service.shown(git, git), 422, "duplicate_listed"),
                ([{"request_id": git, "args_hash": "md5:x"}], 422, "invalid_args_hash"),
                ([{"request_id": "a b", "args_hash": ZERO}], 422, "invalid_identifier")):
            answer = ann.post(URL, json={"calls": calls})
            assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
        many = ann.post(URL, json={"calls": [{"request_id": f"r{i}", "args_hash": ZERO}
                                             for i in range(101)]})
        assert (many.status_code, many.json()["code"]) == (422, "too_many_listed")
        long = ann.post(URL, json={"calls": [{"request_id": git, "args_hash": ZERO + "0"}]})
        assert (long.status_code, long.json()["code"]) == (422, "invalid_args_hash")
        assert ann.post(URL, json={"kind": "reject", "calls": []}).status_code == 422
    with service.client("bot") as bot:
        answer = bot.post(URL, json={"calls": service.shown(git)})
        assert answer.status_code == 403, answer.text
    assert [e.kind for e in service.gate.audit_events(after=head)] == []
    assert {service.status(i) for i in (git, push)} == {"pending"}
