"""gate_agent inside real Runner.run loops: the SDK's ScriptedModel, its needs_approval and
interruptions, RunState stored as text and resumed, decisions read from the store, a ledger
file as the oracle of what ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import Agent, RunState, function_tool
from agents.exceptions import ModelBehaviorError
from agents.testing import ScriptedModel
from oai_helpers import THREAD, Harness, Runner, call, done, outputs
from quick_helpers import audited, quick_gate

from signoff import Decision
from signoff.adapters.openai_agents import THREAD_KEY, apply_decisions, gate_agent, paused
from signoff.errors import ConfigurationError
from signoff.model import RequestStatus

pytestmark = pytest.mark.anyio


async def test_an_allowed_call_runs_once(h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c1")], done()])
    result = await Runner.run(agent, "read it")
    assert result.final_output == "Done."
    assert not result.interruptions
    assert h.ran() == ["read_file a.txt"]
    assert outputs(result) == {"c1": "contents of a.txt"}


async def test_a_denied_call_reaches_the_model_as_its_output_and_the_run_goes_on(
        h: Harness) -> None:
    agent, model = h.agent([[call("execute", {"command": "rm -rf build"}, "c1")],
                            done("I will not.")])
    result = await Runner.run(agent, "clean")
    assert result.final_output == "I will not."
    assert h.ran() == []
    said = outputs(result)["c1"]
    assert said.startswith("[signoff] The call was not run (deny")
    # the model's next turn read it
    assert any(isinstance(i, dict) and i.get("call_id") == "c1" and "not run" in str(
        i.get("output")) for i in model.calls[-1].input)


async def test_an_ask_pauses_with_its_request_then_runs_once_when_approved(
        h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done("Deployed.")])
    result = await Runner.run(agent, "ship")
    assert [i.tool_name for i in result.interruptions] == ["deploy"]
    assert h.ran() == []
    [one] = await paused(result)
    assert one.pending and one.request_id and one.call_id == "c1"
    request = h.gate.get_request(one.request_id)
    assert request.thread_id == THREAD and request.tool == "deploy"

    state = result.to_state()
    # still undecided: the run pauses again, nothing runs, the model is not asked
    assert [p.request_id for p in await apply_decisions(state)] == [one.request_id]
    again = await Runner.run(agent, state)
    assert [i.tool_name for i in again.interruptions] == ["deploy"]
    assert h.ran() == []

    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = again.to_state()
    assert await apply_decisions(state) == []
    final = await Runner.run(agent, state)
    assert final.final_output == "Deployed."
    assert h.ran() == ["deploy prod"]
    assert outputs(final)["c1"] == "deployed prod"
    assert h.gate.get_request(one.request_id).status is RequestStatus.SUCCEEDED
    assert h.gate.store.verify_audit().ok


async def test_a_rejection_tells_the_model_the_reason_and_alternatives(h: Harness) -> None:
    agent, model = h.agent([[call("deploy", {"env": "prod"}, "c1")], done("Understood.")])
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.reject("freeze week", ("deploy to staging",)),
                  identity=h.alice)
    state = result.to_state()
    assert await apply_decisions(state) == []
    final = await Runner.run(agent, state)
    assert final.final_output == "Understood."
    assert h.ran() == []
    said = outputs(final)["c1"]
    assert "freeze week" in said and "deploy to staging" in said
    assert "freeze week" in str(model.calls[-1].input)


async def test_an_approvers_edit_runs_the_edited_arguments_and_the_model_is_told(
        h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done()])
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.edit({"env": "staging"}, reason="staging first"),
                  identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(agent, state)
    assert h.ran() == ["deploy staging"]
    said = outputs(final)["c1"]
    assert said.startswith("deployed staging")
    assert "edited this call's arguments before it ran: staging first" in said
    assert '{"env": "staging"}' in said


async def test_a_restart_between_the_pause_and_the_decision_resumes_from_the_stored_state(
        h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")]])
    result = await Runner.run(agent, "ship")
    stored = result.to_state().to_string()  # what the application keeps
    [one] = await paused(result)
    assert one.request_id

    gate = h.reopen()  # a new process: a new gate over the same file, new agent objects
    gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    fresh, _ = h.agent([done("Deployed.")], gate=gate)
    state = await RunState.from_string(fresh, stored)
    assert await apply_decisions(state) == []
    final = await Runner.run(fresh, state)
    assert final.final_output == "Deployed."
    assert h.ran() == ["deploy prod"]
    assert gate.store.verify_audit().ok


async def test_a_replayed_resume_runs_nothing_twice(h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")]])
    result = await Runner.run(agent, "ship")
    stored = result.to_state().to_string()
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    for _ in range(2):  # the same stored state resumed twice (a retried job, a double click)
        fresh, _model = h.agent([done("Deployed.")])
        state = await RunState.from_string(fresh, stored)
        await apply_decisions(state)
        final = await Runner.run(fresh, state)
        assert outputs(final)["c1"].startswith("deployed prod")
    assert h.ran() == ["deploy prod"]


async def test_an_approval_set_only_in_the_run_state_runs_nothing(h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done()])
    result = await Runner.run(agent, "ship")
    state = result.to_state()
    for item in state.get_interruptions():
        state.approve(item)  # by hand, not in signoff
    final = await Runner.run(agent, state)
    assert h.ran() == []
    assert "not in signoff" in outputs(final)["c1"]
    [request] = h.gate.thread_requests(THREAD)
    assert request.status is RequestStatus.CANCELLED


async def test_parallel_calls_pause_together_and_the_allowed_one_is_not_run_again(
        h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c1"),
                         call("deploy", {"env": "prod"}, "c2"),
                         call("execute", {"command": "make test"}, "c3")]])
    result = await Runner.run(agent, "go")
    assert sorted(i.tool_name or "" for i in result.interruptions) == ["deploy", "execute"]
    assert h.ran() == ["read_file a.txt"]
    stored = result.to_state().to_string()
    found = await paused(result)
    assert all(p.pending for p in found)
    deploy = next(p for p in found if p.tool == "deploy")
    test = next(p for p in found if p.tool == "execute")
    assert deploy.request_id and test.request_id
    h.gate.decide(test.request_id, Decision.approve(), identity=h.alice)
    h.gate.decide(deploy.request_id, Decision.reject("not today"), identity=h.alice)
    fresh, _ = h.agent([done()])
    state = await RunState.from_string(fresh, stored)
    assert await apply_decisions(state) == []
    final = await Runner.run(fresh, state)
    assert h.ran() == ["read_file a.txt", "execute make test"]
    said = outputs(final)
    assert said["c3"] == "ran make test" and "not today" in said["c2"]


@pytest.mark.parametrize("second", [
    call("deploy", {"env": "staging"}, "c1"),  # the same id for another call
    call("deploy", {"env": "staging"}, ""),  # no id
])
async def test_a_turn_with_a_bad_or_repeated_call_id_runs_nothing(h: Harness,
                                                                 second: object) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1"), second], done()])
    with pytest.raises(ModelBehaviorError):  # the SDK refuses the turn before any tool
        await Runner.run(agent, "ship")
    assert h.ran() == []
    assert h.gate.thread_requests(THREAD) == []


async def test_an_exact_duplicate_in_one_response_runs_once(h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1"),
                         call("deploy", {"env": "prod"}, "c1")], done()])
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    await Runner.run(agent, state)
    assert h.ran() == ["deploy prod"]


async def test_a_call_id_reused_from_an_earlier_turn_for_another_call_is_refused(
        h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c1")],
                        [call("read_file", {"path": "b.txt"}, "c1")], done()])
    with pytest.raises(ModelBehaviorError):
        await Runner.run(agent, "read")
    assert h.ran() == ["read_file a.txt"]


async def test_without_a_thread_a_call_is_refused_and_a_mapping_context_supplies_one(
        h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c1")], done()], thread_id=None)
    result = await Runner.run(agent, "read")
    assert h.ran() == [] and "no signoff thread id" in outputs(result)["c1"]

    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c2")]], thread_id=None)
    result = await Runner.run(agent, "ship", context={THREAD_KEY: "from-context"})
    [one] = await paused(result)
    assert one.request_id
    assert h.gate.get_request(one.request_id).thread_id == "from-context"


async def test_an_unattended_run_is_blocked_not_paused(h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done()],
                       interaction_mode="scheduled")
    result = await Runner.run(agent, "ship")
    assert not result.interruptions and h.ran() == []
    assert "(blocked" in outputs(result)["c1"]


def test_tools_signoff_cannot_see_are_refused_when_the_agent_is_gated(h: Harness) -> None:
    from agents import WebSearchTool

    with pytest.raises(ConfigurationError) as bad:
        gate_agent(Agent(name="web", tools=[WebSearchTool()]), h.gate, thread_id=THREAD)
    assert bad.value.code == "ungated_tool"
    inner = Agent(name="inner", tools=h.tools())
    with pytest.raises(ConfigurationError) as sub:
        gate_agent(Agent(name="outer", tools=[inner.as_tool("helper", "helps")]), h.gate,
                   thread_id=THREAD)
    assert sub.value.code == "ungated_subagent"

    class Server:  # an MCP server's tools are listed only at run time
        name = "git"

    with pytest.raises(ConfigurationError) as mcp:
        gate_agent(Agent(name="git", mcp_servers=[Server()]), h.gate,  # type: ignore[list-item]
                   thread_id=THREAD)
    assert mcp.value.code == "ungated_mcp_servers"


async def test_a_handoff_target_is_gated_too(h: Harness) -> None:
    from agents.testing import ScriptedModel

    @function_tool
    def noop() -> str:
        return "ok"

    model = ScriptedModel([[call("transfer_to_ops", {}, "h1")],
                           [call("deploy", {"env": "prod"}, "c1")]])
    ops = Agent(name="ops", model=model, tools=h.tools())
    triage = gate_agent(Agent(name="triage", model=model, tools=[noop], handoffs=[ops]),
                        h.gate, thread_id=THREAD)
    result = await Runner.run(triage, "ship")
    assert [i.tool_name for i in result.interruptions] == ["deploy"]
    assert h.ran() == []


def _outer(h: Harness, inner_turns: list[list[object]], *, wait: float) -> Agent[object]:
    from agents.testing import ScriptedModel

    inner = gate_agent(Agent(name="inner", model=ScriptedModel(inner_turns), tools=h.tools()),
                       h.gate, thread_id=THREAD, subagent_wait=wait)
    model = ScriptedModel([[call("helper", {"input": "deploy it"}, "o1")], done("outer done")])
    return gate_agent(Agent(name="outer", model=model, tools=[inner.as_tool("helper", "helps")]),
                      h.gate, thread_id=THREAD)


async def test_an_agent_used_as_a_tool_labels_its_calls_and_its_ask_waits_in_place(
        h: Harness) -> None:
    import threading

    outer = _outer(h, [[call("deploy", {"env": "prod"}, "i1")], done("inner done")], wait=20)
    result = await Runner.run(outer, "go")
    [helper] = await paused(result)
    assert helper.request_id and helper.tool == "helper"
    h.gate.decide(helper.request_id, Decision.approve(), identity=h.alice)

    def approve_the_inner_call() -> None:
        for _ in range(200):
            waiting = [r for r in h.gate.pending_on_thread(THREAD) if r.tool == "deploy"]
            if waiting:
                assert waiting[0].parent_call == "o1"
                h.gate.decide(waiting[0].id, Decision.approve(), identity=h.alice)
                return
            threading.Event().wait(0.05)

    approver = threading.Thread(target=approve_the_inner_call)
    approver.start()
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(outer, state)
    approver.join()
    assert final.final_output == "outer done"
    assert h.ran() == ["deploy prod"]
    assert outputs(final)["o1"] == "inner done"


async def test_an_inner_ask_nobody_decides_in_time_is_withdrawn_and_does_not_run(
        h: Harness) -> None:
    outer = _outer(h, [[call("deploy", {"env": "prod"}, "i1")], done("inner gave up")],
                   wait=0.2)
    result = await Runner.run(outer, "go")
    [helper] = await paused(result)
    assert helper.request_id
    h.gate.decide(helper.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(outer, state)
    assert final.final_output == "outer done" and h.ran() == []
    [inner] = [r for r in h.gate.thread_requests(THREAD) if r.tool == "deploy"]
    assert inner.status is RequestStatus.CANCELLED and inner.parent_call == "o1"


async def test_an_approval_given_with_the_cli_resumes_the_run(h: Harness) -> None:
    from signoff.cli import main

    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done("Deployed.")])
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    (h.tmp / "signoff.toml").write_text(h.policy_text)
    code = main(["requests", "approve", one.request_id, "--db", str(h.tmp / "signoff.db"),
                 "--policy", str(h.tmp / "signoff.toml"), "--token", h.alice_token])
    assert code == 0
    state = result.to_state()
    assert await apply_decisions(state) == []
    final = await Runner.run(agent, state)
    assert final.final_output == "Deployed." and h.ran() == ["deploy prod"]


async def test_the_review_mode_is_the_threads_or_the_applications(h: Harness) -> None:
    from signoff.model import ReviewMode

    agent, _ = h.agent([[call("execute", {"command": "make test"}, "c1")], done()],
                       review_mode=ReviewMode.FULL)
    result = await Runner.run(agent, "test")  # full mode: a gated call runs without review
    assert not result.interruptions and h.ran() == ["execute make test"]

    h.gate.set_thread_mode(THREAD, ReviewMode.FULL)  # the thread's mode (an operator)
    agent, _ = h.agent([[call("execute", {"command": "make lint"}, "c2")], done()])
    result = await Runner.run(agent, "lint")
    assert not result.interruptions and h.ran()[-1] == "execute make lint"


async def test_a_mode_changed_while_paused_does_not_free_the_waiting_call(h: Harness) -> None:
    from signoff.model import ReviewMode

    agent, _ = h.agent([[call("execute", {"command": "make test"}, "c1")]])
    result = await Runner.run(agent, "test")
    stored = result.to_state().to_string()
    h.gate.set_thread_mode(THREAD, ReviewMode.FULL)  # the call is judged by its request now
    fresh, _ = h.agent([done()])
    state = await RunState.from_string(fresh, stored)
    [still] = await apply_decisions(state)
    assert still.pending
    again = await Runner.run(fresh, state)
    assert again.interruptions and h.ran() == []


async def test_an_approved_call_that_raises_is_reported_failed_and_the_model_is_told(
        h: Harness) -> None:
    from agents.testing import ScriptedModel

    @function_tool
    def deploy(env: str) -> str:
        """Deploy."""
        raise RuntimeError(f"no route to {env}")

    model = ScriptedModel([[call("deploy", {"env": "prod"}, "c1")], done("It failed.")])
    agent = gate_agent(Agent(name="ops", model=model, tools=[deploy]), h.gate,
                       thread_id=THREAD)
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(agent, state)
    assert final.final_output == "It failed."
    # told the way the tool's failure handler says (the SDK's default hides the error)
    assert outputs(final)["c1"].startswith("An error occurred while running the tool")
    request = h.gate.get_request(one.request_id)
    assert request.status is RequestStatus.FAILED and "no route to prod" in (request.error or "")


async def test_an_approvers_answer_instead_of_the_run_reaches_the_model(h: Harness) -> None:
    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")], done()])
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.respond("prod is frozen; it is already at v2"),
                  identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(agent, state)
    assert h.ran() == [] and outputs(final)["c1"] == "prod is frozen; it is already at v2"


async def test_a_streamed_run_pauses_and_resumes_the_same_way(h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c0"),
                         call("deploy", {"env": "prod"}, "c1")], done("Deployed.")])
    streamed = Runner.run_streamed(agent, "ship")
    async for _ in streamed.stream_events():
        pass
    assert [i.tool_name for i in streamed.interruptions] == ["deploy"]
    assert h.ran() == ["read_file a.txt"]
    [one] = await paused(streamed)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = streamed.to_state()
    await apply_decisions(state)
    again = Runner.run_streamed(agent, state)
    async for _ in again.stream_events():
        pass
    assert again.final_output == "Deployed."
    assert h.ran() == ["read_file a.txt", "deploy prod"]


async def test_the_approved_tool_sees_its_claim(h: Harness) -> None:
    from agents.testing import ScriptedModel

    from signoff.kernel.execution import current_execution

    seen: list[str | None] = []

    @function_tool
    def deploy(env: str) -> str:
        """Deploy."""
        running = current_execution()
        seen.append(running.request_id if running else None)
        return "ok"

    model = ScriptedModel([[call("deploy", {"env": "prod"}, "c1")], done()])
    agent = gate_agent(Agent(name="ops", model=model, tools=[deploy]), h.gate,
                       thread_id=THREAD)
    result = await Runner.run(agent, "ship")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    await Runner.run(agent, state)
    assert seen == [one.request_id]


async def test_a_handoff_object_hands_over_a_gated_agent_and_resumes_after_a_restart(
        h: Harness) -> None:
    from agents import handoff
    from agents.testing import ScriptedModel

    def build(turns: list[list[object]]) -> Agent[object]:
        model = ScriptedModel(turns)
        ops = Agent(name="ops", model=model, tools=h.tools())
        return gate_agent(Agent(name="triage", model=model, handoffs=[handoff(ops)]),
                          h.gate, thread_id=THREAD)

    triage = build([[call("transfer_to_ops", {}, "h1")], [call("deploy", {"env": "prod"}, "c1")]])
    result = await Runner.run(triage, "ship")
    assert [(i.tool_name, i.agent.name) for i in result.interruptions] == [("deploy", "ops")]
    stored = result.to_state().to_string()
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    fresh = build([done("Deployed.")])
    state = await RunState.from_string(fresh, stored)
    assert await apply_decisions(state) == []
    final = await Runner.run(fresh, state)
    assert final.final_output == "Deployed." and h.ran() == ["deploy prod"]


async def test_a_state_loaded_into_the_ungated_agent_is_refused(h: Harness) -> None:
    from agents.testing import ScriptedModel

    agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")]])
    result = await Runner.run(agent, "ship")
    plain = Agent(name="ops", model=ScriptedModel([done()]), tools=h.tools())
    state = await RunState.from_string(plain, result.to_state().to_string())
    with pytest.raises(ConfigurationError) as bad:
        await apply_decisions(state)
    assert bad.value.code == "ungated_agent"


async def test_arguments_the_sdk_cannot_inspect_are_judged_when_paused(h: Harness) -> None:
    agent, _ = h.agent([[call("read_file", "not json", "c1")], done()])
    result = await Runner.run(agent, "read")  # the SDK asks without calling needs_approval
    assert [i.tool_name for i in result.interruptions] == ["read_file"]
    [one] = await paused(result)
    assert one.request_id is None and one.refusal and "not run" in one.refusal
    state = result.to_state()
    assert await apply_decisions(state) == []
    final = await Runner.run(agent, state)
    assert h.ran() == [] and outputs(final)["c1"] == one.refusal


async def test_allowed_calls_are_each_judged_and_audited_memory_answering_after_the_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, worker = quick_gate(tmp_path, monkeypatch)

    @function_tool
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    model = ScriptedModel([*([call("lookup", {"query": f"q{i}"}, f"c{i}")] for i in range(3)),
                           done()])
    agent = gate_agent(Agent(name="ops", instructions="Operate.", model=model, tools=[lookup]),
                       gate, thread_id=THREAD)
    try:
        result = await Runner.run(agent, "look them up")
        assert outputs(result) == {f"c{i}": f"found q{i}" for i in range(3)}
        assert audited(gate) == [(f"c{i}", THREAD) for i in range(3)]
        assert worker == ["propose"]  # the first call read the thread, in a worker
    finally:
        gate.close()
