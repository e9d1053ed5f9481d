"""What a verified Slack interaction does: a button or a modal turned into a decision.

Slack tells us which Slack user clicked; ``[notify.slack.users]`` says which
signoff identity that is. An unmapped user decides nothing (and the attempt is
audited). A mapped one decides through ``Gate.decide_once`` — the kernel's
rules read under the request's lock (role, quorum, no self-approval, disabled
or removed identities) exactly as for the inbox, the refusal audited with
``via: slack``, and a callback Slack delivers twice taken once. Approve
carries the hash of the arguments the message showed and decides only while
it is the hash that would run (``Decision.expected_args_hash``): a click on a
message an edit has overtaken is refused (``args_changed``) and the clicker is
shown the arguments that would run now. Reject asks for a reason in a modal
first; edit is not offered here (the message links to the inbox).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from signoff import inputs
from signoff.errors import InvalidInput
from signoff.kernel.gate import Gate
from signoff.model import Decision
from signoff.notify.config import SlackConfig
from signoff.notify.slack import APPROVE, OPEN, REJECT, shown_args
from signoff.notify.slack_payload import Interaction
from signoff.shown import shown_hash

REJECT_VIEW = "signoff_reject"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What to tell the clicking user (an ephemeral message), and the HTTP answer."""

    code: str  # "decided", "recorded", "modal", "ignored", or the refusal's code
    message: str
    body: dict[str, Any] | None = None  # JSON answer to Slack (a modal's errors)
    modal_for: str | None = None  # open the reject modal for this request


def reject_view(request_id: str) -> dict[str, Any]:
    return {"type": "modal", "callback_id": REJECT_VIEW, "private_metadata": request_id,
            "title": {"type": "plain_text", "text": "Reject request"},
            "submit": {"type": "plain_text", "text": "Reject"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [{"type": "input", "block_id": "reason", "label": {
                "type": "plain_text", "text": "Why? The agent is told."},
                "element": {"type": "plain_text_input", "action_id": "reason",
                            "multiline": True, "max_length": 2000}}]}


def act(gate: Gate, config: SlackConfig, interaction: Interaction) -> Reply:
    """Carry out one interaction (already verified as Slack's, its shape read)."""
    slack_user = interaction.user
    if interaction.kind == "block_actions":
        if interaction.action_id == OPEN:
            return Reply(code="ignored", message="")
        if interaction.action_id == REJECT:
            return Reply(code="modal", message="", modal_for=interaction.value)
        if interaction.action_id != APPROVE:
            return Reply(code="ignored", message="")
        request_id, _, value_hash = interaction.value.partition(" ")
        try:  # the button's value came back from Slack: a forged one is refused as it is
            inputs.identifier("request id", request_id)
            shown = shown_hash("the button's arguments hash", value_hash)
        except InvalidInput as exc:
            return Reply(code=exc.code, message=f"Not taken: {exc.message}")
        key = _key("approve", request_id, interaction.action_ts, slack_user)
        decision = replace(Decision.approve(), expected_args_hash=shown)
        return _decide(gate, config, slack_user, request_id, decision=decision, key=key)
    if interaction.kind == "view_submission" and interaction.callback_id == REJECT_VIEW:
        request_id = interaction.private_metadata
        reason = interaction.reason.strip()
        if not reason:
            return Reply(code="reason_required", message="a rejection needs a reason",
                         body={"response_action": "errors",
                               "errors": {"reason": "Say why: the agent is told."}})
        key = _key("reject", request_id, interaction.view_id, slack_user)
        reply = _decide(gate, config, slack_user, request_id, decision=Decision.reject(reason),
                        key=key)
        if reply.code in ("decided", "recorded"):
            return Reply(code=reply.code, message=reply.message, body={})
        return Reply(code=reply.code, message=reply.message, body={
            "response_action": "errors", "errors": {"reason": reply.message[:150]}})
    return Reply(code="ignored", message="")


def _key(*parts: str) -> str:
    return "slack-" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]


def _decide(gate: Gate, config: SlackConfig, slack_user: str, request_id: str, *,
            decision: Decision, key: str) -> Reply:
    try:  # the value came back from Slack: a forged one must not reach the store as it is
        inputs.identifier("request id", request_id)
    except InvalidInput as exc:
        return Reply(code=exc.code, message=f"Not taken: {exc.message}")
    name = config.users.get(slack_user)
    if name is None:
        _unmapped(gate, slack_user, request_id, decision)
        return Reply(code="slack_user_unmapped", message="Your Slack account is not mapped to "
                     "a signoff identity: ask an admin, or decide in the inbox.")
    once = gate.decide_once(request_id, decision, user=name, key=key, via="slack")
    if once.result is None:
        if once.code == "args_changed":
            return Reply(code="args_changed", message=_changed(gate, request_id))
        return Reply(code=once.code or "refused", message=f"Not taken: {once.message} "
                     f"({once.code})")
    result = once.result
    if result.transitioned or result.request.status.value != "pending":
        done = {"approve": "Approved", "reject": "Rejected"}.get(decision.kind.value, "Decided")
        return Reply(code="decided", message=f"{done} as {name}.")
    return Reply(code="recorded", message=f"Your approval is recorded as {name}: "
                 f"{result.approvals} of {result.required}.")


def _changed(gate: Gate, request_id: str) -> str:
    """What the clicker is told when the message they clicked showed other arguments than
    would run: not taken, and what would run now (the message itself is updated too)."""
    request = gate.find_request(request_id)
    if request is None:
        return "Not taken: the arguments changed since this message showed them."
    args, whole = shown_args(json.loads(request.run_args))
    more = "" if whole else " (not shown whole here: open the inbox)"
    return ("Not taken: an approver edited the arguments since this message showed them, "
            "and your click approved only what it showed. These would run now"
            f"{more}:\n```{args}```\n`{request.run_hash}` — decide on them in the updated "
            "message or in the inbox.")


def _unmapped(gate: Gate, slack_user: str, request_id: str, decision: Decision) -> None:
    """An authentic click by someone signoff does not know: refused, and audited."""
    gate.note_refused(request_id, decision, code="slack_user_unmapped", via="slack", actor=None,
                      data={"slack_user": slack_user[:64]})
