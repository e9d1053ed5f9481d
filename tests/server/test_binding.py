"""A decision binds to the arguments its approver was shown, on a real ``signoff serve`` on
both backends: the API's optional ``expected_args_hash`` (a mismatch is 409
``args_changed`` with what would run now; a match decides), the Python client, the CLI's
``--expect-hash``, and the inbox's forms (each carries the hash shown beside the
arguments; a form from a page an edit overtook is refused and the page shows the current
arguments)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import Live, live_server

from signoff.canonical import args_hash
from signoff.errors import ArgsChanged
from signoff.remote import Client

POLICY = """
[policy]
version = "binding-1"
unknown_tools = "ask"

[tools.deploy]

[[rules]]
id = "deploys-need-two"
effect = "ask"
tool = "deploy"
approvals = 2
risk = "high"
"""
STAGING, PROD, CANARY = {"env": "staging"}, {"env": "prod"}, {"env": "canary"}


@pytest.fixture(params=["sqlite", "postgres"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    with live_server(request.param, tmp_path, POLICY) as running:
        yield running


def deploy(live: Live, call_id: str) -> str:
    with live.client("bot") as bot:
        answer = bot.post("/api/v1/calls", json={"tool": "deploy", "args": STAGING,
                                                 "call_id": call_id,
                                                 "context": {"thread_id": f"t-{call_id}"}})
    assert answer.status_code == 200 and answer.json()["status"] == "pending", answer.text
    return str(answer.json()["request_id"])


def decide(client: httpx.Client, request_id: str, **body: Any) -> httpx.Response:
    return client.post(f"/api/v1/requests/{request_id}/decisions", json=body)


def status(live: Live, request_id: str) -> dict[str, Any]:
    with live.client("boss") as boss:
        found: dict[str, Any] = boss.get(f"/api/v1/requests/{request_id}").json()
        return found


@pytest.mark.slow
def test_the_api_decides_only_on_the_arguments_hash_it_was_shown(live: Live) -> None:
    request_id = deploy(live, "a1")
    shown = args_hash(STAGING)
    assert status(live, request_id)["args_hash"] == shown
    with live.client("ann") as ann, live.client("bob") as bob, live.client("cy") as cy:
        edited = decide(ann, request_id, kind="edit", args=PROD, expected_args_hash=shown)
        assert edited.status_code == 200 and edited.json()["approvals"] == 1, edited.text
        # bob decides on the view he had (staging): refused, and shown what would run now
        for body in ({"kind": "approve"}, {"kind": "reject", "reason": "no"},
                     {"kind": "edit", "args": CANARY},
                     {"kind": "respond", "message": "later"}):
            stale = decide(bob, request_id, **body, expected_args_hash=shown)
            assert stale.status_code == 409, stale.text
            problem = stale.json()
            assert problem["code"] == "args_changed"
            assert (problem["args"], problem["args_hash"]) == (PROD, args_hash(PROD))
            assert problem["request_status"] == "pending"
        assert status(live, request_id)["status"] == "pending"
        # a malformed hash is a typed 422, not a mismatch
        bad = decide(cy, request_id, kind="approve", expected_args_hash="sha256:xyz")
        assert (bad.status_code, bad.json()["code"]) == (422, "invalid_args_hash")
        assert bad.json()["field"] == "expected_args_hash"
        # with the hash of what would run, it counts: the quorum of two is met on prod
        counted = decide(bob, request_id, kind="approve", expected_args_hash=args_hash(PROD))
        assert counted.status_code == 200 and counted.json()["status"] == "approved"
    with live.client("bot") as bot:
        assert bot.post(f"/api/v1/calls/{request_id}/claim").json()["args"] == PROD
    with live.client("boss") as boss:
        events = boss.get("/api/v1/audit", params={"request_id": request_id}).json()["events"]
    assert not [e for e in events if e["kind"] == "decision.recorded"
                and e["actor"] == "bob" and e["data"]["kind"] != "approve"]


@pytest.mark.slow
def test_the_client_and_the_cli_pass_the_hash_shown(live: Live) -> None:
    request_id = deploy(live, "c1")
    with Client(live.url, live.tokens["ann"]) as ann:
        ann.decide(request_id, "edit", args=PROD)
    with Client(live.url, live.tokens["bob"]) as bob, pytest.raises(ArgsChanged) as raised:
        bob.decide(request_id, "approve", expected_args_hash=args_hash(STAGING))
    assert raised.value.args_hash == args_hash(PROD)
    assert raised.value.current_args == '{"env":"prod"}'
    assert status(live, request_id)["status"] == "pending"
    cli = live.cli("requests", "approve", request_id, "--token", live.tokens["bob"],
                   "--expect-hash", args_hash(STAGING), check=False)
    assert cli.returncode != 0 and "[args_changed]" in cli.stderr, cli.stderr
    malformed = live.cli("requests", "approve", request_id, "--token", live.tokens["bob"],
                         "--expect-hash", "staging", check=False)
    assert malformed.returncode != 0 and "[invalid_args_hash]" in malformed.stderr
    assert status(live, request_id)["status"] == "pending"
    done = live.cli("requests", "approve", request_id, "--token", live.tokens["bob"],
                    "--expect-hash", args_hash(PROD), "--json")
    assert '"approved"' in done.stdout
    assert status(live, request_id)["status"] == "approved"


@contextlib.contextmanager
def signed_in(live: Live, user: str) -> Iterator[httpx.Client]:
    with live.client(follow_redirects=False) as client:
        assert client.post("/login", data={"token": live.tokens[user]}).status_code == 303
        yield client


def form_fields(html: str) -> dict[str, str]:
    csrf = re.search(r'name="csrf" value="([^"]+)"', html)
    shown = set(re.findall(r'name="expected_args_hash" value="([^"]+)"', html))
    assert csrf is not None and len(shown) == 1, shown
    return {"csrf": csrf.group(1), "expected_args_hash": shown.pop()}


@pytest.mark.slow
def test_an_inbox_form_from_a_page_an_edit_overtook_is_refused(live: Live) -> None:
    request_id = deploy(live, "i1")
    with signed_in(live, "bob") as browser:
        page = browser.get(f"/requests/{request_id}")
        assert page.status_code == 200
        fields = form_fields(page.text)  # every decision form carries the hash shown
        assert fields["expected_args_hash"] == args_hash(STAGING)
        assert f'id="args-hash">{args_hash(STAGING)}<' in page.text
        with live.client("ann") as ann:
            assert decide(ann, request_id, kind="edit", args=PROD).status_code == 200
        for form in ({"action": "approve_once"}, {"action": "reject", "reason": "no"},
                     {"action": "edit", "args": '{"env": "canary"}'}):
            refused = browser.post(f"/requests/{request_id}/decide", data={**fields, **form})
            assert refused.status_code == 409 and "args_changed" in refused.text
            # the page shown with the refusal holds what would run now, and its hash
            assert f'id="args-hash">{args_hash(PROD)}<' in refused.text
            assert "&#34;prod&#34;" in refused.text or "&quot;prod&quot;" in refused.text \
                or '"prod"' in refused.text
            assert form_fields(refused.text)["expected_args_hash"] == args_hash(PROD)
        assert status(live, request_id)["status"] == "pending"
        bad = browser.post(f"/requests/{request_id}/decide",
                           data={**fields, "action": "approve_once",
                                 "expected_args_hash": "nope"})
        assert bad.status_code == 422 and "invalid_args_hash" in bad.text
        fresh = form_fields(browser.get(f"/requests/{request_id}").text)
        approved = browser.post(f"/requests/{request_id}/decide",
                                data={**fresh, "action": "approve_once"})
        assert approved.status_code == 303, approved.text
    assert status(live, request_id)["status"] == "approved"
