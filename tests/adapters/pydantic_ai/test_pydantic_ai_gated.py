"""Pydantic AI agents behind the gate: allow, deny, ask → pause → decide → resume, edits,
restarts, replays, parallel calls and bad ids — a real ``Agent`` with a scripted
``FunctionModel``; the ledger proves what ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyd_helpers import Harness, Script, calls, text
from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from quick_helpers import audited, quick_gate

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.pydantic_ai import Paused, Signoff, request_ids, undecided, wake
from signoff.decisions import Decision
from signoff.errors import Conflict
from signoff.model import RequestStatus


def paused_on(result: object) -> dict[str, str]:
    output = getattr(result, "output", None)
    assert isinstance(output, DeferredToolRequests), output
    return request_ids(output)


def test_an_allowed_call_runs_and_a_denied_one_is_told_to_the_model(h: Harness) -> None:
    agent, script = h.agent([calls(("read_file", {"path": "a.txt"}, "c1"),
                                   ("rm", {"path": "b.txt"}, "c2")), text("done")])
    result = agent.run_sync("tidy up")
    assert result.output == "done"
    assert h.ran() == ["read_file a.txt"]
    assert script.returns()["c1"] == "contents of a.txt"
    assert "no-rm" in script.returns()["c2"] and script.outcomes()["c2"] == "failed"


def test_an_ask_pauses_and_an_approval_runs_it_once(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("shipped")])
    first = agent.run_sync("ship it")
    ids = paused_on(first)
    assert list(ids) == ["d1"] and h.ran() == []
    request = h.gate.get_request(ids["d1"])
    assert request.status is RequestStatus.PENDING and request.roles == ("ops",)
    paused = Paused.of(first)
    assert undecided(h.gate, paused.requests) == [ids["d1"]]
    h.gate.decide(ids["d1"], Decision.approve(), identity=h.alice)
    assert undecided(h.gate, paused.requests) == []
    second = agent.run_sync(**paused.resume_kwargs())
    assert second.output == "shipped"
    assert h.ran() == ["deploy prod latest"]
    assert script.returns()["d1"] == "deployed latest to prod"
    assert h.gate.get_request(ids["d1"]).status is RequestStatus.SUCCEEDED


def test_a_rejection_reaches_the_model_with_its_reason_and_nothing_runs(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("ok")])
    paused = Paused.of(agent.run_sync("ship it"))
    rid = request_ids(paused.requests)["d1"]
    h.gate.decide(rid, Decision.reject("freeze week", ["deploy to staging"]), identity=h.alice)
    assert agent.run_sync(**paused.resume_kwargs()).output == "ok"
    assert h.ran() == []
    told = script.returns()["d1"]
    assert "rejected" in told and "freeze week" in told and "deploy to staging" in told
    assert script.outcomes()["d1"] == "failed"


def test_still_pending_pauses_again_and_a_cancelled_request_is_told(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("ok")])
    paused = Paused.of(agent.run_sync("ship it"))
    rid = request_ids(paused.requests)["d1"]
    again = agent.run_sync(**paused.resume_kwargs())  # nobody decided yet
    assert paused_on(again) == {"d1": rid} and h.ran() == []
    h.gate.cancel(rid, actor=None, reason="the user changed their mind")
    assert agent.run_sync(**Paused.of(again).resume_kwargs()).output == "ok"
    assert "the user changed their mind" in script.returns()["d1"] and h.ran() == []


def test_an_approvers_edit_runs_the_edited_arguments(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod", "version": "v2"}, "d1")),
                             text("ok")])
    paused = Paused.of(agent.run_sync("ship it"))
    rid = request_ids(paused.requests)["d1"]
    h.gate.decide(rid, Decision.edit({"env": "staging", "version": "v2"}, reason="staging first"),
                  identity=h.alice)
    agent.run_sync(**paused.resume_kwargs())
    assert h.ran() == ["deploy staging v2"]
    told = script.returns()["d1"]
    assert told.startswith("deployed v2 to staging")
    assert "edited this call's arguments before it ran: staging first" in told


def test_an_approved_edit_that_does_not_fit_the_tool_does_not_run(h: Harness) -> None:
    agent, script = h.agent([calls(("transfer", {"amount": 5, "to": "bob"}, "t1")),
                             text("ok")])
    paused = Paused.of(agent.run_sync("pay bob"))
    rid = request_ids(paused.requests)["t1"]
    h.gate.decide(rid, Decision.edit({"amount": "a lot", "to": "bob"}), identity=h.alice)
    agent.run_sync(**paused.resume_kwargs())
    assert h.ran() == []
    assert "do not fit the tool" in script.returns()["t1"]
    assert h.gate.get_request(rid).status is RequestStatus.FAILED


def test_a_replayed_resume_runs_nothing_twice(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("one")])
    paused = Paused.of(agent.run_sync("ship it"))
    h.gate.decide(request_ids(paused.requests)["d1"], Decision.approve(), identity=h.alice)
    stored = paused.dumps()
    agent.run_sync(**Paused.loads(stored).resume_kwargs())
    again, script = h.agent([text("two")])
    assert again.run_sync(**Paused.loads(stored).resume_kwargs()).output == "two"
    assert h.ran() == ["deploy prod latest"]
    assert script.returns()["d1"] == "deployed latest to prod"  # the stored result, not a rerun


def test_resume_arguments_other_than_the_reviewed_ones_are_refused(h: Harness) -> None:
    """``ToolApproved(override_args=…)`` is not what the approver saw: nothing runs."""
    agent, script = h.agent([calls(("deploy", {"env": "staging"}, "d1")), text("ok")])
    paused = Paused.of(agent.run_sync("ship it"))
    h.gate.decide(request_ids(paused.requests)["d1"], Decision.approve(), identity=h.alice)
    forged = DeferredToolResults(approvals={"d1": ToolApproved(override_args={"env": "prod"})})
    agent.run_sync(message_history=paused.messages, deferred_tool_results=forged)
    assert h.ran() == []
    assert "other arguments than the ones a human reviewed" in script.returns()["d1"]


def test_an_approval_given_in_the_resume_value_is_not_a_decision(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("ok")])
    first = agent.run_sync("ship it")
    assert isinstance(first.output, DeferredToolRequests)
    self_approved = first.output.build_results(approve_all=True)
    again = agent.run_sync(message_history=first.all_messages(),
                           deferred_tool_results=self_approved)
    assert list(paused_on(again)) == ["d1"] and h.ran() == []


def test_a_restart_between_pause_and_decision_resumes_in_a_new_process(
        h: Harness, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1"))])
    stored = Paused.of(agent.run_sync("ship it")).dumps()
    rid = request_ids(Paused.loads(stored).requests)["d1"]
    _, token = h.gate.add_user("carol", roles=["ops"])
    h.gate.store.close()
    # a human decides from the command line, against the same database
    from signoff.cli import main

    monkeypatch.setenv("SIGNOFF_DB", str(h.tmp / "signoff.db"))
    monkeypatch.chdir(h.tmp)
    assert main(["requests", "approve", rid, "--token", token]) == 0
    capsys.readouterr()
    # a new process: a new gate over the same file, new agent objects, the stored state
    h.gate = Gate(Policy.from_toml(h.policy_text, source="pyd.toml"),
                  SqliteStore(h.tmp / "signoff.db"), agent="pyd-bot")
    fresh, script = h.agent([text("shipped")])
    assert fresh.run_sync(**Paused.loads(stored).resume_kwargs()).output == "shipped"
    assert h.ran() == ["deploy prod latest"]
    assert h.gate.get_request(rid).status is RequestStatus.SUCCEEDED
    assert script.returns()["d1"] == "deployed latest to prod"


def test_parallel_calls_pause_together_and_the_allowed_one_runs_once(h: Harness) -> None:
    agent, script = h.agent([
        calls(("read_file", {"path": "notes"}, "r1"), ("deploy", {"env": "prod"}, "d1"),
              ("transfer", {"amount": 5, "to": "bob"}, "t1")),
        text("done")])
    first = agent.run_sync("do it all")
    ids = paused_on(first)
    assert sorted(ids) == ["d1", "t1"] and h.ran() == ["read_file notes"]
    paused = Paused.of(first)
    h.gate.decide(ids["d1"], Decision.approve(), identity=h.alice)
    half = agent.run_sync(**paused.resume_kwargs())  # one decided: it runs, the other waits
    assert list(paused_on(half)) == ["t1"]
    assert h.ran() == ["read_file notes", "deploy prod latest"]
    h.gate.decide(ids["t1"], Decision.approve(), identity=h.bob)
    assert agent.run_sync(**Paused.of(half).resume_kwargs()).output == "done"
    assert h.ran() == ["read_file notes", "deploy prod latest", "transfer 5 bob"]
    assert script.returns() == {"r1": "contents of notes", "d1": "deployed latest to prod",
                                "t1": "sent 5 to bob"}


def test_a_repeated_call_id_in_one_turn_is_refused(h: Harness) -> None:
    agent, _ = h.agent([calls(("read_file", {"path": "a"}, "x1"),
                              ("read_file", {"path": "b"}, "x1")), text("ok")])
    result = agent.run_sync("read")
    assert h.ran() == []  # neither ran; the turn says why, and the run went on
    assert "removed the tool call 'read_file' with an id repeated in its turn" in result.output
    assert result.output.count("removed the tool call") == 2


def test_a_call_id_an_earlier_turn_used_is_refused(h: Harness) -> None:
    agent, _ = h.agent([calls(("read_file", {"path": "a"}, "x1")),
                        calls(("read_file", {"path": "b"}, "x1"), ("read_file", {"path": "c"}, "")),
                        text("ok")])
    result = agent.run_sync("read")
    assert h.ran() == ["read_file a"]
    assert "with an id an earlier turn used" in result.output
    assert "with no id" in result.output


def test_a_call_id_reused_across_runs_of_the_thread_is_refused(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1"))])
    paused = Paused.of(agent.run_sync("ship it", conversation_id="conv-1"))
    h.gate.cancel(request_ids(paused.requests)["d1"], actor=None, reason="dropped")
    other, script = h.agent([calls(("deploy", {"env": "staging"}, "d1")), text("ok")])
    assert other.run_sync("again", conversation_id="conv-1").output == "ok"
    assert h.ran() == [] and "already used in this thread" in script.returns()["d1"]


def test_new_input_on_a_waiting_thread_is_refused(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1"))])
    first = agent.run_sync("ship it", conversation_id="conv-9")
    assert isinstance(first.output, DeferredToolRequests)
    with pytest.raises(Conflict) as caught:
        agent.run_sync("something else", conversation_id="conv-9")
    assert caught.value.code == "thread_waiting"


def test_an_unattended_run_is_blocked_and_the_model_told(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("ok")],
                            capability=Signoff(h.gate, interaction_mode="scheduled"))
    assert agent.run_sync("nightly").output == "ok"
    assert h.ran() == [] and script.outcomes()["d1"] == "failed"


def test_a_named_thread_and_the_wake_up_value(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1"))],
                       capability=Signoff(h.gate, thread_id="ticket-42"))
    paused = Paused.of(agent.run_sync("ship it"))
    rid = request_ids(paused.requests)["d1"]
    assert h.gate.get_request(rid).thread_id == "ticket-42"
    woken = wake(paused.requests)
    assert list(woken.approvals) == ["d1"] and woken.approvals["d1"] == ToolApproved()


class Message(BaseModel):
    text: str
    secret: str = Field("", exclude=True)  # the tool receives it; its JSON form hides it


def test_arguments_nobody_could_see_are_refused(h: Harness) -> None:
    sent: list[Message] = []

    def notify(message: Message) -> str:
        """Send a message."""
        sent.append(message)
        return "sent"

    agent, script = h.agent([calls(("notify", {"message": {"text": "hi"}}, "n1"),
                                   ("notify", {"message": {"text": "yo", "secret": "x"}}, "n2")),
                             text("ok")], extra_tools=[notify])
    assert agent.run_sync("say hi").output == "ok"
    assert [m.text for m in sent] == ["hi"]  # the first round-trips; the second does not
    assert "no faithful JSON form" in script.returns()["n2"]


def test_the_review_mode_the_application_sets(h: Harness) -> None:
    agent, _ = h.agent([calls(("transfer", {"amount": 1, "to": "bob"}, "t1")), text("ok")],
                       capability=Signoff(h.gate, review_mode="full"))
    assert agent.run_sync("pay").output == "ok"
    assert h.ran() == ["transfer 1 bob"]


@dataclass
class Recording(WrapperToolset[Any]):
    seen: list[str] = field(default_factory=list)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any,
                        tool: Any) -> Any:
        self.seen.append(name)
        return await super().call_tool(name, tool_args, ctx, tool)


class Recorder(AbstractCapability[Any]):
    """Another capability's toolset wrapper, listed after signoff's."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return Recording(wrapped=toolset, seen=self.seen)


def test_signoffs_wrapper_is_innermost_whatever_the_list_order(h: Harness) -> None:
    """Nothing sits between what signoff judged and the tool that runs: another
    capability's wrapper is outside it even when listed after it."""
    recorder = Recorder()
    script = Script([calls(("rm", {"path": "x"}, "x1")), text("ok")])
    agent: Agent[None, Any] = Agent(FunctionModel(script),
                                    output_type=[str, DeferredToolRequests],
                                    capabilities=[Signoff(h.gate), recorder])

    @agent.tool_plain
    def rm(path: str) -> str:
        """Remove a file."""
        return "removed"

    assert agent.run_sync("clean").output == "ok"
    assert recorder.seen == ["rm"]  # it saw the call signoff then refused: it is outside
    assert "no-rm" in script.returns()["x1"]


def test_an_approvers_response_is_the_tools_answer_and_nothing_runs(h: Harness) -> None:
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("ok")])
    paused = Paused.of(agent.run_sync("ship it"))
    h.gate.decide(request_ids(paused.requests)["d1"], Decision.respond("prod is frozen; wait"),
                  identity=h.alice)
    agent.run_sync(**paused.resume_kwargs())
    assert h.ran() == [] and script.returns()["d1"] == "prod is frozen; wait"


def test_the_toolset_refuses_a_bad_id_without_the_capability(h: Harness) -> None:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from signoff.adapters.pydantic_ai.toolset import bad_id

    turn = calls(("read_file", {}, "a"), ("read_file", {}, "a"), ("read_file", {}, "b"))
    earlier = calls(("read_file", {}, "b"))
    history = [ModelRequest(parts=[UserPromptPart("hi")]), earlier, turn]
    assert bad_id(history, "a") == "an id repeated in its turn"
    assert bad_id(history, "b") == "an id an earlier turn used"
    assert bad_id(history, "") == "no id" and bad_id(history, "zz") == "an id no model turn made"
    assert bad_id([turn], "b") is None


def test_typed_errors_for_what_cannot_be_used(h: Harness) -> None:
    from signoff.errors import ConfigurationError, InvalidInput

    with pytest.raises(ConfigurationError) as unknown:
        Signoff(h.gate, interaction_mode="sometimes")
    assert unknown.value.code == "unknown_interaction_mode"
    with pytest.raises(ConfigurationError) as wait:
        Signoff(h.gate, subagent_wait=0)
    assert wait.value.code == "invalid_wait"
    agent, _ = h.agent([text("nothing to do")])
    with pytest.raises(InvalidInput) as finished:
        Paused.of(agent.run_sync("hi"))
    assert finished.value.code == "not_paused"
    with pytest.raises(InvalidInput) as corrupt:
        Paused.loads('{"messages": 3}')
    assert corrupt.value.code == "invalid_pause"


def test_allowed_calls_are_each_judged_and_audited_memory_answering_after_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, worker = quick_gate(tmp_path, monkeypatch)
    script = Script([calls(("lookup", {"query": f"q{i}"}, f"c{i}")) for i in range(3)]
                    + [text("done")])
    agent: Agent[None, Any] = Agent(FunctionModel(script), output_type=[str, DeferredToolRequests],
                                    capabilities=[Signoff(gate)])

    @agent.tool_plain
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    try:
        result = agent.run_sync("look them up", conversation_id="conv-q")
        assert result.output == "done"
        assert {k: v for turn in (1, 2, 3) for k, v in script.returns(turn).items()} == {
            f"c{i}": f"found q{i}" for i in range(3)}
        assert audited(gate) == [(f"c{i}", "conv-q") for i in range(3)]
        assert worker == ["start_run"]  # the run's start read the thread, in a worker
    finally:
        gate.close()
