"""Hosted MCP tools (``HostedMCPTool``) gated through the SDK's approval requests, in real
``Runner.run`` loops. The hosted server runs on the provider's side, so the scripted model
plays the provider: it sends an ``mcp_approval_request``, and for each approval it then
receives it runs the call (an ``mcp_call`` item) and answers. What the model received is
the oracle of what was sent to the provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from agents import Agent, HostedMCPTool, RunState
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message
from oai_helpers import THREAD, Harness, Runner
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
)
from openai.types.responses.mcp_tool_call_error import HTTPError
from openai.types.responses.response_output_item import McpApprovalRequest, McpCall

from signoff import Decision
from signoff.adapters.openai_agents import apply_decisions, gate_agent, paused
from signoff.errors import ConfigurationError, Conflict
from signoff.model import RequestStatus

pytestmark = pytest.mark.anyio

ISSUE = {"repo": "acme/app", "title": "Flaky test"}


def asks(request_id: str, tool: str, args: dict[str, Any]) -> McpApprovalRequest:
    """The provider asking to run ``tool`` on the hosted server ``gh``."""
    return McpApprovalRequest(id=request_id, type="mcp_approval_request", server_label="gh",
                              name=tool, arguments=json.dumps(args))


def provider(*, error: HTTPError | None = None, returns: bool = True) -> ModelStep:
    """The provider's next turn: each approval not answered yet runs (``mcp_call``), then a
    final message."""

    def respond(call: ModelCall) -> list[Any]:
        items = [i for i in call.input if isinstance(i, dict)]
        ran = {i.get("approval_request_id") for i in items if i.get("type") == "mcp_call"}
        out: list[Any] = []
        for item in items:
            if item.get("type") == "mcp_approval_response" and item["approve"] \
                    and item["approval_request_id"] not in ran and returns:
                out.append(McpCall(id=f"call-{item['approval_request_id']}", type="mcp_call",
                                   server_label="gh", name="create_issue",
                                   arguments=json.dumps(ISSUE), output=None if error else
                                   "issue #7 created", error=error,
                                   approval_request_id=item["approval_request_id"]))
        return [*out, assistant_message("Done.")]

    return ModelStep.respond(respond)


def hosted(**config: Any) -> HostedMCPTool:
    return HostedMCPTool(tool_config={"type": "mcp", "server_label": "gh",
                                      "server_url": "https://mcp.example.invalid",
                                      **config})  # type: ignore[typeddict-item]


def agent(h: Harness, turns: list[Any], *, tool: HostedMCPTool | None = None,
          gate: Any = None) -> tuple[Agent[Any], ScriptedModel]:
    model = ScriptedModel(turns)
    plain = Agent(name="ops", model=model, tools=[tool or hosted(), *h.tools()])
    return gate_agent(plain, gate or h.gate, thread_id=THREAD), model


def answers(model: ScriptedModel, request_id: str) -> list[dict[str, Any]]:
    """The approval responses for ``request_id`` in the input of the model's last call."""
    last = model.calls[-1].input
    return [i for i in last if isinstance(i, dict) and i.get("type") == "mcp_approval_response"
            and i.get("approval_request_id") == request_id]


def approvals_sent(models: list[ScriptedModel], request_id: str) -> int:
    """How many model calls sent a new approval of ``request_id`` (the provider runs each)."""
    sent = 0
    for model in models:
        for call in model.calls:
            items = [i for i in call.input if isinstance(i, dict)]
            ran = any(i.get("type") == "mcp_call" and i.get("approval_request_id") == request_id
                      for i in items)
            sent += not ran and any(i.get("type") == "mcp_approval_response" and i["approve"]
                                    and i["approval_request_id"] == request_id for i in items)
    return sent


async def test_an_allowed_hosted_call_is_approved_at_once_without_a_pause(h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "list_issues", {"repo": "acme/app"})],
                             provider()])
    result = await Runner.run(gated, "list the issues")
    assert not result.interruptions and result.final_output == "Done."
    assert answers(model, "mcpr_1") == [
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}]
    assert h.gate.thread_requests(THREAD) == []  # allowed: no request, an audited verdict


async def test_a_denied_hosted_call_is_rejected_and_the_model_reads_why(h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "delete_repo", {"repo": "acme/app"})],
                             provider()])
    result = await Runner.run(gated, "clean up")
    assert not result.interruptions
    [answer] = answers(model, "mcpr_1")
    assert answer["approve"] is False
    assert answer["reason"].startswith("[signoff] The call was not run (deny")
    assert "never deleted by an agent" in answer["reason"]
    assert not any(getattr(i, "type", None) == "tool_call_item"
                   and getattr(i.raw_item, "type", None) == "mcp_call" for i in result.new_items)


async def test_an_ask_pauses_then_one_approval_is_sent_and_a_replay_sends_none(
        h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)]])
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.hosted and one.pending and one.call_id == "mcpr_1"
    assert one.tool == "gh__create_issue" and one.request_id
    request = h.gate.get_request(one.request_id)
    assert request.thread_id == THREAD and json.loads(request.args) == ISSUE
    stored = result.to_state().to_string()

    state = result.to_state()  # undecided: paused again, the provider is not called
    assert [p.request_id for p in await apply_decisions(state)] == [one.request_id]
    again = await Runner.run(gated, state)
    assert again.interruptions and len(model.calls) == 1

    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    models = []
    for _ in range(2):  # the stored state resumed twice: a retried job, a double click
        fresh, resumed = agent(h, [provider()])
        models.append(resumed)
        state = await RunState.from_string(fresh, stored)
        assert await apply_decisions(state) == []
        final = await Runner.run(fresh, state)
        assert final.final_output == "Done."
    assert answers(models[0], "mcpr_1")[0]["approve"] is True
    [second] = answers(models[1], "mcpr_1")
    assert second["approve"] is False and "already answered through signoff" in second["reason"]
    assert approvals_sent(models, "mcpr_1") == 1
    done = h.gate.get_request(one.request_id)
    assert done.status is RequestStatus.SUCCEEDED
    assert json.loads(done.result or "null") == "issue #7 created"
    assert h.gate.store.verify_audit().ok


async def test_a_rejection_reaches_the_model_as_the_approval_responses_reason(
        h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)], provider()])
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.reject("duplicate of #3", ("comment on #3",)),
                  identity=h.alice)
    state = result.to_state()
    assert await apply_decisions(state) == []
    await Runner.run(gated, state)
    [answer] = answers(model, "mcpr_1")
    assert answer["approve"] is False
    assert "duplicate of #3" in answer["reason"] and "comment on #3" in answer["reason"]
    assert h.gate.get_request(one.request_id).status is RequestStatus.REJECTED


async def test_an_approvers_edit_is_refused_a_hosted_tool_cannot_carry_it(h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)], provider()])
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.edit({**ISSUE, "title": "Flaky test in CI"},
                                                reason="be precise"), identity=h.alice)
    state = result.to_state()
    assert await apply_decisions(state) == []
    await Runner.run(gated, state)
    [answer] = answers(model, "mcpr_1")
    assert answer["approve"] is False
    assert "edited this call's arguments (be precise)" in answer["reason"]
    assert "the edit could not be applied" in answer["reason"]
    request = h.gate.get_request(one.request_id)  # recorded as not run, never to be sent
    assert request.status is RequestStatus.FAILED
    assert "an approver's edit cannot be applied by a hosted MCP tool" in (request.error or "")


async def test_a_restart_between_the_pause_and_the_decision_resumes_the_stored_state(
        h: Harness) -> None:
    gated, _ = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)]])
    result = await Runner.run(gated, "file it")
    stored = result.to_state().to_string()
    [one] = await paused(result)
    assert one.request_id

    gate = h.reopen()  # a new process: a new gate over the same file, new agent objects
    gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    fresh, model = agent(h, [provider()], gate=gate)
    state = await RunState.from_string(fresh, stored)
    assert await apply_decisions(state) == []
    final = await Runner.run(fresh, state)
    assert final.final_output == "Done."
    assert answers(model, "mcpr_1")[0]["approve"] is True
    assert gate.get_request(one.request_id).status is RequestStatus.SUCCEEDED
    assert gate.store.verify_audit().ok


@pytest.mark.parametrize("require", ["never", {"never": {"tool_names": ["create_issue"]}}])
async def test_an_applications_require_approval_is_overridden(h: Harness,
                                                              require: Any) -> None:
    tool = hosted(require_approval=require)
    gated, model = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)]], tool=tool)
    [sent] = [t for t in gated.tools if isinstance(t, HostedMCPTool)]
    assert sent.tool_config["require_approval"] == "always"
    assert tool.tool_config["require_approval"] == require  # the application's is unchanged
    result = await Runner.run(gated, "file it")
    [told] = [t for t in model.calls[0].tools if isinstance(t, HostedMCPTool)]
    assert told.tool_config["require_approval"] == "always"  # what the provider is told
    assert [p.tool for p in await paused(result)] == ["gh__create_issue"]


def test_an_applications_approval_callback_is_refused(h: Harness) -> None:
    tool = HostedMCPTool(tool_config={"type": "mcp", "server_label": "gh",
                                      "server_url": "https://mcp.example.invalid"},
                         on_approval_request=lambda request: {"approve": True})
    with pytest.raises(ConfigurationError) as refused:
        gate_agent(Agent(name="ops", tools=[tool]), h.gate, thread_id=THREAD)
    assert refused.value.code == "hosted_approval_callback"


async def test_an_approval_set_only_in_the_run_state_is_not_sent(h: Harness) -> None:
    gated, model = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)], provider()])
    result = await Runner.run(gated, "file it")
    state = result.to_state()
    for item in state.get_interruptions():
        state.approve(item)  # by hand, not in signoff
    with pytest.raises(Conflict) as refused:
        await Runner.run(gated, state)
    assert refused.value.code == "hosted_approval_refused"
    assert len(model.calls) == 1  # nothing reached the provider
    [request] = h.gate.thread_requests(THREAD)
    assert request.status is RequestStatus.PENDING  # people can still decide it


async def test_a_paused_call_older_than_the_threads_newest_requests_is_still_claimed(
        h: Harness) -> None:
    """The request of an approval is found by the gate, not only among the newest requests
    a thread read returns: a hand-set approval of a call buried under 500 newer requests is
    refused as well, and the approval people gave is sent once."""
    from signoff.model import ToolCall
    from signoff.policy.modes import trusted_context

    gated, model = agent(h, [[asks("mcpr_old", "create_issue", ISSUE)], provider()])
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.request_id
    other = trusted_context(thread_id=THREAD, run_id="another-run")
    for n in range(500):
        h.gate.propose(ToolCall(id=f"newer-{n}", name="deploy", args={"env": f"e{n}"}), other)
    assert one.request_id not in {r.id for r in h.gate.thread_requests(THREAD)}
    state = result.to_state()
    for item in state.get_interruptions():
        state.approve(item)  # by hand, not in signoff
    with pytest.raises(Conflict) as refused:
        await Runner.run(gated, state)
    assert refused.value.code == "hosted_approval_refused" and len(model.calls) == 1
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    assert (await Runner.run(gated, state)).final_output == "Done."
    assert approvals_sent([model], "mcpr_old") == 1
    assert h.gate.get_request(one.request_id).status is RequestStatus.SUCCEEDED


@pytest.mark.parametrize(("step", "status"), [
    (provider(error=HTTPError(code=429, message="rate limited", type="http_error")),
     RequestStatus.FAILED),
    (provider(returns=False), RequestStatus.UNKNOWN),
])
async def test_what_the_provider_did_with_the_approval_is_recorded(
        h: Harness, step: ModelStep, status: RequestStatus) -> None:
    gated, _ = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)], step])
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    await Runner.run(gated, state)
    request = h.gate.get_request(one.request_id)
    assert request.status is status
    if status is RequestStatus.FAILED:
        assert "rate limited" in (request.error or "")


def stream(output: list[Any]) -> list[Any]:
    """The provider's stream events for ``output`` (the scripted model streams only function
    calls and messages by itself)."""
    response = Response(id="resp-hosted", created_at=0, model="scripted", object="response",
                        output=output, tool_choice="none", tools=[], top_p=None,
                        parallel_tool_calls=False, status="completed")
    events: list[Any] = [ResponseCreatedEvent(
        type="response.created", sequence_number=0,
        response=response.model_copy(update={"output": [], "status": "in_progress"}))]
    for index, item in enumerate(output):
        events += [ResponseOutputItemAddedEvent(type="response.output_item.added", item=item,
                                                output_index=index,
                                                sequence_number=len(events)),
                   ResponseOutputItemDoneEvent(type="response.output_item.done", item=item,
                                               output_index=index,
                                               sequence_number=len(events) + 1)]
    return [*events, ResponseCompletedEvent(type="response.completed", response=response,
                                            sequence_number=len(events))]


async def test_a_streamed_run_pauses_and_resumes_the_same_way(h: Harness) -> None:
    first = [asks("mcpr_1", "create_issue", ISSUE), asks("mcpr_2", "list_issues", {})]
    answer = provider().responder
    assert answer is not None

    async def then(call: ModelCall) -> AsyncIterator[Any]:
        for event in stream(cast(list[Any], answer(call))):
            yield event

    gated, model = agent(h, [ModelStep.stream(stream(first), output=first),
                             ModelStep.stream(then)])
    result = Runner.run_streamed(gated, "file it")
    async for _ in result.stream_events():
        pass
    [one] = await paused(result)  # the allowed call waits for the same answer as the ask
    assert one.tool == "gh__create_issue" and one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = Runner.run_streamed(gated, state)
    async for _ in final.stream_events():
        pass
    assert final.final_output == "Done."
    assert [a["approve"] for a in answers(model, "mcpr_1") + answers(model, "mcpr_2")] == [
        True, True]
    assert h.gate.get_request(one.request_id).status is RequestStatus.SUCCEEDED


async def test_an_inner_agents_hosted_ask_waits_in_place(h: Harness) -> None:
    import threading

    from oai_helpers import call, done

    inner_model = ScriptedModel([[asks("mcpr_9", "create_issue", ISSUE)], provider()])
    inner = gate_agent(Agent(name="inner", model=inner_model, tools=[hosted()]), h.gate,
                       thread_id=THREAD, subagent_wait=20)
    outer = gate_agent(Agent(name="outer", model=ScriptedModel(
        [[call("helper", {"input": "file it"}, "o1")], done("outer done")]),
        tools=[inner.as_tool("helper", "helps")]), h.gate, thread_id=THREAD)
    result = await Runner.run(outer, "go")
    [helper] = await paused(result)
    assert helper.request_id
    h.gate.decide(helper.request_id, Decision.approve(), identity=h.alice)

    def approve_the_inner_call() -> None:
        for _ in range(200):
            waiting = [r for r in h.gate.pending_on_thread(THREAD) if r.call_id == "mcpr_9"]
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
    assert answers(inner_model, "mcpr_9")[0]["approve"] is True
    [request] = [r for r in h.gate.thread_requests(THREAD) if r.call_id == "mcpr_9"]
    assert request.status is RequestStatus.SUCCEEDED


async def test_an_approval_sent_by_the_agent_handed_off_to_is_claimed_too(h: Harness) -> None:
    from oai_helpers import call

    model = ScriptedModel([[asks("mcpr_1", "create_issue", ISSUE),
                            call("transfer_to_triage", {}, "h1")], provider()])
    triage = Agent(name="triage", model=model)
    plain = Agent(name="ops", model=model, tools=[hosted()], handoffs=[triage])
    gated = gate_agent(plain, h.gate, thread_id=THREAD)
    result = await Runner.run(gated, "file it")
    [one] = await paused(result)
    assert one.request_id
    h.gate.decide(one.request_id, Decision.approve(), identity=h.alice)
    state = result.to_state()
    await apply_decisions(state)
    final = await Runner.run(gated, state)
    assert final.last_agent.name == "triage"  # its model call sent the approval
    assert answers(model, "mcpr_1")[0]["approve"] is True
    assert h.gate.get_request(one.request_id).status is RequestStatus.SUCCEEDED
