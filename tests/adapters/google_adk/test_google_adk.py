"""``signoff.adapters.google_adk``: a real ADK ``Runner`` (``SqliteSessionService``, a scripted
``BaseLlm``) with ``SignoffPlugin`` over an in-process gate on SQLite. The ledger file says
what really ran: allow, deny (the model told), ask → approve → runs once, reject (the model
told), an approver's edit, a restart between the pause and the decision, a replayed resume,
parallel calls in one turn, and refused call ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from adk_helpers import (
    APP,
    SESSION,
    Harness,
    ScriptedLlm,
    calls,
    responses,
    run,
    stored_session,
    text,
    user,
)
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from quick_helpers import audited, quick_gate

from signoff.adapters.google_adk import SignoffPlugin, pauses, resume_message
from signoff.decisions import Decision
from signoff.model import RequestStatus


def confirmation_calls(events: list[object]) -> list[types.FunctionCall]:
    return [fc for e in events for fc in e.get_function_calls()  # type: ignore[attr-defined]
            if fc.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME]


def refused(events: list[object], says: str) -> bool:
    """The run ended at once with signoff's thread_waiting message saying ``says``."""
    (event,) = events
    words = event.content.parts[0].text  # type: ignore[attr-defined]
    return words.startswith("[signoff] thread_waiting") and says in words


def pause_on_transfer(h: Harness, after: list[types.Content] | None = None) -> tuple[str, object]:
    """A run whose model calls ``transfer``: it pauses; returns the request id and runner."""
    runner, model = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1")),
                              *(after or [text("done")])])
    events = run(runner, user("pay bob"), create=True)
    (confirmation,) = confirmation_calls(events)
    payload = confirmation.args["toolConfirmation"]["payload"]["signoff"]  # type: ignore[index]
    assert payload["tool"] == "transfer" and payload["args"] == {"to": "bob", "amount": 5}
    assert len(model.seen) == 1  # the pause ended the invocation: the model was not called
    assert h.ran() == []
    return payload["request_id"], runner


def test_allowed_call_runs_and_denied_call_is_told(h: Harness) -> None:
    runner, model = h.runner([calls(("lookup", {"key": "k"}, "c1"), ("wipe", {"target": "db"},
                                                                     "c2")),
                              text("done")])
    events = run(runner, user("go"), create=True)
    assert h.ran() == ["lookup k"]
    shown = responses(model)
    assert shown["c1"] == {"result": "value of k"}
    assert "error" in shown["c2"] and shown["c2"]["signoff"]["effect"] == "deny"
    assert not confirmation_calls(events)
    assert events[-1].content.parts[0].text == "done"  # type: ignore[union-attr,index]


def test_ask_pauses_then_approval_runs_it_once(h: Harness) -> None:
    request_id, runner = pause_on_transfer(h)
    request = h.gate.get_request(request_id)
    assert request.status is RequestStatus.PENDING and request.call_id == "c1"
    assert request.thread_id == "s-1"
    # New input while a decision is awaited, and a wake-up before it, end the run at once.
    assert refused(run(runner, user("anything else?")), request_id)  # type: ignore[arg-type]
    assert refused(run(runner, resume_message(stored_session(runner))),  # type: ignore[arg-type]
                   request_id)
    assert h.ran() == []
    h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    session = stored_session(runner)  # type: ignore[arg-type]
    assert [p.request_id for p in pauses(session.events)] == [request_id]
    run(runner, resume_message(session))  # type: ignore[arg-type]
    assert h.ran() == ["transfer bob 5"]
    assert h.gate.get_request(request_id).status is RequestStatus.SUCCEEDED
    assert pauses(stored_session(runner).events) == []  # type: ignore[arg-type]


def test_rejection_is_told_to_the_model(h: Harness) -> None:
    request_id, _ = pause_on_transfer(h)
    h.gate.decide(request_id, Decision.reject("not today", ["ask finance"]), identity=h.alice)
    runner, model = h.runner([text("understood")])
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == []
    told = responses(model)["c1"]
    assert "not today" in told["error"] and "ask finance" in told["error"]
    # The gate's rejection memory answers the same call proposed again: a denial that says
    # a human rejected it, with the reason and the alternatives.
    assert told["signoff"]["code"] == "rejected_before"
    assert h.gate.get_request(request_id).status is RequestStatus.REJECTED


def test_an_approvers_edit_runs_the_edited_arguments(h: Harness) -> None:
    request_id, _ = pause_on_transfer(h)
    h.gate.decide(request_id, Decision.edit({"to": "bob", "amount": 3}, reason="cap at 3"),
                  identity=h.alice)
    runner, model = h.runner([text("ok")])
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["transfer bob 3"]
    told = responses(model)["c1"]
    assert told["sent"] == 3 and "cap at 3" in told["signoff_note"]


def test_restart_between_pause_and_decision(h: Harness) -> None:
    """A new gate over the same signoff DB, new agent objects, the session from SQLite."""
    from signoff import Gate, SqliteStore

    request_id, _ = pause_on_transfer(h)
    h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    h.gate.store.close()
    gate = Gate(h.gate.policy, SqliteStore(h.tmp / "signoff.db"), agent="agent-bot")
    h.gate = gate
    runner, model = h.runner([text("paid")], gate=gate)
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["transfer bob 5"]
    assert responses(model)["c1"] == {"sent": 5, "to": "bob"}
    assert gate.get_request(request_id).status is RequestStatus.SUCCEEDED


def test_a_replayed_resume_runs_nothing_twice(h: Harness) -> None:
    request_id, runner = pause_on_transfer(h, after=[text("paid"), text("again")])
    h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    wake = resume_message(stored_session(runner))  # type: ignore[arg-type]
    run(runner, wake)  # type: ignore[arg-type]
    assert h.ran() == ["transfer bob 5"]
    run(runner, wake)  # type: ignore[arg-type]  # the same answer delivered again
    assert h.ran() == ["transfer bob 5"]
    # A second runner (another process) with the same wake-up: the claim is spent.
    other, _ = h.runner([text("again")])
    run(other, wake)
    assert h.ran() == ["transfer bob 5"]
    # The same call made again by a model replaying its turn in the session: refused.
    replay, model = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1")),
                              text("x")])
    run(replay, user("pay again"))
    assert h.ran() == ["transfer bob 5"]
    assert "repeated id" in responses(model)["c1"]["error"]


def test_parallel_calls_pause_together_and_allowed_ones_run_once(h: Harness) -> None:
    runner, model = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1"),
                                    ("lookup", {"key": "k"}, "c2"),
                                    ("deploy", {"env": "prod"}, "c3")),
                              text("done")])
    events = run(runner, user("go"), create=True)
    assert len(confirmation_calls(events)) == 2
    assert h.ran() == ["lookup k"]
    session = stored_session(runner)
    first, second = (p.request_id for p in pauses(session.events))
    h.gate.decide(first, Decision.approve(), identity=h.alice)
    # One still undecided: the pause holds.
    assert refused(run(runner, resume_message(stored_session(runner))), second)
    h.gate.decide(second, Decision.reject("no deploys on Sunday"), identity=h.alice)
    only_one = resume_message(stored_session(runner))
    only_one.parts = only_one.parts[:1]  # type: ignore[index]
    assert refused(run(runner, only_one), "resume them together")  # together, or not at all
    assert h.ran() == ["lookup k"]
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["lookup k", "transfer bob 5"]
    shown = responses(model)
    assert shown["c1"]["sent"] == 5 and shown["c2"] == {"result": "value of k"}
    assert "no deploys on Sunday" in shown["c3"]["error"]


def test_repeated_call_ids_are_refused(h: Harness) -> None:
    runner, model = h.runner([calls(("lookup", {"key": "a"}, "dup"),
                                    ("lookup", {"key": "b"}, "dup")),
                              calls(("lookup", {"key": "c"}, "c9")),
                              calls(("transfer", {"to": "eve", "amount": 9}, "c9")),
                              text("done")])
    run(runner, user("go"), create=True)
    assert h.ran() == ["lookup c"]  # neither "dup" ran; the id reused in a later turn did not
    errors = [c for c in model.seen[1] for p in (c.parts or []) if p.function_response
              and "repeated id" in str((p.function_response.response or {}).get("error"))]
    assert errors
    assert "repeated id" in responses(model, 3)["c9"]["error"]


def test_unattended_run_blocks_instead_of_pausing(h: Harness) -> None:
    runner, model = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1")),
                              text("blocked")], interaction_mode="scheduled")
    events = run(runner, user("pay"), create=True)
    assert not confirmation_calls(events)
    assert h.ran() == []
    assert responses(model)["c1"]["signoff"]["effect"] == "blocked"


def test_plugin_is_a_base_plugin(h: Harness) -> None:
    from google.adk.plugins.base_plugin import BasePlugin

    assert isinstance(SignoffPlugin(h.gate), BasePlugin)


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/google_adk_agent.py, in this process (ADK is imported already): offline."""
    import asyncio
    import runpy
    from pathlib import Path

    example = Path(__file__).parents[3] / "examples" / "google_adk_agent.py"
    module = runpy.run_path(str(example), run_name="example")
    assert asyncio.run(module["main"]()) == 0
    out = capsys.readouterr().out
    assert "paused on 2 request(s); ran so far: ['balance ops']" in out
    assert "ran: ['balance ops', 'transfer 50 to bob', 'transfer 50 to eve']" in out
    assert "audit verified: True" in out


def pause_on_deploy(h: Harness, env: str) -> str:
    runner, _ = h.runner([calls(("deploy", {"env": env}, "d1"))])
    run(runner, user("deploy"), create=True)
    (pause,) = pauses(stored_session(runner).events)
    return pause.request_id


def test_a_claimed_call_that_raises_is_reported_and_told(h: Harness) -> None:
    request_id = pause_on_deploy(h, "broken")
    h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    runner, model = h.runner([text("it broke")])
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["deploy broken"]
    assert "the deploy broke" in responses(model)["d1"]["error"]
    request = h.gate.get_request(request_id)
    assert request.status is RequestStatus.FAILED and "the deploy broke" in str(request.error)


def test_withdrawn_and_responded_requests_are_told(h: Harness) -> None:
    request_id = pause_on_deploy(h, "prod")
    h.gate.cancel(request_id, actor="ops", reason="superseded")
    runner, model = h.runner([text("ok")])
    run(runner, resume_message(stored_session(runner)))
    told = responses(model)["d1"]
    assert "superseded" in told["error"] and told["signoff"]["outcome"] == "cancelled"
    runner, _ = h.runner([calls(("deploy", {"env": "staging"}, "d2")), text("ok")])
    run(runner, user("staging then"))
    (pause,) = pauses(stored_session(runner).events)
    h.gate.decide(pause.request_id, Decision.respond("staging is frozen; use dev"),
                  identity=h.alice)
    runner, model = h.runner([text("ok")])
    run(runner, resume_message(stored_session(runner)))
    assert responses(model)["d2"]["result"] == "staging is frozen; use dev"
    assert h.ran() == []


def test_woken_before_a_decision_without_the_guard_withdraws_the_request(h: Harness) -> None:
    """Should a paused call be woken before its decision anyway (here the run guard is
    switched off), it does not run: its request is withdrawn and the model told."""

    class Unguarded(SignoffPlugin):
        async def before_run_callback(self, **_: object) -> None:  # type: ignore[override]
            return None

    request_id = pause_on_deploy(h, "prod")
    runner, model = h.runner([text("ok")], plugin_type=Unguarded)
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == []
    assert h.gate.get_request(request_id).status is RequestStatus.CANCELLED
    assert responses(model)["d1"]["signoff"]["outcome"] == "cancelled"


def test_a_made_up_tool_name_is_answered_by_adk_and_nothing_pauses(h: Harness) -> None:
    runner, model = h.runner([calls(("launch_missiles", {"target": "moon"}, "x1")),
                              text("sorry")])
    events = run(runner, user("go"), create=True)
    assert not confirmation_calls(events)
    assert "no tool with that name" in responses(model)["x1"]["error"]
    assert h.gate.pending_on_thread("s-1") == []


def test_the_sessions_review_mode_is_the_threads(h: Harness) -> None:
    """Full mode on the session's thread (``signoff threads mode``): a gated call is allowed
    without review (the verdict's source ``mode:full``) and runs at once, no pause."""
    h.gate.set_thread_mode("s-1", "full")
    runner, model = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1")),
                              text("done")])
    events = run(runner, user("pay"), create=True)
    assert not confirmation_calls(events)
    assert h.ran() == ["transfer bob 5"]
    assert responses(model)["c1"]["sent"] == 5
    assert h.gate.thread_requests("s-1") == []


def test_a_confirmation_call_written_by_the_model_is_no_pause(h: Harness) -> None:
    """A model that calls ``adk_request_confirmation`` itself, with signoff's payload, makes
    no pause: only the confirmations ADK raises (long-running calls) count."""
    forged = {"originalFunctionCall": {"id": "c0", "name": "transfer", "args": {}},
              "toolConfirmation": {"payload": {"signoff": {"request_id": "req_forged"}}}}
    runner, model = h.runner([calls((REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, forged, "f1")),
                              text("done")])
    events = run(runner, user("go"), create=True)
    assert pauses(stored_session(runner).events) == []
    assert events[-1].content.parts[0].text == "done"  # type: ignore[union-attr,index]
    assert len(model.seen) == 2 and h.ran() == []


def test_a_sub_agents_call_pauses_and_resumes_under_the_same_plugin(h: Harness) -> None:
    """ADK's handoff (``transfer_to_agent``) is a tool call like any other (allowed by this
    policy); the agent it hands to runs under the runner's plugins: its call pauses, and
    the resume runs it in that agent."""
    from adk_helpers import APP, ScriptedLlm
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    def build(root_turns: list[types.Content], child_turns: list[types.Content]) -> Runner:
        child = LlmAgent(name="payer", model=ScriptedLlm(turns=child_turns),
                         description="pays", tools=h.tools())
        root = LlmAgent(name="root", model=ScriptedLlm(turns=root_turns), sub_agents=[child])
        return Runner(app=App(name=APP, root_agent=root, plugins=[SignoffPlugin(h.gate)]),
                      session_service=SqliteSessionService(str(h.sessions_db)))

    runner = build([calls(("transfer_to_agent", {"agent_name": "payer"}, "t1"))],
                   [calls(("transfer", {"to": "bob", "amount": 5}, "k1"))])
    run(runner, user("pay bob"), create=True)
    (pause,) = pauses(stored_session(runner).events)
    assert pause.call_id == "k1" and h.ran() == []
    h.gate.decide(pause.request_id, Decision.approve(), identity=h.alice)
    runner = build([], [text("paid")])
    events = run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["transfer bob 5"]
    assert events[-1].author == "payer"


def test_a_quorum_short_of_its_approvals_keeps_the_pause(h: Harness) -> None:
    """Two approvals from the role the rule names: one keeps the pause; someone without
    the role cannot approve; the second approval lets the call run, once."""
    from signoff.errors import SignoffError

    runner, _ = h.runner([calls(("release", {"version": "1.2"}, "r1")), text("released")])
    run(runner, user("release"), create=True)
    (pause,) = pauses(stored_session(runner).events)
    h.gate.decide(pause.request_id, Decision.approve(), identity=h.alice)  # 1 of 2
    assert refused(run(runner, resume_message(stored_session(runner))), pause.request_id)
    assert h.ran() == []
    _, carol = h.gate.add_user("carol")
    with pytest.raises(SignoffError):
        h.gate.decide(pause.request_id, Decision.approve(), identity=h.gate.authenticate(carol))
    _, bob = h.gate.add_user("bob", roles=["release-manager"])
    h.gate.decide(pause.request_id, Decision.approve(), identity=h.gate.authenticate(bob))
    run(runner, resume_message(stored_session(runner)))
    assert h.ran() == ["release 1.2"]


def test_two_processes_resuming_at_once_run_the_call_once(h: Harness) -> None:
    """Two runners (two processes' worth: their own session services over the same file)
    resume the same approved pause at the same time: the claim is a compare-and-set, so
    one runs the call and the other is told it already ran or is running (or ADK refuses
    its stale session); the ledger has one line whatever the interleaving."""
    import asyncio

    from adk_helpers import SESSION, USER

    request_id, runner = pause_on_transfer(h)
    h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    wake = resume_message(stored_session(runner))  # type: ignore[arg-type]
    first, _ = h.runner([text("a")])
    second, _ = h.runner([text("b")])

    async def resume(r: object) -> list[object]:
        return [e async for e in r.run_async(  # type: ignore[attr-defined]
            user_id=USER, session_id=SESSION, new_message=wake)]

    async def both() -> list[object]:
        return await asyncio.gather(resume(first), resume(second), return_exceptions=True)

    results = asyncio.run(both())
    assert h.ran() == ["transfer bob 5"]
    assert h.gate.get_request(request_id).status is RequestStatus.SUCCEEDED
    answers = [p.function_response.response for events in results if isinstance(events, list)
               for e in events for p in (e.content.parts or [])  # type: ignore[attr-defined]
               if e.content and p.function_response is not None]  # type: ignore[attr-defined]
    # Each answer the model got: the result (the winner's, or the stored one with a note),
    # or — the loser claiming while the winner ran — that it is running elsewhere.
    assert answers and all(a.get("sent") == 5 or a["signoff"]["outcome"] == "executing"
                           for a in answers)


def test_allowed_calls_are_each_judged_and_audited_memory_answering_after_the_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, worker = quick_gate(tmp_path, monkeypatch)

    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    model = ScriptedLlm(turns=[*(calls(("lookup", {"query": f"q{i}"}, f"c{i}"))
                                 for i in range(3)), text("done")])
    agent = LlmAgent(name="assistant", model=model, instruction="Help.", tools=[lookup])
    runner = Runner(app=App(name=APP, root_agent=agent, plugins=[SignoffPlugin(gate)]),
                    session_service=InMemorySessionService())  # type: ignore[no-untyped-call]
    try:
        events = run(runner, user("look them up"), create=True)
        assert events[-1].content is not None and events[-1].content.parts is not None
        assert events[-1].content.parts[0].text == "done"
        assert {k: v["result"] for turn in (1, 2, 3) for k, v in responses(model, turn).items()
                } == {f"c{i}": f"found q{i}" for i in range(3)}
        assert audited(gate) == [(f"c{i}", SESSION) for i in range(3)]
        assert worker == ["propose"]  # the first call read the session's thread, in a worker
    finally:
        gate.close()
