"""A Slack click approves only what its message showed, against real ``signoff serve``
processes on both backends (the real ``slack_sdk`` client posting to the local Web API
stand-in, signed interaction callbacks): an edit through the API updates the message (the
new arguments, their hash, the button valued with it), a click on the overtaken message is
refused with ``args_changed`` and shown what would run now, a click on the updated one
counts; a reminder keeps the buttons; validly signed payloads of unexpected shapes are a
typed 4xx, never a 500."""

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
from slack_api import Call, SlackApi, signed

SECRET = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
POLICY = """
[policy]
version = "binding-1"
unknown_tools = "ask"

[tools.deploy]
[tools.remindme]

[[rules]]
id = "deploys-need-two"
effect = "ask"
tool = "deploy"
approvals = 2
risk = "high"

[[rules]]
id = "remindme-asks"
effect = "ask"
tool = "remindme"
risk = "medium"

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

[[notify.escalation]]
tools = ["remindme"]
remind_after = "1s"
"""


@dataclass
class Rig:
    live: procs.Live
    api: SlackApi
    clicks: int = 0

    def post(self, payload: dict[str, Any]) -> httpx.Response:
        body, headers = signed(SECRET, payload)
        return httpx.post(self.live.url + "/slack/interactions", content=body,
                          headers=headers, timeout=30)

    def click(self, user: str, value: str) -> httpx.Response:
        self.clicks += 1
        return self.post({"type": "block_actions", "user": {"id": user},
                          "team": {"id": "T0TEAM"}, "channel": {"id": "C0APPROVALS"},
                          "trigger_id": f"trig-{self.clicks}",
                          "actions": [{"action_id": "signoff_approve", "value": value,
                                       "action_ts": f"{time.time():.6f}-{self.clicks}"}]})

    def request(self, request_id: str) -> dict[str, Any]:
        with self.live.client("boss") as boss:
            found: dict[str, Any] = boss.get(f"/api/v1/requests/{request_id}").json()
            return found

    def messages(self, request_id: str, method: str) -> list[Call]:
        return [c for c in self.api.of(method) if request_id in json.dumps(c.args)]

    def wait_message(self, request_id: str, method: str, count: int = 1) -> list[Call]:
        deadline = time.monotonic() + 20
        while len(self.messages(request_id, method)) < count:
            assert time.monotonic() < deadline, [c.method for c in self.api.calls]
            time.sleep(0.05)
        return self.messages(request_id, method)


@contextlib.contextmanager
def rig_on(backend: str, directory: Path) -> Iterator[Rig]:
    api = SlackApi()
    env = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": SECRET}
    with procs.database(backend, directory) as db:
        tokens = procs.prepare(backend, db, directory,
                               policy=POLICY.replace("{base_url}", api.base_url))
        server = procs.start_server(db, directory, env=env)
        live = procs.Live(backend=backend, db=db, cwd=directory, tokens=tokens, server=server)
        try:
            yield Rig(live=live, api=api)
        finally:
            server.stop()
            api.close()


@pytest.fixture(params=["sqlite", "postgres"])
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    with rig_on(request.param, tmp_path) as made:
        yield made


def buttons(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    actions = [b for b in blocks if b["type"] == "actions"]
    return {e["action_id"]: e for a in actions for e in a["elements"]}


def ask(rig: Rig, tool: str, args: dict[str, Any], call_id: str) -> str:
    with rig.live.client("bot") as bot:
        answer = bot.post("/api/v1/calls", json={"tool": tool, "args": args,
                                                 "call_id": call_id,
                                                 "context": {"thread_id": f"t-{call_id}"}})
    assert answer.status_code == 200 and answer.json()["status"] == "pending", answer.text
    return str(answer.json()["request_id"])


@pytest.mark.slow
def test_a_click_on_a_message_an_edit_overtook_is_refused_and_the_message_updated(
        rig: Rig) -> None:
    request_id = ask(rig, "deploy", {"env": "staging"}, "d1")
    [posted] = rig.wait_message(request_id, "chat.postMessage")
    staging_hash = rig.request(request_id)["args_hash"]
    shown = json.dumps(posted.args["blocks"])
    assert '\\"env\\": \\"staging\\"' in shown and staging_hash in shown
    original = buttons(posted.args["blocks"])["signoff_approve"]["value"]
    assert original == f"{request_id} {staging_hash}"

    # approver A edits to prod through the API: one vote of two, for the new arguments
    with rig.live.client("ann") as ann:
        edited = ann.post(f"/api/v1/requests/{request_id}/decisions",
                          json={"kind": "edit", "args": {"env": "prod"}})
    assert edited.status_code == 200, edited.text
    assert edited.json()["status"] == "pending" and edited.json()["approvals"] == 1
    prod_hash = rig.request(request_id)["approved_hash"]
    assert prod_hash and prod_hash != staging_hash

    # the message already sent is updated in place: prod, its hash, the button valued with it
    [update] = rig.wait_message(request_id, "chat.update")
    assert update.args["ts"] == posted.args.get("ts", update.args["ts"])
    now_shown = json.dumps(update.args["blocks"])
    assert '\\"env\\": \\"prod\\"' in now_shown and "staging" not in now_shown.split(
        "agent proposed")[0].split("Edited by an approver")[-1]
    assert prod_hash in now_shown
    approve = buttons(update.args["blocks"])["signoff_approve"]
    assert approve["value"] == f"{request_id} {prod_hash}"

    # approver B clicks Approve on the original message: refused, and shown what would run
    stale = rig.click("U0BOB", original)
    assert stale.status_code == 200, stale.text
    assert stale.json() == {"ok": False, "code": "args_changed"}
    assert rig.request(request_id)["status"] == "pending"
    told = [c for c in rig.api.wait_for("chat.postEphemeral") if c.args["user"] == "U0BOB"]
    assert told and "prod" in told[-1].args["text"] and prod_hash in told[-1].args["text"]
    assert "Not taken" in told[-1].args["text"]
    with rig.live.client("boss") as boss:
        events = boss.get("/api/v1/audit", params={"request_id": request_id}).json()["events"]
    refused = [e for e in events if e["kind"] == "decision.refused"]
    assert [e["data"]["code"] for e in refused] == ["args_changed"]
    assert refused[0]["data"]["via"] == "slack"

    # a click on the updated message counts: the quorum of two is met on prod
    counted = rig.click("U0BOB", approve["value"])
    assert counted.json() == {"ok": True, "code": "decided"}
    assert rig.request(request_id)["status"] == "approved"
    with rig.live.client("bot") as bot:
        claimed = bot.post(f"/api/v1/calls/{request_id}/claim")
    assert claimed.status_code == 200 and claimed.json()["args"] == {"env": "prod"}


@pytest.mark.slow
def test_a_reminder_keeps_the_buttons_of_a_pending_request(rig: Rig) -> None:
    request_id = ask(rig, "remindme", {"n": 1}, "r1")
    [posted] = rig.wait_message(request_id, "chat.postMessage")
    args_hash = rig.request(request_id)["args_hash"]
    [reminded] = rig.wait_message(request_id, "chat.update")  # after remind_after = 1s
    with rig.live.client("boss") as boss:
        events = boss.get("/api/v1/audit", params={"request_id": request_id}).json()["events"]
    assert "notify.reminder" in [e["kind"] for e in events]
    assert rig.request(request_id)["status"] == "pending"
    kept = buttons(reminded.args["blocks"])
    assert kept["signoff_approve"]["value"] == f"{request_id} {args_hash}"
    assert "signoff_reject" in kept and "pending" not in reminded.args["text"].lower()
    assert buttons(posted.args["blocks"]).keys() == kept.keys()
    decided = rig.click("U0ANN", kept["signoff_approve"]["value"])
    assert decided.json() == {"ok": True, "code": "decided"}
    assert rig.request(request_id)["status"] == "approved"


def _base(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "block_actions", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"},
        "channel": {"id": "C0APPROVALS"}, "trigger_id": "trig",
        "actions": [{"action_id": "signoff_approve", "value": "req_x sha256:" + "0" * 64,
                     "action_ts": "1"}]}
    for key, value in changes.items():
        if value is _DROP:
            payload.pop(key)
        else:
            payload[key] = value
    return payload


_DROP = object()
SHAPES: list[tuple[dict[str, Any], str]] = [
    (_base(user="U1"), "user"),
    (_base(user=_DROP), "user"),
    (_base(user={"id": 5}), "user.id"),
    (_base(user={"id": ""}), "user.id"),
    (_base(user=["U0ANN"]), "user"),
    (_base(actions="x"), "actions"),
    (_base(actions=[]), "actions"),
    (_base(actions=_DROP), "actions"),
    (_base(actions=["x"]), "actions[0]"),
    (_base(actions=[{"value": "v"}]), "actions[0].action_id"),
    (_base(actions=[{"action_id": "signoff_approve", "value": 7}]), "actions[0].value"),
    (_base(actions=[{"action_id": "signoff_approve", "value": "v", "action_ts": {}}]),
     "actions[0].action_ts"),
    (_base(team="T0TEAM"), "team"),
    (_base(team={"id": ["T0TEAM"]}), "team.id"),
    (_base(channel="C0APPROVALS"), "channel"),
    (_base(trigger_id=12), "trigger_id"),
    (_base(type=None), "type"),
    (_base(type=["block_actions"]), "type"),
    ({"type": "view_submission", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"},
      "view": "x"}, "view"),
    ({"type": "view_submission", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"}},
     "view"),
    ({"type": "view_submission", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"},
      "view": {"callback_id": "signoff_reject", "private_metadata": "req_x",
               "state": {"values": {"reason": "no"}}}}, "view.state.values.reason"),
    ({"type": "view_submission", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"},
      "view": {"callback_id": "signoff_reject", "private_metadata": ["req_x"]}},
     "view.private_metadata"),
    ({"type": "view_submission", "user": {"id": "U0ANN"}, "team": {"id": "T0TEAM"},
      "view": {"callback_id": "signoff_reject", "private_metadata": "req_x",
               "state": {"values": {"reason": {"reason": {"value": 3}}}}}},
     "view.state.values.reason.reason.value"),
]


@pytest.mark.slow
def test_signed_payloads_of_unexpected_shapes_are_a_typed_4xx(rig: Rig) -> None:
    for payload, field in SHAPES:
        answer = rig.post(payload)
        assert answer.status_code == 422, (payload, answer.status_code, answer.text)
        problem = answer.json()
        assert (problem["code"], problem["field"]) == ("invalid_payload", field), payload
    forged = {"req_x": "invalid_args_hash", "req_x sha256:abc": "invalid_args_hash",
              "req_x " + "f" * 64: "invalid_args_hash",
              "req\u0000x sha256:" + "0" * 64: "nul_character"}
    for value, code in forged.items():
        answer = rig.post(_base(actions=[{"action_id": "signoff_approve", "value": value,
                                          "action_ts": value[:8]}]))
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"ok": False, "code": code}
    with rig.live.client("boss") as boss:
        assert boss.get("/healthz").status_code == 200
