"""``signoff.remote``: the whole gate over HTTP, against a real server."""

from __future__ import annotations

import threading
import time

import pytest
from server_helpers import Served

from signoff import errors
from signoff.kernel.outcomes import OutcomeKind
from signoff.remote import Client


def approve_when_pending(served: Served, *, edit: dict[str, str] | None = None,
                         reject: str | None = None) -> threading.Thread:
    def decide() -> None:
        with Client(served.url, served.alice) as alice:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pending = alice.requests(status="pending")
                if pending:
                    request_id = pending[0]["id"]
                    if edit is not None:
                        alice.decide(request_id, "edit", args=edit)
                    elif reject is not None:
                        alice.decide(request_id, "reject", reason=reject,
                                     alternatives=["make test"])
                    else:
                        alice.decide(request_id, "approve")
                    return
                time.sleep(0.02)

    thread = threading.Thread(target=decide)
    thread.start()
    return thread


def test_run_proposes_waits_claims_runs_and_reports(served: Served) -> None:
    ran: list[dict[str, str]] = []

    def execute(command: str) -> str:
        ran.append({"command": command})
        return f"ran {command}"

    approver = approve_when_pending(served, edit={"command": "make test"})
    with Client(served.url, served.agent) as agent:
        outcome = agent.run("execute", {"command": "make build"}, fn=execute,
                            call_id="c1", thread_id="t1", timeout=20)
    approver.join()
    assert (outcome.kind, outcome.result) == (OutcomeKind.EXECUTED, "ran make test")
    assert ran == [{"command": "make test"}]  # exactly the edited call, once
    with Client(served.url, served.alice) as alice:
        shown = alice.request(outcome.request_id or "")
    assert shown["status"] == "succeeded"


def test_run_returns_rejections_and_denials_as_data(served: Served) -> None:
    approver = approve_when_pending(served, reject="not on a Friday")
    with Client(served.url, served.agent) as agent:
        rejected = agent.run("execute", {"command": "make deploy"}, fn=print, call_id="c2",
                             thread_id="t2", timeout=20)
        denied = agent.run("execute", {"command": "rm -rf ."}, fn=print, call_id="c3")
        allowed = agent.run("read_file", {"path": "README.md"}, fn=lambda path: path,
                            call_id="c4")
    approver.join()
    assert (rejected.kind, rejected.reason, rejected.alternatives) == \
        (OutcomeKind.REJECTED, "not on a Friday", ("make test",))
    assert denied.kind is OutcomeKind.DENIED
    assert (allowed.kind, allowed.result) == (OutcomeKind.EXECUTED, "README.md")


def test_errors_arrive_as_the_same_types_and_codes(served: Served) -> None:
    with Client(served.url, "so_wrong") as stranger, \
            pytest.raises(errors.Unauthenticated) as unauth:
        stranger.requests()
    assert unauth.value.code == "unauthenticated"
    with Client(served.url, served.agent) as agent:
        answer = agent.propose("execute", {"command": "make build"}, call_id="c5",
                               thread_id="t5")
        assert answer.status == "pending"
        with pytest.raises(errors.Forbidden) as forbidden:
            agent.decide(answer.request_id or "", "approve")
        assert forbidden.value.code == "agent_cannot_decide"
        with pytest.raises(errors.NotFound):
            agent.outcome("req_missing")
        with pytest.raises(errors.InvalidArguments) as too_big:
            agent.propose("execute", {"n": 2**60}, call_id="c6")
        assert too_big.value.code == "integer_out_of_range"
        still = agent.wait(answer.request_id or "", timeout=0.2)
        assert still.kind is OutcomeKind.PENDING
    with Client(served.url, served.alice) as alice:
        alice.decide(answer.request_id or "", "approve")
        with pytest.raises(errors.Conflict) as late:
            alice.decide(answer.request_id or "", "approve")
        assert (late.value.code, late.value.status) == ("already_decided", "approved")
        assert alice.check("execute", {"command": "rm -rf /"})["effect"] == "deny"
        assert alice.set_mode("t9", "auto")["review_mode"] == "auto"
        assert alice.thread("t9")["stored"] is True
        assert alice.audit(verify=True)["verified"] is True
    with Client("http://127.0.0.1:9", served.alice) as nowhere, \
            pytest.raises(errors.StoreError) as down:
        nowhere.requests()
    assert down.value.code == "server_unreachable"
