"""What every framework adapter does alike, run by each of them (``conftest.FRAMEWORKS``)
over an in-process gate and over a ``Client`` of a real server: the real framework, a
scripted model, the ledger as the oracle of what ran.

A call is frozen and bound (what runs is exactly the approved arguments), runs at most
once however often the run is resumed, an ask pauses the run durably and names its
request, the thread's review mode and the run's interaction mode are honoured, the
clarification tool is withdrawn when no one would answer, and a subagent's call is
labelled with the call that started it."""

from __future__ import annotations

import time

import pytest
from bh_world import Driver

from signoff import Decision
from signoff.canonical import args_hash
from signoff.model import RequestStatus


def by_call(d: Driver, ids: list[str]) -> dict[str, str]:
    return {d.w.request(i).call_id: i for i in ids}


def test_an_allowed_call_runs_once_and_a_denied_one_is_told_to_the_model(d: Driver) -> None:
    assert d.start([[("lookup", {"key": "k"}, "c1"), ("wipe", {"target": "db"}, "c2")],
                    "done"]) == []
    assert d.w.ran() == ["lookup k"]
    assert "value of k" in d.told["c1"]
    assert "no-wipe" in d.told["c2"]
    assert "wiped" not in d.told["c2"]


def test_an_ask_pauses_with_its_request_and_an_approval_runs_it_once(d: Driver) -> None:
    [rid] = d.start([[("deploy", {"env": "prod"}, "c1")], "shipped"])
    request = d.w.request(rid)
    assert (request.tool, request.call_id, request.thread_id, request.status) == (
        "deploy", "c1", d.w.thread, RequestStatus.PENDING)
    assert request.args_hash == args_hash({"env": "prod"})  # frozen: what the approver sees
    assert d.w.ran() == []
    assert d.resume() == [rid]  # woken before anyone decided: still paused, nothing ran
    assert d.w.ran() == []
    d.w.decide(rid, Decision.approve())
    assert d.resume() == []
    assert d.w.ran() == ["deploy prod"]
    assert "deployed prod" in d.told["c1"]
    assert d.w.request(rid).status is RequestStatus.SUCCEEDED
    d.replay()  # the same wake-up again, as a retrying framework sends it
    d.replay()
    assert d.w.ran() == ["deploy prod"]


def test_a_rejection_tells_the_model_the_reason_and_nothing_runs(d: Driver) -> None:
    [rid] = d.start([[("deploy", {"env": "prod"}, "c1")], "understood"])
    d.w.decide(rid, Decision.reject("freeze week", ("deploy to staging",)))
    assert d.resume() == []
    assert d.w.ran() == []
    assert "freeze week" in d.told["c1"] and "deploy to staging" in d.told["c1"]
    assert d.w.request(rid).status is RequestStatus.REJECTED
    d.replay()
    assert d.w.ran() == []


def test_an_approvers_edit_runs_the_edited_arguments_and_the_model_is_told(d: Driver) -> None:
    [rid] = d.start([[("deploy", {"env": "prod"}, "c1")], "ok"])
    d.w.decide(rid, Decision.edit({"env": "staging"}, reason="staging first"))
    assert d.resume() == []
    assert d.w.ran() == ["deploy staging"]
    assert "deployed staging" in d.told["c1"] and "staging first" in d.told["c1"]
    d.replay()
    assert d.w.ran() == ["deploy staging"]


def test_a_restart_between_the_pause_and_the_decision(d: Driver) -> None:
    [rid] = d.start([[("refund", {"to": "bob", "amount": 5}, "c1")], "refunded"])
    d.w.restart()
    d.w.decide(rid, Decision.approve())
    assert d.resume() == []
    assert d.w.ran() == ["refund bob 5"]
    assert "refunded 5 to bob" in d.told["c1"]


def test_parallel_calls_pause_together_and_the_free_one_runs_once(d: Driver) -> None:
    paused = d.start([[("deploy", {"env": "prod"}, "c1"), ("lookup", {"key": "k"}, "c2"),
                       ("refund", {"to": "bob", "amount": 5}, "c3")], "done"])
    assert sorted(by_call(d, paused)) == ["c1", "c3"]
    assert d.w.ran() == ["lookup k"]
    ids = by_call(d, paused)
    d.w.decide(ids["c1"], Decision.approve())
    d.w.decide(ids["c3"], Decision.reject("not today"))
    assert d.resume() == []
    assert d.w.ran() == ["lookup k", "deploy prod"]
    assert "value of k" in d.told["c2"] and "deployed prod" in d.told["c1"]
    assert "not today" in d.told["c3"]
    d.replay()
    assert d.w.ran() == ["lookup k", "deploy prod"]


def test_calls_sharing_an_id_in_one_turn_run_none(d: Driver) -> None:
    """Which of two calls sharing an id the model meant is not for the gate to guess (a
    framework may also end the run on such a turn: nothing runs either way)."""
    assert d.start([[("lookup", {"key": "a"}, "dup"),
                     ("refund", {"to": "eve", "amount": 9}, "dup")], "done"]) == []
    assert d.w.ran() == []
    assert [r for r in d.w.requests() if r.tool == "refund"] == []


def test_a_call_id_an_earlier_turn_used_runs_nothing(d: Driver) -> None:
    """A decision or a result bound to that id would be bound to the wrong call."""
    assert d.start([[("lookup", {"key": "b"}, "c9")],
                    [("deploy", {"env": "prod"}, "c9"), ("lookup", {"key": "c"}, "c2")],
                    "done"]) == []
    assert "deploy prod" not in d.w.ran() and d.w.ran()[0] == "lookup b"
    assert [r for r in d.w.requests() if r.tool == "deploy"] == []


def forced_clarification(d: Driver) -> None:
    """A model that calls the withdrawn clarification tool anyway: it never runs, and the
    model is told why — unless the framework ends a run on a call of a tool it did not offer
    (``Driver.ends_on_unoffered_tool``)."""
    assert "ask_user which?" not in d.w.ran()
    if d.ends_on_unoffered_tool:
        assert "q1" not in d.told
    else:
        assert "no one will answer" in d.told["q1"] or "Nobody can answer" in d.told["q1"]


def test_an_unattended_run_is_blocked_not_paused_and_has_no_clarification_tool(
        d: Driver) -> None:
    assert d.start([[("deploy", {"env": "prod"}, "c1")],
                    [("ask_user", {"question": "which?"}, "q1")], "BLOCKED: deploy"],
                   interaction_mode="scheduled") == []
    assert d.w.ran() == []
    assert d.offered and all("ask_user" not in tools for tools in d.offered)
    assert "lookup" in d.offered[0]
    assert "blocked" in d.told["c1"].lower()
    forced_clarification(d)


def test_full_review_mode_runs_gated_calls_and_withdraws_the_clarification_tool(
        d: Driver) -> None:
    d.w.set_mode("full")
    assert d.start([[("refund", {"to": "bob", "amount": 5}, "c1")],
                    [("ask_user", {"question": "which?"}, "q1")], "done"]) == []
    assert d.w.ran() == ["refund bob 5"]
    assert d.offered and all("ask_user" not in tools for tools in d.offered)
    forced_clarification(d)


def test_manual_review_mode_offers_the_clarification_tool(d: Driver) -> None:
    assert d.start([[("ask_user", {"question": "which?"}, "q1")], "done"]) == []
    assert "ask_user" in d.offered[0]
    assert d.w.ran() == ["ask_user which?"]


def test_auto_review_mode_reviews_a_low_risk_call_and_asks_a_human_for_a_high_one(
        d: Driver) -> None:
    d.w.set_mode("auto")
    paused = d.start([[("refund", {"to": "bob", "amount": 5}, "c1"),
                       ("deploy", {"env": "prod"}, "c2")], "done"])
    assert list(by_call(d, paused)) == ["c2"]
    assert d.w.ran() == ["refund bob 5"]


def test_a_subagents_call_is_labelled_with_its_parent_and_never_runs_unapproved(
        d: Driver) -> None:
    assert d.delegating([[("delegate", {"task": "ship"}, "p1")], "parent done"],
                        [[("deploy", {"env": "staging"}, "k1")], "child done"],
                        subagent_wait=0.5) == []
    [asked] = [r for r in d.w.all_requests() if r.tool == "deploy"]
    assert asked.parent_call == "p1" and asked.call_id == "k1"
    assert asked.status is RequestStatus.CANCELLED  # withdrawn when its wait ran out
    assert d.w.ran() == []
    assert "p1" in d.told


def test_a_subagent_of_an_unattended_run_is_unattended_too(d: Driver) -> None:
    """A child never runs laxer than its parent: its ask is not left waiting for a human
    who will not come (it is blocked, or refused at once), and nothing runs."""
    started = time.monotonic()
    assert d.delegating([[("delegate", {"task": "ship"}, "p1")], "parent done"],
                        [[("deploy", {"env": "staging"}, "k1")], "child done"],
                        subagent_wait=30, interaction_mode="scheduled") == []
    assert time.monotonic() - started < 20  # it did not wait out subagent_wait
    assert [r for r in d.w.all_requests() if r.tool == "deploy"
            and r.status is RequestStatus.PENDING] == []
    assert d.w.ran() == []


def test_an_approval_counts_only_for_the_arguments_it_was_given_for(d: Driver) -> None:
    """A decision bound to another arguments hash than the request's is refused, and the
    call does not run on it."""
    [rid] = d.start([[("deploy", {"env": "prod"}, "c1")], "ok"])
    with pytest.raises(Exception) as refused:
        d.w.decide(rid, Decision.approve(expected_args_hash=args_hash({"env": "qa"})))
    assert "changed since they were shown" in str(refused.value)
    assert d.resume() == [rid]
    assert d.w.ran() == []


def test_auto_approve_this_thread_applies_to_the_run_it_resumes(d: Driver) -> None:
    """The approval card's second button on the pause's only request: it runs, and the
    resumed run's next gated call goes to the auto reviewer (a low-risk one is approved)."""
    [rid] = d.start([[("refund", {"to": "bob", "amount": 5}, "c1")],
                     [("refund", {"to": "dan", "amount": 6}, "c2")], "done"])
    d.w.decide(rid, Decision.approve(scope="auto_thread"))
    assert d.resume() == []
    assert d.w.ran() == ["refund bob 5", "refund dan 6"]
