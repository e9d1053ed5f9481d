"""``/calls/{id}`` takes the agent's own call id as well as the request id: the outcome,
the claim and the result all find the call by either, only among the caller's own
calls; a call id used on two threads needs ``?thread_id=``; an unknown id is a 404 that
says which ids the route takes."""

from __future__ import annotations

from server_helpers import Served, propose_make
from test_api import problem


def _propose(served: Served, token: str, thread: str, call_id: str) -> str:
    with served.client(token) as agent:
        answer = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": call_id,
            "context": {"thread_id": thread}}).json()
    assert answer["status"] == "pending", answer
    return str(answer["request_id"])


def test_the_agents_call_id_finds_its_call(served: Served) -> None:
    request_id = propose_make(served, "t-ids", call_id="tool-call-7")
    with served.client(served.agent) as agent, served.client(served.alice) as alice:
        by_call = agent.get("/api/v1/calls/tool-call-7")
        by_request = agent.get(f"/api/v1/calls/{request_id}")
        assert by_call.status_code == by_request.status_code == 200, by_call.text
        assert by_call.json() == by_request.json()
        assert by_call.json()["kind"] == "pending"
        assert alice.post(f"/api/v1/requests/{request_id}/decisions",
                          json={"kind": "approve"}).status_code == 200
        assert agent.get("/api/v1/calls/tool-call-7?wait=0").json()["kind"] == "approved"
        claim = agent.post("/api/v1/calls/tool-call-7/claim")
        assert claim.status_code == 200 and claim.json()["request_id"] == request_id
        done = agent.post("/api/v1/calls/tool-call-7/result", json={
            "fencing_token": claim.json()["fencing_token"], "result": "built"})
        assert done.status_code == 200 and done.json()["result"] == "built"
        assert agent.get(f"/api/v1/calls/{request_id}").json()["kind"] == "executed"
        # An approver finds it by call id too.
        assert alice.get("/api/v1/calls/tool-call-7").json()["result"] == "built"


def test_a_call_id_is_scoped_to_the_callers_calls(served: Served) -> None:
    _, other = served.gate.add_user("bot2", roles=[], kind="agent")
    mine = _propose(served, served.agent, "t-a", "shared-id")
    theirs = _propose(served, other, "t-b", "shared-id")
    with served.client(served.agent) as bot, served.client(other) as bot2, \
            served.client(served.alice) as alice:
        assert bot.get("/api/v1/calls/shared-id").json()["request_id"] == mine
        assert bot2.get("/api/v1/calls/shared-id").json()["request_id"] == theirs
        # bot2's request id is not bot's: the same 404 as an id nobody has.
        unknown = problem(bot.get(f"/api/v1/calls/{theirs}"), 404, "not_found")
        assert problem(bot.get("/api/v1/calls/nobody-has-this"), 404,
                       "not_found")["detail"].startswith("no call 'nobody-has-this'")
        assert unknown["detail"] == (
            f"no call {theirs!r}: /calls/{{id}} takes the request_id that POST /calls "
            "answered with, or the call_id the agent proposed with")
        problem(bot.post(f"/api/v1/calls/{theirs}/claim"), 404, "not_found")
        # An approver sees both: the call id alone is ambiguous, the thread picks one.
        ambiguous = problem(alice.get("/api/v1/calls/shared-id"), 409, "call_id_ambiguous")
        assert "'t-a'" in ambiguous["detail"] and "'t-b'" in ambiguous["detail"]
        assert "?thread_id=" in ambiguous["detail"]
        picked = alice.get("/api/v1/calls/shared-id", params={"thread_id": "t-b"})
        assert picked.json()["request_id"] == theirs
        problem(alice.get("/api/v1/calls/shared-id", params={"thread_id": "t-c"}), 404,
                "not_found")
        # A request id on another thread than the one named is not that call.
        problem(alice.get(f"/api/v1/calls/{mine}", params={"thread_id": "t-b"}), 404,
                "not_found")
