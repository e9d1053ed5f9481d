"""Slack approvals against real ``signoff serve`` processes on both backends: the real
``slack_sdk`` client posts to a local stand-in for Slack's Web API, and signed interaction
callbacks are posted to ``/slack/interactions`` — valid, bad signature, stale timestamp,
replay, unmapped user, self-approval, role missing, reject with a reason, another
workspace."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest
from slack_api import SlackApi, signed

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK = """
[notify]
retry_base = 0.2
retry_max = 1
timeout = 2

[notify.slack]
token_env = "SLACK_BOT_TOKEN"
signing_secret_env = "SLACK_SIGNING_SECRET"
channel = "C0APPROVALS"
base_url = "{base_url}"
team_id = "T0TEAM"

[notify.slack.users]
U0ANN = "ann"
U0BOB = "bob"
U0CY = "cy"
U0BOT = "bot"

[[rules]]
id = "deploys-need-ops"
effect = "ask"
tool = "deploy"
roles = ["ops"]
risk = "high"
"""


@dataclass
class SlackRig:
    live: procs.Live
    api: SlackApi

    def post(self, payload: dict[str, Any], *, at: float | None = None,
             secret: str = SECRET) -> httpx.Response:
        body, headers = signed(secret, payload, at=at)
        return httpx.post(self.live.url + "/slack/interactions", content=body,
                          headers=headers, timeout=30)

    def status(self, request_id: str) -> str:
        with self.live.client("boss") as boss:
            return str(boss.get(f"/api/v1/requests/{request_id}").json()["status"])


def click(user: str, action_id: str, value: str, *, team: str = "T0TEAM",
          n: int = 0) -> dict[str, Any]:
    return {"type": "block_actions", "user": {"id": user}, "team": {"id": team},
            "channel": {"id": "C0APPROVALS"}, "trigger_id": f"trig-{n}",
            "actions": [{"action_id": action_id, "value": value,
                         "action_ts": f"{time.time():.6f}-{n}"}]}


@contextlib.contextmanager
def slack_rig(backend: str, directory: Path) -> Iterator[SlackRig]:
    api = SlackApi()
    env = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": SECRET}
    with procs.database(backend, directory) as db:
        tokens = procs.prepare(backend, db, directory)
        with (directory / "signoff.toml").open("a", encoding="utf-8") as fh:
            fh.write(SLACK.format(base_url=api.base_url))
        server = procs.start_server(db, directory, env=env)
        live = procs.Live(backend=backend, db=db, cwd=directory, tokens=tokens, server=server)
        try:
            yield SlackRig(live=live, api=api)
        finally:
            server.stop()
            api.close()


@pytest.fixture(params=["sqlite", "postgres"])
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SlackRig]:
    with slack_rig(request.param, tmp_path) as made:
        yield made


def ask(client: httpx.Client, call_id: str, *, tool: str = "execute",
        args: dict[str, Any] | None = None, thread: str = "t-1") -> tuple[str, str]:
    answer = client.post("/api/v1/calls", json={
        "tool": tool, "args": args or {"command": f"make {call_id}"}, "call_id": call_id,
        "context": {"thread_id": thread}}).json()
    assert answer["status"] == "pending", answer
    request_id = str(answer["request_id"])
    detail = client.get(f"/api/v1/requests/{request_id}").json()
    return request_id, str(detail["args_hash"])


def message_for(rig: SlackRig, request_id: str) -> dict[str, Any]:
    posted = rig.api.wait_for("chat.postMessage")
    for call in posted:
        if request_id in json.dumps(call.args):
            return call.args
    raise AssertionError(f"no message for {request_id}")


@pytest.mark.slow
def test_a_request_is_posted_with_its_exact_arguments_and_approved_from_slack(
        rig: SlackRig) -> None:
    with rig.live.client("bot") as bot:
        request_id, args_hash = ask(bot, "s1", args={"command": "make <!channel> & deploy"})
    message = message_for(rig, request_id)
    assert rig.api.of("chat.postMessage")[0].token == "xoxb-test-token"
    assert message["channel"] == "C0APPROVALS"
    text = json.dumps(message["blocks"])
    assert "make &lt;!channel&gt; &amp; deploy" in text  # shown literally: no @channel ping
    assert args_hash in text
    buttons = next(b for b in message["blocks"] if b["type"] == "actions")["elements"]
    approve = next(b for b in buttons if b["action_id"] == "signoff_approve")
    assert approve["value"] == f"{request_id} {args_hash}"
    opener = next(b for b in buttons if b["action_id"] == "signoff_open")
    assert opener["url"] == f"{rig.live.url}/requests/{request_id}"

    answer = rig.post(click("U0ANN", "signoff_approve", approve["value"]))
    assert answer.status_code == 200 and answer.json() == {"ok": True, "code": "decided"}
    assert rig.status(request_id) == "approved"
    [update] = rig.api.wait_for("chat.update")
    assert update.args["ts"] == "1700000000.000001"  # the request's own message
    assert "Approved" in json.dumps(update.args["blocks"])
    assert "ann" in json.dumps(update.args["blocks"])
    [told] = rig.api.wait_for("chat.postEphemeral")
    assert told.args["user"] == "U0ANN" and "Approved as ann" in told.args["text"]
    with rig.live.client("boss") as boss:
        audit = boss.get("/api/v1/audit", params={"request_id": request_id}).json()
    recorded = [e for e in audit["events"] if e["kind"] == "decision.recorded"]
    assert recorded and recorded[0]["actor"] == "ann" and recorded[0]["data"]["via"] == "slack"


@pytest.mark.slow
def test_forged_stale_and_replayed_callbacks_are_refused(rig: SlackRig) -> None:
    with rig.live.client("bot") as bot:
        request_id, args_hash = ask(bot, "s2")
    payload = click("U0ANN", "signoff_approve", f"{request_id} {args_hash}")
    forged = rig.post(payload, secret="not-the-signing-secret")
    assert forged.status_code == 401 and forged.json()["code"] == "slack_signature_invalid"
    stale = rig.post(payload, at=time.time() - 600)
    assert stale.status_code == 401 and stale.json()["code"] == "slack_stale"
    unsigned = httpx.post(rig.live.url + "/slack/interactions", content=b"payload=%7B%7D")
    assert unsigned.status_code == 401
    assert rig.status(request_id) == "pending"
    body, headers = signed(SECRET, payload)
    first = httpx.post(rig.live.url + "/slack/interactions", content=body, headers=headers)
    assert first.status_code == 200 and first.json()["code"] == "decided"
    again = httpx.post(rig.live.url + "/slack/interactions", content=body, headers=headers)
    assert again.status_code == 409 and again.json()["code"] == "slack_replayed"
    other = rig.post(click("U0ANN", "signoff_approve", f"{request_id} {args_hash}",
                           team="T0ELSEWHERE", n=1))
    assert other.status_code == 403 and other.json()["code"] == "slack_wrong_team"


@pytest.mark.slow
def test_only_a_mapped_authorised_other_person_decides(rig: SlackRig) -> None:
    with rig.live.client("ann") as ann, rig.live.client("bot") as bot:
        own, own_hash = ask(ann, "s3")  # ann's own call
        deploy, deploy_hash = ask(bot, "s4", tool="deploy", args={"service": "web"})
    refused = rig.post(click("U0ANN", "signoff_approve", f"{own} {own_hash}"))
    assert refused.json() == {"ok": False, "code": "self_approval"}
    unmapped = rig.post(click("U0STRANGER", "signoff_approve", f"{own} {own_hash}", n=1))
    assert unmapped.json() == {"ok": False, "code": "slack_user_unmapped"}
    no_role = rig.post(click("U0CY", "signoff_approve", f"{deploy} {deploy_hash}", n=2))
    assert no_role.status_code == 200 and no_role.json()["ok"] is False
    assert no_role.json() == {"ok": False, "code": "role_missing"}
    agent = rig.post(click("U0BOT", "signoff_approve", f"{deploy} {deploy_hash}", n=3))
    assert agent.json()["ok"] is False
    forged_hash = rig.post(click("U0BOB", "signoff_approve", f"{deploy} sha256:{'0' * 64}",
                                 n=4))
    assert forged_hash.json() == {"ok": False, "code": "args_changed"}
    assert rig.status(own) == rig.status(deploy) == "pending"
    with rig.live.client("boss") as boss:
        refusals = [e for e in boss.get("/api/v1/audit").json()["events"]
                    if e["kind"] == "decision.refused"]
    assert {e["data"]["code"] for e in refusals} >= {"self_approval", "slack_user_unmapped",
                                                     no_role.json()["code"],
                                                     "args_changed"}
    assert all(e["data"]["via"] == "slack" for e in refusals)
    texts = [c.args["text"] for c in rig.api.wait_for("chat.postEphemeral", 5)]
    assert any("not mapped" in t for t in texts)
    approved = rig.post(click("U0BOB", "signoff_approve", f"{deploy} {deploy_hash}", n=5))
    assert approved.json() == {"ok": True, "code": "decided"}
    assert rig.status(deploy) == "approved"


@pytest.mark.slow
def test_reject_asks_a_reason_in_a_modal(rig: SlackRig) -> None:
    with rig.live.client("bot") as bot:
        request_id, _ = ask(bot, "s5")
    message_for(rig, request_id)
    opened = rig.post(click("U0ANN", "signoff_reject", request_id, n=7))
    assert opened.json() == {"ok": True, "code": "modal"}
    [view] = rig.api.wait_for("views.open")
    assert view.args["trigger_id"] == "trig-7"
    assert view.args["view"]["private_metadata"] == request_id
    assert rig.status(request_id) == "pending", "a click on Reject decides nothing yet"

    def submit(reason: str, view_id: str) -> httpx.Response:
        return rig.post({"type": "view_submission", "user": {"id": "U0ANN"},
                         "team": {"id": "T0TEAM"}, "view": {
                             "id": view_id, "callback_id": "signoff_reject",
                             "private_metadata": request_id,
                             "state": {"values": {"reason": {"reason": {"value": reason}}}}}})

    empty = submit("  ", "V1")
    assert empty.json()["response_action"] == "errors"
    assert rig.status(request_id) == "pending"
    done = submit("use the staging target", "V2")
    assert done.status_code == 200 and done.json() == {}
    assert rig.status(request_id) == "rejected"
    [update] = rig.api.wait_for("chat.update")
    shown = json.dumps(update.args["blocks"])
    assert "Rejected" in shown and "use the staging target" in shown


@pytest.mark.slow
def test_a_decision_in_the_inbox_updates_the_slack_message(rig: SlackRig) -> None:
    with rig.live.client("bot") as bot, rig.live.client("bob") as bob:
        request_id, _ = ask(bot, "s6")
        message_for(rig, request_id)
        decided = bob.post(f"/api/v1/requests/{request_id}/decisions",
                           json={"kind": "reject", "reason": "no"})
        assert decided.status_code == 200
    [update] = rig.api.wait_for("chat.update")
    assert "Rejected" in json.dumps(update.args["blocks"])
    assert "bob" in json.dumps(update.args["blocks"])


@pytest.mark.slow
def test_arguments_slack_cannot_show_whole_get_no_approve_button(rig: SlackRig) -> None:
    with rig.live.client("bot") as bot:
        fence, _ = ask(bot, "s7", tool="deploy", args={"note": "ok```\n*all* prod\n```"})
        huge, _ = ask(bot, "s8", tool="deploy", args={"note": "x" * 5000})
        hidden, _ = ask(bot, "s9", tool="deploy", args={"service": "web\u202e test"})
    rig.api.wait_for("chat.postMessage", 3)
    for request_id in (fence, huge):
        blocks = message_for(rig, request_id)["blocks"]
        actions = next(b for b in blocks if b["type"] == "actions")["elements"]
        assert [a["action_id"] for a in actions] == ["signoff_reject", "signoff_open"]
    shown = json.dumps(message_for(rig, hidden)["blocks"])
    assert "\\\\u202e" in shown  # the hidden character is written as its escape


@pytest.mark.slow
def test_slack_errors_retry_and_a_hopeless_one_is_dead_at_once(rig: SlackRig) -> None:
    rig.api.fail["chat.postMessage"] = "ratelimited"
    with rig.live.client("bot") as bot:
        ask(bot, "r1")
        rig.api.wait_for("chat.postMessage", 2)  # retried (retry_base 0.2 s)
        del rig.api.fail["chat.postMessage"]
        deadline = time.monotonic() + 20
        while rig.live.cli("webhooks", "deliveries", "--json").stdout.count('"delivered"') < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        rig.api.fail["chat.postMessage"] = "channel_not_found"
        hopeless, _ = ask(bot, "r2", thread="t-2")
    deadline = time.monotonic() + 20
    while True:
        log = json.loads(rig.live.cli("webhooks", "deliveries", "--channel", "slack",
                                      "--request", hopeless, "--json").stdout)
        if log and log[0]["status"] == "dead":
            break
        assert time.monotonic() < deadline, log
        time.sleep(0.1)
    assert log[0]["attempts"] == 1 and "channel_not_found" in log[0]["last_error"]
    assert log[0]["channel"] == "slack"
    with rig.live.client("boss") as boss:
        listed = boss.get("/api/v1/webhooks/deliveries", params={"channel": "slack"}).json()
        assert {d["channel"] for d in listed["deliveries"]} == {"slack"}
        rig.api.fail.clear()
        again = boss.post("/api/v1/webhooks/deliveries/replay",
                          json={"channel": "slack", "status": "dead"}).json()
        assert again["replayed"] == [log[0]["id"]]
        bad = boss.get("/api/v1/webhooks/deliveries", params={"channel": "smoke:signal"})
        assert bad.status_code == 422
    deadline = time.monotonic() + 20
    while json.loads(rig.live.cli("webhooks", "deliveries", "--request", hopeless,
                                  "--json").stdout)[0]["status"] != "delivered":
        assert time.monotonic() < deadline, "the replayed message was posted"
        time.sleep(0.1)



@pytest.mark.slow
@pytest.mark.parametrize("value", ["req_x\u0000y sha256:0", "r" * 8192 + " sha256:0",
                                   "", "only-one-part"])
def test_a_forged_button_value_is_a_typed_refusal(rig: SlackRig, value: str) -> None:
    answer = rig.post(click("U0ANN", "signoff_approve", value))
    assert answer.status_code < 500, answer.text
    if answer.status_code == 200:  # refused with a code the clicker is told
        assert answer.json()["ok"] is False and answer.json()["code"]
    else:  # longer than any value Slack sends: not a shape Slack sends
        assert (answer.status_code, answer.json()["code"]) == (422, "invalid_payload")
    with rig.live.client("boss") as boss:
        assert boss.get("/healthz").status_code == 200
