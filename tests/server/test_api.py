"""The HTTP API over real HTTP: a real uvicorn, httpx, every endpoint and error code."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from server_helpers import Served, propose_deploy, propose_make, serve

from signoff.model import RequestStatus


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    return body


ENDPOINTS = [
    ("GET", "/api/v1/requests"), ("GET", "/api/v1/requests/req_x"),
    ("POST", "/api/v1/requests/req_x/decisions"), ("POST", "/api/v1/requests/req_x/cancel"),
    ("POST", "/api/v1/calls"),
    ("GET", "/api/v1/calls/req_x"), ("POST", "/api/v1/calls/req_x/claim"),
    ("POST", "/api/v1/calls/req_x/result"), ("GET", "/api/v1/threads/t1"),
    ("PUT", "/api/v1/threads/t1"), ("POST", "/api/v1/check"), ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/events"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_every_endpoint_needs_a_valid_token(shared: Served, method: str, path: str) -> None:
    served = shared
    with served.client() as anonymous:
        body = problem(anonymous.request(method, path, json={}), 401, "unauthenticated")
        assert "token" in body["detail"] or "sign in" in body["detail"]
    with served.client("so_not-a-real-token") as wrong:
        problem(wrong.request(method, path, json={}), 401, "unauthenticated")
    with served.client() as odd:
        response = odd.request(method, path, json={}, headers={"Authorization": "Basic eDp5"})
        problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_health_metrics_and_openapi_are_open(served: Served) -> None:
    with served.client() as http:
        assert http.get("/healthz").json() == {"status": "ok", "backend": "sqlite",
                                                "version": "0.1.0", "policy": "server.toml",
                                                "policy_version": "server-1"}
        metrics = http.get("/metrics")
        assert metrics.status_code == 200
        assert 'signoff_requests{status="pending"} 0.0' in metrics.text
        paths = set(http.get("/openapi.json").json()["paths"])
    assert {"/api/v1/calls", "/api/v1/calls/{request_id}", "/api/v1/requests",
            "/api/v1/requests/{request_id}", "/api/v1/requests/{request_id}/decisions",
            "/api/v1/threads/{thread_id}", "/api/v1/check", "/api/v1/audit",
            "/api/v1/events", "/healthz", "/metrics"} <= paths


def test_propose_answers_allowed_denied_and_pending(served: Served) -> None:
    with served.client(served.agent) as agent:
        allowed = agent.post("/api/v1/calls", json={
            "tool": "read_file", "args": {"path": "README.md"}, "call_id": "c1"}).json()
        assert (allowed["status"], allowed["request_id"]) == ("allowed", None)
        denied = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "rm -rf ."}, "call_id": "c2"}).json()
        assert denied["status"] == "denied"
        assert denied["verdict"]["effect"] == "deny"
        pending = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "c3",
            "description": "ship it", "context": {"thread_id": "t1",
                                                   "review_mode": "full"}}).json()
        assert pending["status"] == "pending"
        assert pending["stripped"] == ["review_mode"]
        assert pending["wait_url"] == f"/api/v1/calls/{pending['request_id']}?wait=30"
        again = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "c3",
            "context": {"thread_id": "t1"}}).json()
        assert again["request_id"] == pending["request_id"]
        reused = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "staging"}, "call_id": "c3",
            "context": {"thread_id": "t1"}})
        problem(reused, 409, "call_id_reused")
    with served.client(served.alice) as alice:
        shown = alice.get(f"/api/v1/requests/{pending['request_id']}").json()
    # Arguments as JSON, like every other surface; the hashed bytes beside them.
    assert shown["args"] == {"env": "prod"} and shown["args_canonical"] == '{"env":"prod"}'
    assert shown["description"] == "ship it"
    assert (shown["status"], shown["approvals"], shown["approvals_required"]) == \
        ("pending", 0, 2)


def test_a_context_may_claim_an_unattended_run_and_a_parent_call(served: Served) -> None:
    """What only restricts crosses the wire: an unattended run's ask is blocked (nobody
    would answer it), a subagent's request carries its parent call; a mode that does not
    exist is a typed 422, never read as interactive."""
    with served.client(served.agent) as agent:
        blocked = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "u1",
            "context": {"thread_id": "t-u", "interaction_mode": "autonomous"}}).json()
        assert (blocked["status"], blocked["request_id"], blocked["stripped"]) == (
            "blocked", None, [])
        child = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": "k1",
            "context": {"thread_id": "t-u", "parent_call": "p1"}}).json()
        assert child["status"] == "pending"
        assert served.gate.get_request(child["request_id"]).parent_call == "p1"
        problem(agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "u2",
            "context": {"interaction_mode": "supervised"}}), 422, "unknown_interaction_mode")


@pytest.mark.parametrize("context", [
    {"parent_call": "p" * 8192}, {"parent_call": "p1\x00"}, {"parent_call": "p1\n"},
    {"interaction_mode": 5}, {"interaction_mode": ["autonomous"]},
    {"interaction_mode": "interactive\x00"}])
def test_a_claimed_context_the_input_contract_refuses_writes_nothing(
        served: Served, context: dict[str, object]) -> None:
    """A claim is public input: an id the store could not hold, or a mode that names no
    mode, is a typed 422 and no request is written (never read as "no claim")."""
    with served.client(served.agent) as agent:
        answer = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "bad-claim",
            "context": {"thread_id": "t-bad", **context}})
        assert answer.status_code == 422, answer.text
        assert answer.json()["code"] in {"invalid_identifier", "too_long", "nul_character",
                                          "unknown_interaction_mode"}
    assert served.gate.thread_requests("t-bad") == []


def test_long_poll_wakes_on_a_decision_and_times_out_otherwise(served: Served) -> None:
    request_id = propose_make(served, "t-wait")
    with served.client(served.agent) as agent:
        started = time.monotonic()
        still = agent.get(f"/api/v1/calls/{request_id}", params={"wait": 0.3}).json()
        assert still["kind"] == "pending"
        assert time.monotonic() - started >= 0.3

        decided_at: list[float] = []

        def approve() -> None:
            time.sleep(0.4)
            with served.client(served.alice) as alice:
                alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"})
            decided_at.append(time.monotonic())

        thread = threading.Thread(target=approve)
        thread.start()
        outcome = agent.get(f"/api/v1/calls/{request_id}", params={"wait": 20}).json()
        woke = time.monotonic()
        thread.join()
    assert outcome["kind"] == "approved"
    assert outcome["args"] == {"command": "make build"}
    assert woke - decided_at[0] < 1.0


def test_quorum_roles_self_approval_and_agent_refusals(served: Served) -> None:
    request_id = propose_deploy(served, "t-q")
    url = f"/api/v1/requests/{request_id}/decisions"
    with served.client(served.agent) as agent:
        problem(agent.post(url, json={"kind": "approve"}), 403, "agent_cannot_decide")
    with served.client(served.carol) as carol:
        problem(carol.post(url, json={"kind": "approve"}), 403, "role_missing")
    with served.client(served.alice) as alice:
        first = alice.post(url, json={"kind": "approve"}).json()
        assert (first["status"], first["approvals"], first["required"]) == ("pending", 1, 2)
        problem(alice.post(url, json={"kind": "approve"}), 409, "already_voted")
    with served.client(served.bob) as bob:
        second = bob.post(url, json={"kind": "approve"}).json()
        assert (second["status"], second["transitioned"]) == ("approved", True)
    with served.client(served.admin) as root:
        late = problem(root.post(url, json={"kind": "reject", "reason": "no"}), 409,
                       "already_decided")
        assert late["request_status"] == "approved"
    # an approver who asked for a call cannot approve it
    with served.client(served.alice) as alice:
        own = alice.post("/api/v1/calls", json={"tool": "execute", "call_id": "own",
                                                "args": {"command": "make build"}}).json()
        problem(alice.post(f"/api/v1/requests/{own['request_id']}/decisions",
                           json={"kind": "approve"}), 403, "self_approval")


def test_expired_requests_answer_410(served: Served) -> None:
    request_id = propose_deploy(served, "t-exp")
    served.clock.now += 3601
    with served.client(served.alice) as alice:
        problem(alice.post(f"/api/v1/requests/{request_id}/decisions",
                           json={"kind": "approve"}), 410, "expired")
    with served.client(served.agent) as agent:
        assert agent.get(f"/api/v1/calls/{request_id}").json()["kind"] == "expired"


@pytest.mark.parametrize(("body", "code"), [
    (b"not json", "invalid_json"),
    (b"[1, 2]", "not_an_object"),
    (b'{"kind": "approve", "kind": "reject"}', "duplicate_key"),
    (b'{"kind": "approve", "scope": NaN}', "non_finite_number"),
    (b'{"kind": "maybe"}', "invalid_body"),
    (b"{}", "invalid_body"),
    (b'{"kind": "approve", "approver": "alice"}', "invalid_body"),
    (b'{"kind": "reject"}', "missing_reason"),
    (b'{"kind": "edit"}', "invalid_body"),
    (b'{"kind": "edit", "args": {"command": "rm -rf /"}}', "edit_denied"),
])
def test_malformed_decisions_are_422_and_change_nothing(shared: Served, body: bytes,
                                                         code: str) -> None:
    served = shared
    request_id = propose_make(served, "t-bad")
    with served.client(served.alice) as alice:
        problem(alice.post(f"/api/v1/requests/{request_id}/decisions", content=body,
                           headers={"Content-Type": "application/json"}), 422, code)
        after = alice.get(f"/api/v1/requests/{request_id}").json()
    assert (after["status"], after["decisions"]) == ("pending", [])


def test_unknown_request_is_404(served: Served) -> None:
    with served.client(served.alice) as alice:
        problem(alice.get("/api/v1/requests/req_nope"), 404, "not_found")
        problem(alice.post("/api/v1/requests/req_nope/decisions", json={"kind": "approve"}),
                404, "not_found")
    with served.client(served.agent) as agent:
        problem(agent.get("/api/v1/calls/req_nope"), 404, "not_found")


def test_idempotency_keys(served: Served) -> None:
    request_id = propose_make(served, "t-idem")
    url = f"/api/v1/requests/{request_id}/decisions"
    key = {"Idempotency-Key": "k-1"}
    with served.client(served.alice) as alice:
        first = alice.post(url, json={"kind": "approve"}, headers=key).json()
        replay = alice.post(url, json={"kind": "approve"}, headers=key).json()
        assert replay["replayed"] is True
        assert replay["decision_id"] == first["decision_id"]
        problem(alice.post(url, json={"kind": "reject", "reason": "x"}, headers=key), 409,
                "idempotency_conflict")
    assert len(served.gate.store.decisions(request_id)) == 1


def test_reject_edit_and_respond_reach_the_agent(served: Served) -> None:
    rejected = propose_make(served, "t-r", call_id="r1")
    edited = propose_make(served, "t-r", call_id="r2")
    answered = propose_make(served, "t-r", call_id="r3")
    with served.client(served.alice) as alice:
        alice.post(f"/api/v1/requests/{rejected}/decisions", json={
            "kind": "reject", "reason": "use the staging target",
            "alternatives": ["make staging"]})
        alice.post(f"/api/v1/requests/{edited}/decisions", json={
            "kind": "edit", "args": {"command": "make test"}})
        alice.post(f"/api/v1/requests/{answered}/decisions", json={
            "kind": "respond", "message": "the build is already green"})
    with served.client(served.agent) as agent:
        r = agent.get(f"/api/v1/calls/{rejected}").json()
        assert (r["kind"], r["reason"], r["alternatives"]) == \
            ("rejected", "use the staging target", ["make staging"])
        e = agent.get(f"/api/v1/calls/{edited}").json()
        assert (e["kind"], e["args"]) == ("approved", {"command": "make test"})
        claim = agent.post(f"/api/v1/calls/{edited}/claim").json()
        assert claim["args"] == {"command": "make test"}
        m = agent.get(f"/api/v1/calls/{answered}").json()
        assert (m["kind"], m["message"]) == ("responded", "the build is already green")


def test_claim_and_result_run_once_for_the_requester_only(served: Served) -> None:
    request_id = propose_make(served, "t-claim")
    with served.client(served.agent) as agent:
        problem(agent.post(f"/api/v1/calls/{request_id}/claim"), 409, "request_pending")
    with served.client(served.alice) as alice:
        alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"})
        problem(alice.post(f"/api/v1/calls/{request_id}/claim"), 403, "not_requester")
    with served.client(served.agent) as agent:
        claim = agent.post(f"/api/v1/calls/{request_id}/claim").json()
        problem(agent.post(f"/api/v1/calls/{request_id}/claim"), 409, "request_executing")
        problem(agent.post(f"/api/v1/calls/{request_id}/result",
                           json={"fencing_token": claim["fencing_token"] + 1, "result": 1}),
                409, "stale_fencing_token")
        done = agent.post(f"/api/v1/calls/{request_id}/result",
                          json={"fencing_token": claim["fencing_token"],
                                "result": {"exit": 0}}).json()
        assert (done["kind"], done["result"]) == ("executed", {"exit": 0})
        problem(agent.post(f"/api/v1/calls/{request_id}/claim"), 409, "request_executed")
    assert served.gate.get_request(request_id).status is RequestStatus.SUCCEEDED


def test_threads_review_mode(served: Served) -> None:
    with served.client(served.agent) as agent:
        view = agent.get("/api/v1/threads/t-mode").json()
        assert (view["review_mode"], view["stored"], view["allowed_modes"]) == \
            ("manual", False, ["manual", "auto", "full"])
        problem(agent.put("/api/v1/threads/t-mode", json={"review_mode": "full"}), 403,
                "agent_cannot_decide")
    with served.client(served.alice) as alice:
        changed = alice.put("/api/v1/threads/t-mode", json={"review_mode": "auto"}).json()
        assert (changed["review_mode"], changed["stored"]) == ("auto", True)
        problem(alice.put("/api/v1/threads/t-mode", json={"review_mode": "yolo"}), 422,
                "invalid_body")
    # locked while a call of the thread executes
    request_id = propose_make(served, "t-lock")
    with served.client(served.alice) as alice:
        alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"})
    with served.client(served.agent) as agent:
        agent.post(f"/api/v1/calls/{request_id}/claim")
    with served.client(served.alice) as alice:
        assert alice.get("/api/v1/threads/t-lock").json()["running"] is True
        problem(alice.put("/api/v1/threads/t-lock", json={"review_mode": "auto"}), 409,
                "run_in_progress")


def test_modes_above_the_ceiling_are_refused(tmp_path: Any) -> None:
    for served in serve(tmp_path, ceiling="auto"):
        with served.client(served.alice) as alice:
            assert alice.get("/api/v1/threads/t").json()["allowed_modes"] == ["manual", "auto"]
            problem(alice.put("/api/v1/threads/t", json={"review_mode": "full"}), 403,
                    "above_ceiling")


def test_check_and_audit(served: Served) -> None:
    with served.client(served.carol) as carol:
        verdict = carol.post("/api/v1/check", json={"tool": "execute",
                                                     "args": {"command": "rm -rf /"}}).json()
        assert (verdict["effect"], verdict["code"]) == ("deny", verdict["code"])
        assert verdict["reasons"]
    propose_make(served, "t-audit")
    with served.client(served.carol) as carol:
        page = carol.get("/api/v1/audit", params={"verify": "true"}).json()
    assert page["verified"] is True
    assert page["first_bad"] is None
    kinds = [e["kind"] for e in page["events"]]
    assert "request.created" in kinds
    assert page["head_index"] == page["events"][-1]["index"]


def test_sse_streams_changes_and_replays_after_last_event_id(served: Served) -> None:
    seen: list[str] = []
    ready = threading.Event()

    def listen() -> None:
        with served.client(served.carol) as carol, \
                carol.stream("GET", "/api/v1/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if line.startswith(": connected"):
                    ready.set()
                if line.startswith("data: "):
                    seen.append(line)
                    if '"request.created"' in line:
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert ready.wait(5)
    request_id = propose_make(served, "t-sse")
    listener.join(5)
    assert any(request_id in line and "request.created" in line for line in seen), seen
    # a reconnecting client is replayed what it missed, from the log
    with served.client(served.carol) as carol, \
            carol.stream("GET", "/api/v1/events", headers={"Last-Event-ID": "0"}) as stream:
        ids = []
        for line in stream.iter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
            if len(ids) >= 3:
                break
    assert ids == [1, 2, 3]


def test_host_and_origin_checks(served: Served) -> None:
    request_id = propose_make(served, "t-origin")
    with served.client(served.alice) as alice:
        problem(alice.get("/api/v1/requests", headers={"Host": "attacker.example"}), 400,
                "bad_host")
        problem(alice.get("/inbox", headers={"Host": "rebind.attacker.example:8765"}), 400,
                "bad_host")
        problem(alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"},
                           headers={"Origin": "https://attacker.example"}), 403, "cross_origin")
        problem(alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"},
                           headers={"Sec-Fetch-Site": "cross-site"}), 403, "cross_origin")
        preflight = alice.options("/api/v1/calls", headers={
            "Origin": "https://attacker.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers
        ok = alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"},
                        headers={"Origin": served.url})
        assert ok.status_code == 200


def test_inbox_forms_need_the_cookie_csrf_token_and_same_origin(served: Served) -> None:
    request_id = propose_make(served, "t-csrf")
    with served.client(follow_redirects=False) as browser:
        login = browser.post("/login", data={"token": served.alice})
        assert login.status_code == 303
        cookie = login.headers["set-cookie"].lower()
        assert served.alice.lower() not in cookie  # the cookie holds a session, not the token
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        page = browser.get(f"/requests/{request_id}")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        csrf = page.text.split('name="csrf-token" content="')[1].split('"')[0]
        form = {"action": "approve_once"}
        problem(browser.post(f"/requests/{request_id}/decide", data=form), 403, "csrf_failed")
        # a cross-origin form POST, even with the right token, is refused at the door
        problem(browser.post(f"/requests/{request_id}/decide", data={**form, "csrf": csrf},
                             headers={"Origin": "https://attacker.example"}), 403,
                "cross_origin")
        # GET never changes state
        assert browser.get(f"/requests/{request_id}/decide").status_code == 405
        assert served.gate.get_request(request_id).status is RequestStatus.PENDING
        done = browser.post(f"/requests/{request_id}/decide", data={**form, "csrf": csrf})
        assert done.status_code == 303
        assert done.headers["location"] == f"/requests/{request_id}?done=approved"
    assert served.gate.get_request(request_id).status is RequestStatus.APPROVED


def test_metrics_count_requests_decisions_and_latency(served: Served) -> None:
    request_id = propose_make(served, "t-metrics")
    with served.client(served.alice) as alice:
        alice.post(f"/api/v1/requests/{request_id}/decisions", json={"kind": "approve"})
        text = alice.get("/metrics").text
    assert 'signoff_requests{status="approved"} 1.0' in text
    assert 'signoff_decisions_total{kind="approve"} 1.0' in text
    assert "signoff_decision_latency_seconds_count 1.0" in text
    assert "signoff_waiters 0.0" in text


def test_a_thread_waiting_for_a_decision_refuses_a_new_run(served: Served) -> None:
    with served.client(served.agent) as agent:
        first = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": "w1",
            "context": {"thread_id": "t-wait2", "run_id": "run-1"}}).json()
        assert first["status"] == "pending"
        same_run = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make lint"}, "call_id": "w2",
            "context": {"thread_id": "t-wait2", "run_id": "run-1"}})
        assert same_run.json()["status"] == "pending"  # parallel calls of one run are fine
        problem(agent.post("/api/v1/calls", json={
            "tool": "read_file", "args": {"path": "README.md"}, "call_id": "w3",
            "context": {"thread_id": "t-wait2", "run_id": "run-2"}}), 409, "thread_waiting")


def test_auto_approve_this_thread(tmp_path: Any) -> None:
    """``scope: "auto_thread"``: approved, the thread on auto, the pause's other undecided
    call the card listed approved too (the response names it); refused above the ceiling
    and while a call of the thread executes, with nothing written."""
    for name in ("full", "manual"):
        (tmp_path / name).mkdir()
    for served in serve(tmp_path / "full"):
        first = propose_make(served, "t-auto", call_id="m1")
        second = propose_make(served, "t-auto", call_id="m2")
        with served.client(served.alice) as alice:
            shown = alice.get(f"/api/v1/requests/{second}").json()["args_hash"]
            answer = alice.post(f"/api/v1/requests/{first}/decisions", json={
                "kind": "approve", "scope": "auto_thread",
                "listed": [{"request_id": second, "args_hash": shown}]})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert (body["status"], body["review_mode"], body["also_approved"]) == \
                ("approved", "auto", [second])
            assert alice.get(f"/api/v1/requests/{second}").json()["status"] == "approved"
            view = alice.get("/api/v1/threads/t-auto").json()
            assert (view["review_mode"], view["set_by"]) == ("auto", "alice")
            [vote] = alice.get(f"/api/v1/requests/{second}").json()["decisions"]
            assert (vote["scope"], vote["approver"]) == ("auto_thread", "alice")
        # a call executing on the thread: the mode may not change under it
        running = propose_make(served, "t-busy", call_id="b1")
        waiting = propose_make(served, "t-busy", call_id="b2")
        with served.client(served.alice) as alice:
            alice.post(f"/api/v1/requests/{running}/decisions", json={"kind": "approve"})
        with served.client(served.agent) as agent:
            assert agent.post(f"/api/v1/calls/{running}/claim").status_code == 200
        with served.client(served.bob) as bob:
            problem(bob.post(f"/api/v1/requests/{waiting}/decisions",
                             json={"kind": "approve", "scope": "auto_thread"}), 409,
                    "run_in_progress")
            assert bob.get(f"/api/v1/requests/{waiting}").json()["decisions"] == []
    for served in serve(tmp_path / "manual", ceiling="manual"):
        request_id = propose_make(served, "t-low")
        with served.client(served.alice) as alice:
            problem(alice.post(f"/api/v1/requests/{request_id}/decisions",
                               json={"kind": "approve", "scope": "auto_thread"}), 403,
                    "above_ceiling")
            assert alice.get(f"/api/v1/requests/{request_id}").json()["status"] == "pending"
            assert alice.get("/api/v1/threads/t-low").json()["stored"] is False


def test_a_write_shows_its_diff_and_a_changed_file_refuses_the_claim(served: Served) -> None:
    root = served.gate.policy.workspace.root  # type: ignore[union-attr]
    target = f"{root}/Makefile"  # a sensitive path: writing it always asks
    with open(target, "w") as out:
        out.write("one\ntwo\n")
    with served.client(served.agent) as agent:
        pending = agent.post("/api/v1/calls", json={
            "tool": "write_file", "args": {"path": "Makefile", "content": "one\n<b>2</b>\n"},
            "call_id": "w1", "context": {"thread_id": "t-diff"}}).json()
    assert pending["status"] == "pending", pending
    request_id = pending["request_id"]
    with served.client(served.alice) as alice:
        shown = alice.get(f"/api/v1/requests/{request_id}").json()
        [change] = shown["changes"]
        assert (change["path"], change["resolved"], change["kind"]) == (
            "Makefile", target, "diff")
        assert change["diff"] == ("--- a/Makefile\n+++ b/Makefile\n@@ -1,2 +1,2 @@\n"
                                  " one\n-two\n+<b>2</b>\n")
        assert change["size"] == 8 and change["exists"] is True
        assert "changes" not in alice.get("/api/v1/requests").json()["requests"][0]
        decided = alice.post(f"/api/v1/requests/{request_id}/decisions",
                             json={"kind": "approve"})
        assert decided.json()["status"] == "approved"
    with open(target, "w") as out:
        out.write("someone else\n")
    with served.client(served.agent) as agent:
        problem(agent.post(f"/api/v1/calls/{request_id}/claim"), 409, "resource_changed")
        outcome = agent.get(f"/api/v1/calls/{request_id}").json()
    assert outcome["kind"] == "invalidated" and outcome["code"] == "resource_changed"
    assert target in outcome["reason"]
