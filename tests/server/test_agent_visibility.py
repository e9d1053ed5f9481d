"""Agents see their own calls, on a real ``signoff serve`` over both backends: an agent
token lists and reads only the requests it asked and their results — another agent's
are not found, a list of another requester's is refused — and the surfaces that span
every requester (the audit log, the event stream, the inbox) need an approver, who
sees everything."""

from __future__ import annotations

import json

import httpx
import pytest
from procs import Live
from test_sessions import code

from signoff import errors
from signoff.remote import Client

SHARED = "t-shared"


def _propose(client: httpx.Client, call_id: str, command: str) -> str:
    answer = client.post("/api/v1/calls", json={
        "tool": "execute", "args": {"command": command}, "call_id": call_id,
        "context": {"thread_id": SHARED}}).json()
    assert answer["status"] == "pending", answer
    return str(answer["request_id"])


@pytest.fixture
def two_agents(live: Live) -> tuple[str, str, str]:
    """bot's and bot2's requests on one thread, bot2's run with a secret result; the
    second agent's token."""
    added = json.loads(live.cli("users", "add", "bot2", "--kind", "agent", "--json").stdout)
    with live.client("bot") as bot, live.server.client(added["token"]) as bot2, \
            live.client("ann") as ann:
        mine = _propose(bot, "mine", "make build")
        theirs = _propose(bot2, "theirs", "make deploy-secret")
        for request_id in (mine, theirs):
            assert ann.post(f"/api/v1/requests/{request_id}/decisions",
                            json={"kind": "approve"}).status_code == 200
        claim = bot2.post(f"/api/v1/calls/{theirs}/claim").json()
        done = bot2.post(f"/api/v1/calls/{theirs}/result", json={
            "fencing_token": claim["fencing_token"], "result": "secret-of-bot2"})
        assert done.status_code == 200 and done.json()["result"] == "secret-of-bot2"
    return mine, theirs, str(added["token"])


@pytest.mark.slow
def test_an_agent_lists_and_reads_only_its_own_calls(live: Live,
                                                     two_agents: tuple[str, str, str]) -> None:
    mine, theirs, bot2_token = two_agents
    with live.client("bot") as bot:
        listed = bot.get("/api/v1/requests")
        assert listed.status_code == 200
        assert [r["id"] for r in listed.json()["requests"]] == [mine]
        assert "secret" not in listed.text
        for query in ({"thread_id": SHARED}, {"q": "deploy"}, {"status": "succeeded"}):
            found = bot.get("/api/v1/requests", params=query).json()["requests"]
            assert theirs not in [r["id"] for r in found], query
        refused = bot.get("/api/v1/requests", params={"requester": "bot2"})
        assert refused.status_code == 403 and code(refused) == "not_your_request"
        assert bot.get("/api/v1/requests", params={"requester": "bot"}).status_code == 200

        # another's request, outcome (with its result) and claim: as if it did not exist
        for route in ("/api/v1/requests", "/api/v1/calls"):
            unknown = bot.get(f"{route}/req_does_not_exist")
            answer = bot.get(f"{route}/{theirs}")
            assert answer.status_code == 404 and code(answer) == "not_found", route
            assert answer.json()["detail"].replace(theirs, "X") == \
                unknown.json()["detail"].replace("req_does_not_exist", "X")
            assert "secret" not in answer.text
        for path, body in ((f"/api/v1/calls/{theirs}/claim", None),
                           (f"/api/v1/requests/{theirs}/cancel", {"reason": "mine now"})):
            answer = bot.post(path, json=body)
            assert answer.status_code == 404 and code(answer) == "not_found", path
        thread = bot.get(f"/api/v1/threads/{SHARED}").json()
        assert theirs not in [r["id"] for r in thread["pending"]]

        # its own: read in full
        own = bot.get(f"/api/v1/requests/{mine}")
        assert own.status_code == 200 and own.json()["args"] == {"command": "make build"}
        assert bot.get(f"/api/v1/calls/{mine}").json()["kind"] == "approved"

        # what spans every requester needs an approver
        for path in ("/api/v1/audit", "/api/v1/events", "/inbox", "/requests",
                     f"/requests/{theirs}", f"/threads/{SHARED}"):
            with bot.stream("GET", path) as answer:  # an open event stream never ends
                assert answer.status_code == 403, path
                answer.read()
                assert code(answer) == "approver_required", path
    with live.server.client(bot2_token) as bot2:
        assert bot2.get(f"/api/v1/calls/{theirs}").json()["result"] == "secret-of-bot2"
        assert [r["id"] for r in bot2.get("/api/v1/requests").json()["requests"]] == [theirs]


@pytest.mark.slow
def test_the_python_client_of_an_agent_sees_its_own(live: Live,
                                                     two_agents: tuple[str, str, str]) -> None:
    mine, theirs, _ = two_agents
    with Client(live.url, live.tokens["bot"]) as bot:
        assert [r["id"] for r in bot.requests()] == [mine]
        with pytest.raises(errors.NotFound) as caught:
            bot.request(theirs)
        assert caught.value.code == "not_found"
        with pytest.raises(errors.NotFound):
            bot.outcome(theirs)
        with pytest.raises(errors.Forbidden) as refused:
            bot.audit()
        assert refused.value.code == "approver_required"


@pytest.mark.slow
def test_an_approver_lists_and_reads_every_call(live: Live,
                                                two_agents: tuple[str, str, str]) -> None:
    mine, theirs, _ = two_agents
    for user in ("cy", "boss"):  # an approver without roles, and an admin
        with live.client(user) as person:
            listed = [r["id"] for r in person.get("/api/v1/requests").json()["requests"]]
            assert set(listed) == {mine, theirs}
            by = person.get("/api/v1/requests", params={"requester": "bot2"}).json()
            assert [r["id"] for r in by["requests"]] == [theirs]
            assert person.get(f"/api/v1/calls/{theirs}").json()["result"] == "secret-of-bot2"
            assert person.get(f"/api/v1/requests/{theirs}").status_code == 200
            assert person.get("/api/v1/audit").status_code == 200
            assert person.get("/inbox").status_code == 200
