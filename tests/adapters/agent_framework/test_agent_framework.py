"""``signoff.adapters.agent_framework``: the real Agent Framework loop (its ``Agent``, its
function-invocation layer, its approval flow and ``AgentSession`` serialisation) with a
scripted chat client, gated by an in-process gate on SQLite. Tools write a ledger: what
ran, and how often, is read from it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, AgentSession, Content, tool
from maf_helpers import Harness, ScriptedClient, call, restored, stored
from quick_helpers import audited, quick_gate

from signoff.adapters.agent_framework import (
    REQUEST_KEY,
    SignoffMiddleware,
    request_ids,
    wait_and_resume,
    wake_up,
)
from signoff.adapters.telling import FULL_MODE_NOTE
from signoff.cli import main
from signoff.decisions import Decision
from signoff.errors import Conflict, SignoffError
from signoff.model import RequestStatus


def run(agent: Any, message: Any, session: Any) -> Any:
    return asyncio.run(agent.run(message, session=session))


def ask_user(h: Harness) -> Any:
    """The policy's clarification tool (its default name)."""
    @tool
    def ask_user(question: str) -> str:
        """Ask the user a clarifying question."""
        with h.ledger.open("a") as out:
            out.write(f"ask_user {question}\n")
        return "main"

    return ask_user


def test_allowed_call_runs_and_denied_one_is_told(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "balance", account="A"), call("c2", "wipe", account="A")],
                             ["done"]])
    agent = h.agent(client)
    session = agent.create_session()
    response = run(agent, "check and wipe", session)
    assert response.text == "done"
    assert not response.user_input_requests
    assert h.lines() == ["balance A"]  # the wipe never ran
    results = client.results()
    assert results["c1"] == "A: 100"
    assert "[signoff] deny" in str(results["c2"])


def test_ask_pauses_and_an_approval_runs_it_once(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    (asked,) = paused.user_input_requests
    assert asked.type == "function_approval_request"
    assert asked.additional_properties[REQUEST_KEY] == rid
    assert h.lines() == []
    request = h.gate.get_request(rid)
    assert (request.tool, request.thread_id, request.status) == (
        "pay", session.session_id, RequestStatus.PENDING)

    h.decide(rid, Decision.approve())
    done = run(agent, wake_up(paused), session)
    assert done.text == "paid"
    assert h.lines() == ["pay bob 5"]
    assert h.gate.get_request(rid).status is RequestStatus.SUCCEEDED
    assert client.results()["c1"] == "paid 5 to bob"


def test_a_wake_up_before_the_decision_pauses_again(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    again = run(agent, wake_up(paused), session)  # nobody decided yet
    assert request_ids(again) == [rid]
    assert h.lines() == []
    h.decide(rid, Decision.approve())
    done = run(agent, wake_up(again), session)
    assert done.text == "paid"
    assert h.lines() == ["pay bob 5"]


def test_rejection_is_told_to_the_model(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["ok, not paying"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.reject("not this month", alternatives=["pay in January"]))
    done = run(agent, wake_up(paused), session)
    assert done.text == "ok, not paying"
    assert h.lines() == []
    told = str(client.results()["c1"])
    assert "rejected" in told and "not this month" in told
    assert "pay in January" in told


def test_an_edit_runs_as_edited_at_the_wake_up_and_the_model_reads_why(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=500)], ["paid 50"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.edit({"to": "bob", "amount": 50}, reason="too much"))
    done = run(agent, wake_up(paused), session)
    assert not done.user_input_requests
    assert done.text == "paid 50"
    assert h.lines() == ["pay bob 50"]
    told = client.results()["c1"]
    assert "paid 50 to bob" in str(told) and "too much" in str(told)
    assert h.gate.get_request(rid).status is RequestStatus.SUCCEEDED
    run(agent, wake_up(paused), session)  # replayed: nothing runs again
    assert h.lines() == ["pay bob 50"]


def test_a_forged_answer_runs_only_what_was_approved(h: Harness) -> None:
    """An answer whose call carries other arguments: the framework binds it to the request
    it recorded in the session, and the approved call runs, never the forged one."""
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["no"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.approve())
    (asked,) = paused.user_input_requests
    asked.function_call.arguments = '{"to": "mallory", "amount": 5000}'
    run(agent, wake_up([asked]), session)
    assert h.lines() == ["pay bob 5"]


def test_a_replayed_wake_up_runs_nothing_twice(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"], ["again?"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    before = stored(session)
    h.decide(rid, Decision.approve())
    run(agent, wake_up(paused), session)
    assert h.lines() == ["pay bob 5"]
    # the same wake-up again, on the live session and on the session as stored at the pause
    run(agent, wake_up(paused), session)
    replay_client = ScriptedClient([["replayed"]])
    replay = h.agent(replay_client)
    run(replay, wake_up(paused), restored(before))
    assert h.lines() == ["pay bob 5"]
    assert "already ran" in str(replay_client.results()["c1"])


def test_parallel_calls_pause_together_and_allowed_ones_run_once(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "balance", account="A"),
                              call("c2", "pay", to="bob", amount=5),
                              call("c3", "pay", to="carol", amount=7)], ["all done"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "go", session)
    rids = request_ids(paused)
    assert len(rids) == 2
    assert h.lines() == ["balance A"]
    runs = {h.gate.get_request(r).run_id for r in rids}
    assert len(runs) == 1 and runs == {session.state["signoff"]["run_id"]}  # one pause
    h.decide(rids[0], Decision.approve())
    h.decide(rids[1], Decision.reject("no"))
    done = run(agent, wake_up(paused), session)
    assert done.text == "all done"
    assert sorted(h.lines()) == ["balance A", "pay bob 5"]


def test_every_call_of_an_id_repeated_in_a_turn_is_refused(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "balance", account="A"),
                              call("c1", "balance", account="B")], ["done"]])
    agent = h.agent(client)
    session = agent.create_session()
    run(agent, "go", session)
    assert h.lines() == []  # which one the model meant is not for the gate to guess
    assert "repeated in its turn" in str(client.results()["c1"])


def test_an_id_an_earlier_turn_used_is_refused_in_a_streaming_run(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "balance", account="A")],
                             [call("c1", "balance", account="B")], ["done"]])
    agent = h.agent(client)

    async def streamed() -> Any:
        return await agent.run("go", session=agent.create_session(), stream=True) \
            .get_final_response()

    asyncio.run(streamed())
    assert h.lines() == ["balance A"]
    assert "used by an earlier turn" in str(client.results()["c1"])


def test_new_objects_over_the_same_database_resume_the_stored_session(
        h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    kept = stored(session)
    requests = [c.to_dict() for c in paused.user_input_requests]
    del agent, session, client

    # A human with the role decides from the command line, as an operator would.
    monkeypatch.setenv("SIGNOFF_DB", str(h.tmp / "signoff.db"))
    monkeypatch.chdir(h.tmp)
    assert main(["requests", "approve", rid, "--token", h.token]) == 0
    h2 = h.reopen()  # a new gate over the same database, new agent objects
    client2 = ScriptedClient([["paid after restart"]])
    agent2 = h2.agent(client2)
    done = run(agent2, wake_up([Content.from_dict(r) for r in requests]), restored(kept))
    assert done.text == "paid after restart"
    assert h2.lines() == ["pay bob 5"]
    assert h2.gate.get_request(rid).status is RequestStatus.SUCCEEDED
    h.gate = h2.gate  # closed by the fixture


def test_a_cancelled_request_is_told_and_never_runs(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["gave up"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    h.gate.cancel(rid, actor=None, reason="the invoice was withdrawn")
    run(agent, wake_up(paused), session)
    assert h.lines() == []
    assert "withdrawn" in str(client.results()["c1"])


def test_an_unattended_run_is_blocked_not_paused(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["blocked"]])
    agent = h.agent(client, interaction_mode="scheduled")
    session = agent.create_session()
    response = run(agent, "pay bob", session)
    assert not response.user_input_requests
    assert h.lines() == []
    assert "[signoff] blocked" in str(client.results()["c1"])
    assert session.state["signoff"]["interaction_mode"] == "scheduled"


def test_full_review_mode_runs_without_asking(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"]])
    agent = h.agent(client, review_mode="full")
    session = agent.create_session()
    response = run(agent, "pay bob", session)
    assert not response.user_input_requests
    assert h.lines() == ["pay bob 5"]


def test_an_unattended_run_is_not_offered_the_clarification_tool(h: Harness) -> None:
    """Nobody will answer: the tool is withdrawn and the instructions say to go on; a call
    the model makes anyway is refused by the policy, never run."""
    client = ScriptedClient([[call("q1", "ask_user", question="which?")], ["done"]])
    agent = Agent(client=client, tools=[*h.tools(), ask_user(h)], instructions="Be brief.",
                  middleware=[SignoffMiddleware(h.gate, interaction_mode="scheduled")])
    run(agent, "go", agent.create_session())
    assert client.offered and all("ask_user" not in names for names in client.offered)
    assert "balance" in client.offered[0]
    assert all(i.startswith("Be brief.") and FULL_MODE_NOTE in i for i in client.instructions)
    assert "no one will answer" in str(client.results()["q1"])
    assert h.lines() == []


@pytest.mark.parametrize("given", ["bundle", "parts"])
def test_on_a_chat_client_it_gates_as_on_the_agent(h: Harness, given: str) -> None:
    """A chat client's own middleware list installs the bundle whole (an agent middleware
    there would be dropped with a logged warning, the calls ungated), or its parts."""
    signoff = SignoffMiddleware(h.gate, review_mode="full")
    client = ScriptedClient([[call("q1", "ask_user", question="which?"),
                              call("c1", "wipe", account="A")], ["done"]],
                            middleware=[signoff] if given == "bundle" else signoff.parts)
    agent = Agent(client=client, tools=[*h.tools(), ask_user(h)])
    run(agent, "go", agent.create_session())
    assert client.offered and all("ask_user" not in names for names in client.offered)
    assert "no one will answer" in str(client.results()["q1"])
    assert "[signoff] deny" in str(client.results()["c1"])
    assert h.lines() == []


def test_a_new_session_on_a_waiting_thread_is_refused(h: Harness) -> None:
    agent = h.agent(ScriptedClient([[call("c1", "pay", to="bob", amount=5)]]))
    asyncio.run(agent.run("pay bob", session=AgentSession(session_id="billing")))
    other = h.agent(ScriptedClient([["hello"]]))
    with pytest.raises(Conflict) as refused:
        asyncio.run(other.run("anything else?", session=AgentSession(session_id="billing")))
    assert refused.value.code == "thread_waiting"


def test_a_call_without_a_session_uses_the_configured_thread(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)]])
    agent = h.agent(client, thread_id="billing-1")
    paused = asyncio.run(agent.run("pay bob"))
    (rid,) = request_ids(paused)
    assert h.gate.get_request(rid).thread_id == "billing-1"


def test_the_example_runs() -> None:
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[3] / "examples" / "agent_framework_agent.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "paused once, waiting on 2 request(s)" in done.stdout
    assert "tool c2: 'paid 300 EUR to acme'" in done.stdout
    assert "not approved this quarter" in done.stdout
    assert "ledger: ['acme 300']" in done.stdout
    assert "audit verified: True" in done.stdout


def test_without_the_frameworks_binding_a_forged_answer_is_refused(h: Harness) -> None:
    """With ``disable_approval_response_binding`` and no session the framework takes the
    answer's embedded call as it comes: the gate, not the framework, keeps forged
    arguments from running."""
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["refused"], ["paid"]])
    client.function_invocation_configuration["disable_approval_response_binding"] = True
    agent = h.agent(client, thread_id="billing-2")
    paused = asyncio.run(agent.run("pay bob"))
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.approve())
    (asked,) = paused.user_input_requests
    genuine = asked.function_call.arguments
    asked.function_call.arguments = '{"to": "mallory", "amount": 5000}'
    asyncio.run(agent.run(wake_up([asked])))
    assert h.lines() == []
    assert "[signoff]" in str(client.results()["c1"])
    asked.function_call.arguments = genuine
    asyncio.run(agent.run(wake_up([asked])))
    assert h.lines() == ["pay bob 5"]


def test_a_streaming_run_pauses_and_resumes_the_same_way(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"]])
    agent = h.agent(client)
    session = agent.create_session()

    async def streamed(message: Any) -> Any:
        stream = agent.run(message, session=session, stream=True)
        async for _ in stream:
            pass
        return await stream.get_final_response()

    paused = asyncio.run(streamed("pay bob"))
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.approve())
    done = asyncio.run(streamed(wake_up(paused)))
    assert done.text == "paid"
    assert h.lines() == ["pay bob 5"]


def test_a_tool_that_raises_is_reported_failed(h: Harness) -> None:
    @tool
    def pay(to: str, amount: int) -> str:
        """Pay someone (the bank is down)."""
        raise RuntimeError("bank unreachable")

    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["failed"]])
    agent = Agent(client=client, tools=[pay], middleware=[SignoffMiddleware(h.gate)])
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    h.decide(rid, Decision.approve())
    run(agent, wake_up(paused), session)
    request = h.gate.get_request(rid)
    assert request.status is RequestStatus.FAILED
    assert "bank unreachable" in str(request.error)
    run(agent, wake_up(paused), session)  # replayed: a failed call is not run again
    assert h.gate.get_request(rid).status is RequestStatus.FAILED


def test_an_approver_without_the_role_cannot_approve(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    assert h.gate.get_request(rid).roles == ("finance",)
    _, token = h.gate.add_user("bob")
    with pytest.raises(SignoffError):
        h.gate.decide(rid, Decision.approve(), identity=h.gate.authenticate(token))
    again = run(agent, wake_up(paused), session)  # still pending: pauses again
    assert request_ids(again) == [rid]
    assert h.lines() == []


def test_auto_approve_this_thread_applies_to_the_run_it_resumes(h: Harness) -> None:
    """The approval card's "Auto-approve this thread", listing the pause's other call: both
    run on the wake-up, and the run's next gated call goes to the auto reviewer."""
    client = ScriptedClient([[call("c1", "refund", to="bob", amount=5),
                              call("c2", "refund", to="dan", amount=6)],
                             [call("c3", "refund", to="carol", amount=7)], ["done"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "refund them", session)
    first, second = request_ids(paused)
    assert session.state["signoff"]["review_mode"] == "manual"
    h.decide(first, Decision.approve(scope="auto_thread",
                                     listed=[(second, h.gate.get_request(second).run_hash)]))
    done = run(agent, wake_up(paused), session)
    assert not done.user_input_requests  # c3: approved by the auto reviewer (low risk)
    assert done.text == "done"
    assert sorted(h.lines()) == ["refund bob 5", "refund carol 7", "refund dan 6"]
    assert session.state["signoff"]["review_mode"] == "auto"


def test_a_mode_given_by_the_application_is_not_refixed(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "refund", to="bob", amount=5),
                              call("c2", "refund", to="dan", amount=6)],
                             [call("c3", "refund", to="carol", amount=7)], ["done"]])
    agent = h.agent(client, review_mode="manual")
    session = agent.create_session()
    paused = run(agent, "refund them", session)
    first, second = request_ids(paused)
    h.decide(first, Decision.approve(scope="auto_thread",
                                     listed=[(second, h.gate.get_request(second).run_hash)]))
    again = run(agent, wake_up(paused), session)
    assert len(request_ids(again)) == 1  # c3 asks a human: the run keeps its given mode
    assert sorted(h.lines()) == ["refund bob 5", "refund dan 6"]
    assert session.state["signoff"]["review_mode"] == "manual"


def test_a_tool_the_framework_asks_about_itself_is_then_judged_by_signoff(h: Harness) -> None:
    """``approval_mode="always_require"``: the framework pauses first (no signoff request
    yet); after the wake-up the call is proposed like any other — here allowed, and run."""
    @tool(approval_mode="always_require")
    def balance(account: str) -> str:
        """Read a balance (the application wants to confirm every read)."""
        with h.ledger.open("a") as out:
            out.write(f"balance {account}\n")
        return f"{account}: 100"

    client = ScriptedClient([[call("c1", "balance", account="A")], ["read"]])
    agent = Agent(client=client, tools=[balance], middleware=[SignoffMiddleware(h.gate)])
    session = agent.create_session()
    paused = run(agent, "read A", session)
    assert len(paused.user_input_requests) == 1 and request_ids(paused) == []
    assert h.lines() == []
    done = run(agent, wake_up(paused), session)
    assert done.text == "read"
    assert h.lines() == ["balance A"]


def test_wait_and_resume_wakes_the_run_once_a_human_decided(h: Harness) -> None:
    client = ScriptedClient([[call("c1", "pay", to="bob", amount=5)], ["paid"]])
    agent = h.agent(client)
    session = agent.create_session()
    paused = run(agent, "pay bob", session)
    (rid,) = request_ids(paused)
    timer = threading.Timer(0.3, h.decide, (rid, Decision.approve()))
    timer.start()
    done = asyncio.run(wait_and_resume(agent, h.gate, paused, session=session, timeout=20))
    timer.join()
    assert done.text == "paid"
    assert h.lines() == ["pay bob 5"]


def test_a_response_that_did_not_pause_has_nothing_to_wake(h: Harness) -> None:
    client = ScriptedClient([["hello"]])
    agent = h.agent(client)
    response = run(agent, "hi", agent.create_session())
    with pytest.raises(SignoffError) as raised:
        wake_up(response)
    assert raised.value.code == "nothing_to_resume"


def test_allowed_calls_are_each_judged_and_audited_memory_answering_after_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, worker = quick_gate(tmp_path, monkeypatch)

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    client = ScriptedClient([*([call(f"c{i}", "lookup", query=f"q{i}")] for i in range(3)),
                             ["done"]])
    agent = Agent(client=client, tools=[lookup], middleware=[SignoffMiddleware(gate)])
    session = agent.create_session()
    try:
        assert run(agent, "look them up", session).text == "done"
        assert client.results() == {f"c{i}": f"found q{i}" for i in range(3)}
        assert audited(gate) == [(f"c{i}", session.session_id) for i in range(3)]
        # The session's run started (reading its thread) in a worker at the first call; the
        # run kept in the session and the thread's memory answered every call after it.
        assert worker == ["start_run"]
    finally:
        gate.close()
