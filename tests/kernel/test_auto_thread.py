"""Auto-approve this thread, on both backends.

One decision approves the request, switches its thread to ``auto`` and approves the
pause's other undecided calls that the card listed, with the arguments hash it showed —
in one transaction, audited, under the ceiling, the no-self-approval rule and the "not
while a call executes" rule of setting a mode by hand. A call the card did not list, whose
arguments changed since, or of another run or asker, stays with humans (issue 42).
"""

from __future__ import annotations

import json
import threading

import pytest

from signoff.errors import Conflict, Forbidden, InvalidDecision, InvalidInput
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind, ProposalKind
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

POLICY = """
[policy]
version = "auto-1"
gated = ["deploy", "note", "refund", "wipe"]
ceiling = "{ceiling}"
[tools.deploy]
[tools.note]
[tools.refund]
[tools.wipe]

[[rules]]
id = "wipe-always-human"
effect = "ask"
tool = "wipe"
mandatory = true

[[rules]]
id = "refund-finance"
effect = "ask"
tool = "refund"
roles = ["finance"]

[[rules]]
id = "deploy-two"
effect = "ask"
tool = "deploy"
approvals = 2
"""

RUN = RunContext(thread_id="chat-1", run_id="run-1", principal="alice")


def _gate(store: Store, ceiling: str = "full") -> tuple[Gate, dict[str, Identity]]:
    gate = Gate(Policy.from_toml(POLICY.replace("{ceiling}", ceiling)), store)
    who = {}
    for name, roles in {"bob": ("approver",), "carol": ("approver",),
                        "fin": ("approver", "finance"), "alice": ("approver",)}.items():
        _, token = gate.add_user(name, roles=roles)
        who[name] = gate.authenticate(token)

    @gate.tool()
    def note(text: str) -> str:
        return f"noted {text}"

    return gate, who


def _ask(gate: Gate, call_id: str, tool: str = "note", context: RunContext = RUN,
         **args: str) -> str:
    proposal = gate.propose(ToolCall(id=call_id, name=tool, args=args or {"text": call_id}),
                            context)
    assert proposal.kind is ProposalKind.PENDING, proposal
    assert proposal.request is not None
    return proposal.request.id


def _status(gate: Gate, request_id: str) -> RequestStatus:
    return gate.get_request(request_id).status


def _listing(gate: Gate, *request_ids: str) -> list[tuple[str, str]]:
    """What a card shows: each call with the arguments hash that would run."""
    return [(i, gate.get_request(i).run_hash) for i in request_ids]


def _events(store: Store, kind: str) -> list[dict[str, object]]:
    return [dict(json.loads(e.data), request_id=e.request_id, actor=e.actor)
            for e in store.audit_events() if e.kind == kind]


def test_approves_switches_and_approves_the_rest_of_the_pause(store: Store) -> None:
    gate, who = _gate(store)
    first = _ask(gate, "c1")
    second = _ask(gate, "c2")
    mandatory = _ask(gate, "c3", tool="wipe", path="/srv")
    not_mine = _ask(gate, "c4", tool="refund", amount="5")
    quorum = _ask(gate, "c5", tool="deploy", env="prod")
    rejected_later = _ask(gate, "c6")
    gate.decide(quorum, Decision.approve(), identity=who["carol"])  # a first vote of two

    listed = _listing(gate, second, mandatory, not_mine, quorum, rejected_later)
    result = gate.decide(first, Decision.approve(scope="auto_thread", listed=listed),
                         identity=who["bob"])

    assert result.request.status is RequestStatus.APPROVED and result.transitioned
    assert result.review_mode == "auto"
    assert set(result.also_approved) == {second, rejected_later}
    assert _status(gate, second) is RequestStatus.APPROVED
    assert _status(gate, rejected_later) is RequestStatus.APPROVED
    # kept for a human: mandatory, a role bob lacks, a quorum someone already voted on
    assert _status(gate, mandatory) is RequestStatus.PENDING
    assert _status(gate, not_mine) is RequestStatus.PENDING
    assert _status(gate, quorum) is RequestStatus.PENDING
    memory = store.thread_memory("chat-1", fresh=True)
    assert (memory.mode, memory.mode_by, memory.mode_run) == ("auto", "bob", "run-1")
    # every step audited, the mode change naming the decision that made it
    modes = _events(store, "thread.mode")
    assert modes == [{"thread_id": "chat-1", "review_mode": "auto",
                      "decision_id": result.decision_id, "via": "auto_thread",
                      "request_id": first, "actor": "bob"}]
    votes = {e["request_id"]: e["scope"] for e in _events(store, "decision.recorded")
             if e["actor"] == "bob"}
    assert votes == {first: "auto_thread", second: "auto_thread",
                     rejected_later: "auto_thread"}
    assert store.verify_audit().ok
    # and an approved call of the pause runs exactly as asked, once
    ran = gate.execute(second)
    assert (ran.kind, ran.result) == (OutcomeKind.EXECUTED, "noted c2")
    # the thread is in auto now: the reviewer passes the next low-risk gated call
    assert gate.propose(ToolCall(id="c7", name="note", args={"text": "x"}),
                        RunContext(thread_id="chat-1", run_id="run-2")).kind \
        is ProposalKind.ALLOWED


def test_a_higher_mode_stays(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "c1", tool="wipe", path="/")  # mandatory: asked even in full
    gate.set_thread_mode("chat-1", "full")
    result = gate.decide(request_id, Decision.approve(scope="auto_thread"),
                         identity=who["bob"])
    assert result.review_mode == "full"
    assert store.thread_memory("chat-1", fresh=True).mode == "full"
    assert _events(store, "thread.mode")[-1].get("via") is None  # only the trusted set


@pytest.mark.parametrize(("ceiling", "code"), [("manual", "above_ceiling")])
def test_above_the_ceiling_writes_nothing(store: Store, ceiling: str, code: str) -> None:
    gate, who = _gate(store, ceiling=ceiling)
    request_id = _ask(gate, "c1")
    other = _ask(gate, "c2")
    with pytest.raises(Forbidden) as caught:
        gate.decide(request_id, Decision.approve(scope="auto_thread"), identity=who["bob"])
    assert caught.value.code == code
    assert _status(gate, request_id) is RequestStatus.PENDING
    assert _status(gate, other) is RequestStatus.PENDING
    assert store.decisions(request_id) == []
    assert store.thread_memory("chat-1", fresh=True).mode is None
    # approve once is still open under that ceiling
    gate.decide(request_id, Decision.approve(), identity=who["bob"])
    assert _status(gate, request_id) is RequestStatus.APPROVED


def test_a_party_of_the_thread_cannot(store: Store) -> None:
    """Alice asks on the thread (its principal); she may not auto-approve its calls, not
    even another agent's call on it: the mode would pass her own next ones."""
    gate, who = _gate(store)
    request_id = _ask(gate, "c1", context=RunContext(thread_id="chat-1", run_id="run-1",
                                                     principal="dave"))
    _ask(gate, "c2", context=RunContext(thread_id="chat-1", run_id="run-1",
                                        principal="alice"))
    with pytest.raises(Forbidden) as caught:
        gate.decide(request_id, Decision.approve(scope="auto_thread"), identity=who["alice"])
    assert caught.value.code == "self_approval"
    assert store.decisions(request_id) == []
    assert store.thread_memory("chat-1", fresh=True).mode is None
    # approving that call once stays open to her
    gate.decide(request_id, Decision.approve(), identity=who["alice"])


def test_refused_while_a_call_of_the_thread_executes(store: Store) -> None:
    gate, who = _gate(store)
    running = _ask(gate, "c1")
    waiting = _ask(gate, "c2")
    gate.decide(running, Decision.approve(), identity=who["bob"])
    gate.claim(running)  # executing now
    with pytest.raises(Conflict) as caught:
        gate.decide(waiting, Decision.approve(scope="auto_thread"), identity=who["carol"])
    assert caught.value.code == "run_in_progress"
    assert store.decisions(waiting) == []


def test_a_request_without_a_thread(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "c1", context=RunContext(run_id="r"))
    with pytest.raises(InvalidDecision) as caught:
        gate.decide(request_id, Decision.approve(scope="auto_thread"), identity=who["bob"])
    assert caught.value.code == "no_thread"
    assert _status(gate, request_id) is RequestStatus.PENDING


def test_a_replay_answers_the_same(store: Store) -> None:
    gate, who = _gate(store)
    first = _ask(gate, "c1")
    second = _ask(gate, "c2")
    decision = Decision.approve(scope="auto_thread", listed=_listing(gate, second))
    once = gate.decide(first, decision, identity=who["bob"], idempotency_key="k1")
    again = gate.decide(first, decision, identity=who["bob"], idempotency_key="k1")
    assert again.replayed and again.also_approved == once.also_approved == (second,)
    assert again.review_mode == "auto"


def test_a_mode_set_while_nothing_waits_names_no_run(store: Store) -> None:
    gate, _ = _gate(store)
    gate.set_thread_mode("chat-1", "auto")
    assert store.thread_memory("chat-1", fresh=True).mode_run is None
    _ask(gate, "c1", tool="wipe", path="/")
    gate.set_thread_mode("chat-1", "manual")
    memory = store.thread_memory("chat-1", fresh=True)
    assert (memory.mode, memory.mode_run) == ("manual", "run-1")


def test_the_pauses_only_request_names_its_run_as_the_one_that_takes_the_mode(
        store: Store) -> None:
    """Approved by the same vote, the request no longer waits: the run it paused is
    still the one that resumes into the new mode."""
    gate, who = _gate(store)
    only = _ask(gate, "c1")
    gate.decide(only, Decision.approve(scope="auto_thread"), identity=who["bob"])
    memory = store.thread_memory("chat-1", fresh=True)
    assert (memory.mode, memory.mode_run) == ("auto", "run-1")


def test_racing_approvers_on_one_pause(store: Store) -> None:
    """Eight approvers each press "Auto-approve this thread" on another call of the same
    pause, at once: every call is approved exactly once (one vote each), nothing
    deadlocks, and the chain verifies."""
    gate, _ = _gate(store)
    people = []
    for n in range(8):
        _, token = gate.add_user(f"a{n}", roles=("approver",))
        people.append(gate.authenticate(token))
    ids = [_ask(gate, f"c{n}") for n in range(8)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def press(n: int) -> None:
        barrier.wait()
        try:
            gate.decide(ids[n], Decision.approve(scope="auto_thread"), identity=people[n])
        except Conflict as exc:  # its call was approved by another's press first
            if exc.code != "already_decided":
                errors.append(exc)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=press, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    for request_id in ids:
        assert _status(gate, request_id) is RequestStatus.APPROVED
        assert len(store.decisions(request_id)) == 1
    assert store.thread_memory("chat-1", fresh=True).mode == "auto"
    assert store.verify_audit().ok


def test_a_person_setting_the_mode_meets_the_same_checks_in_the_kernel(store: Store) -> None:
    """The other route to the same state: ``Gate.set_thread_mode`` by a person (the Python
    API, the CLI, the server) is refused above the ceiling and under an executing call in
    the transaction that writes it, not only by the HTTP route."""
    gate, who = _gate(store, ceiling="auto")
    with pytest.raises(Forbidden) as caught:
        gate.set_thread_mode("chat-1", "full", actor="bob")
    assert caught.value.code == "above_ceiling"
    running = _ask(gate, "c1")
    gate.decide(running, Decision.approve(), identity=who["bob"])
    gate.claim(running)
    with pytest.raises(Conflict) as busy:
        gate.set_thread_mode("chat-1", "auto", actor="bob")
    assert busy.value.code == "run_in_progress"
    assert store.thread_memory("chat-1", fresh=True).mode is None
    gate.set_thread_mode("chat-1", "full")  # trusted code: clamped when used, not refused


@pytest.mark.parametrize("scope", ["AUTO_THREAD", "auto-thread", "auto_thread\x00", "", "x" * 8192])
def test_a_scope_spelled_otherwise_is_a_typed_error(scope: str) -> None:
    with pytest.raises(InvalidDecision) as caught:
        Decision.approve(scope=scope)
    assert caught.value.code == "unknown_scope"


def test_no_list_approves_the_request_alone(store: Store) -> None:
    gate, who = _gate(store)
    first = _ask(gate, "c1")
    second = _ask(gate, "c2")
    result = gate.decide(first, Decision.approve(scope="auto_thread"), identity=who["bob"])
    assert (result.request.status, result.review_mode, result.also_approved) == \
        (RequestStatus.APPROVED, "auto", ())
    assert _status(gate, second) is RequestStatus.PENDING


def test_only_what_the_card_listed_as_it_showed_it(store: Store) -> None:
    """Rendered with c2 and c3; then c3's arguments are edited (another approver), c4 joins
    the pause, another agent and another run propose into the thread, and the listed ids of
    those (a client that lists whatever it finds) change nothing: only c2 is approved."""
    gate, who = _gate(store)
    first = _ask(gate, "c1")
    second = _ask(gate, "c2")
    edited = _ask(gate, "c3", tool="deploy", env="staging")
    shown = _listing(gate, second, edited)  # the card as rendered
    later = _ask(gate, "c4")  # proposed after the card was rendered
    gate.decide(edited, Decision.edit({"env": "prod"}), identity=who["carol"])
    other_agent = Gate(gate.policy, store, agent="intruder")
    intruder = _ask(other_agent, "c5", context=RunContext(thread_id="chat-1"))
    other_run = _ask(gate, "c6", context=RunContext(thread_id="chat-1", run_id="run-2",
                                                    principal="alice"))
    other_asker = _ask(gate, "c7", context=RunContext(thread_id="chat-1", run_id="run-1",
                                                      principal="mallory"))
    listed = [*shown, *_listing(gate, intruder, other_run, other_asker)]

    result = gate.decide(first, Decision.approve(scope="auto_thread", listed=listed),
                         identity=who["bob"])

    assert result.also_approved == (second,)
    assert _status(gate, second) is RequestStatus.APPROVED
    for kept in (edited, later, intruder, other_run, other_asker):
        assert _status(gate, kept) is RequestStatus.PENDING, kept
        assert not [d for d in store.decisions(kept) if d.approver == "bob"]


def test_a_listing_is_part_of_the_idempotent_body(store: Store) -> None:
    gate, who = _gate(store)
    first = _ask(gate, "c1")
    second = _ask(gate, "c2")
    gate.decide(first, Decision.approve(scope="auto_thread"), identity=who["bob"],
                idempotency_key="k1")
    with pytest.raises(Conflict) as caught:
        gate.decide(first, Decision.approve(scope="auto_thread", listed=_listing(gate, second)),
                    identity=who["bob"], idempotency_key="k1")
    assert caught.value.code == "idempotency_conflict"
    assert _status(gate, second) is RequestStatus.PENDING


@pytest.mark.parametrize(("listed", "scope", "error", "code"), [
    ([("req_1", "sha256:" + "a" * 64)], "once", InvalidDecision, "listed_needs_auto_thread"),
    ([("req_1", "sha256:" + "a" * 64)], "thread", InvalidDecision, "listed_needs_auto_thread"),
    ("req_1", "auto_thread", InvalidInput, "invalid_listed"),
    ({"req_1": "sha256:" + "a" * 64}, "auto_thread", InvalidInput, "invalid_listed"),
    ([("req_1",)], "auto_thread", InvalidInput, "invalid_listed"),
    ([("req_1", "sha256:" + "a" * 64, "x")], "auto_thread", InvalidInput, "invalid_listed"),
    ([("req_1", "md5:abc")], "auto_thread", InvalidInput, "invalid_listed"),
    ([("req_1", "sha256:" + "A" * 64 + "\n")], "auto_thread", InvalidInput, "invalid_listed"),
    ([("req 1", "sha256:" + "a" * 64)], "auto_thread", InvalidInput, "invalid_identifier"),
    ([(1, "sha256:" + "a" * 64)], "auto_thread", InvalidInput, "invalid_identifier"),
    ([(f"r{i}", "sha256:" + "a" * 64) for i in range(201)], "auto_thread", InvalidInput,
     "too_many_listed"),
])
def test_a_bad_listing_is_a_typed_error(listed: object, scope: str, error: type[Exception],
                                        code: str) -> None:
    with pytest.raises(error) as caught:
        Decision.approve(scope=scope, listed=listed)  # type: ignore[arg-type]
    assert getattr(caught.value, "code", None) == code
