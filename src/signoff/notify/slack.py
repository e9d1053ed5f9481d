"""Slack as a channel: an interactive approval message per request, updated with its outcome.

Posted with the official ``slack-sdk`` (``chat.postMessage``; ``chat.update``
once the request moves on, whichever route decided it). The message shows
what the inbox shows an approver: the summary, the risk, who asked, and the
**exact** frozen arguments with their hash, hidden characters written as
``\\u`` escapes. Approve once / Reject go back through ``signoff serve``'s
``/slack/interactions`` (``signoff.server.slack``), where a mapped identity
decides through the kernel like anyone in the inbox. The message always shows
the arguments that would run and carries their hash in its Approve button: an
approver's edit, a reminder and an escalation update it in place (the request
read again when the update is sent), buttons kept while the request is pending,
so a click approves only what that message showed. When the arguments can't
be shown whole in a message (too long, or text that would break out of the
code block), the message offers no Approve button: only Reject and Open in
inbox — nobody approves from Slack what Slack could not show them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from signoff.extras import needs
from signoff.model import ApprovalRequest, RequestStatus
from signoff.notify.channels import Attempt, OneByOne
from signoff.notify.config import SlackConfig
from signoff.reveal import HIDDEN, escape_json
from signoff.store.base import Store
from signoff.store.deliveries import Delivery

ARGS_SHOWN = 2800  # a section's text holds 3000 characters
# The events after which the request may still be pending: its message keeps its buttons.
PENDING_TYPES = frozenset({"request.created", "request.edited", "request.reminder",
                           "request.escalated"})
APPROVE, REJECT, OPEN = "signoff_approve", "signoff_reject", "signoff_open"
# Errors no retry mends: the message can't ever be posted as configured.
_FINAL = frozenset({"channel_not_found", "not_in_channel", "invalid_auth", "account_inactive",
                    "token_revoked", "not_authed", "is_archived", "missing_scope"})
_OUTCOMES = {"approved": ":white_check_mark: Approved", "rejected": ":x: Rejected",
             "responded": ":speech_balloon: Answered without running",
             "expired": ":hourglass: Expired — nobody decided in time",
             "cancelled": ":no_entry_sign: Withdrawn",
             "invalidated": ":warning: Not run: re-validation refused it",
             "succeeded": ":white_check_mark: Approved and ran",
             "failed": ":x: Approved; the run failed",
             "unknown": ":grey_question: Approved; the run's outcome is unknown"}


def mrkdwn(text: str) -> str:
    """Text as Slack shows it literally: its three control characters escaped, and
    hidden characters written as their ``\\u`` escapes."""
    shown = HIDDEN.sub(lambda m: json.dumps(m.group())[1:-1], text)
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shown_args(args: Any) -> tuple[str, bool]:
    """The arguments as a code block's text, and whether they are shown whole."""
    text = escape_json(json.dumps(args, indent=2, ensure_ascii=False, sort_keys=True))
    whole = "```" not in text and len(text) <= ARGS_SHOWN
    if len(text) > ARGS_SHOWN:
        text = text[:ARGS_SHOWN] + "\n… (cut: open the inbox to see them all)"
    return mrkdwn(text.replace("```", "`\u200b``")), whole


def request_message(data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The fallback text and blocks of a pending request's message."""
    args, whole = shown_args(data["args"])
    needs = f"{data['approvals_required']} approval" + \
        ("s" if data["approvals_required"] != 1 else "")
    if data.get("roles"):
        needs += f" ({', '.join(data['roles'])})"
    fields = [("Risk", data["risk"]), ("Thread", data.get("thread_id") or "-"),
              ("Asked by", data.get("principal") or data.get("agent") or "-"),
              ("Needs", needs), ("Expires", data.get("expires_at") or "never")]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "emoji": False,
                                    "text": f"Approval needed: {data['tool']}"[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn(data["summary"])[:2900]},
         "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{mrkdwn(str(v))[:1900]}"}
                    for k, v in fields]},
    ]
    if data.get("description"):
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": (
            "The agent says (unverified): " + mrkdwn(data["description"]))[:2900]}]})
    if data.get("proposed_hash"):
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": (
            ":pencil2: Edited by an approver: these are the arguments that would run (the "
            f"agent proposed `{data['proposed_hash']}`). Approvals count for these only.")}]})
    blocks += [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{args}```"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text":
                                          f"`{data['args_hash']}` · {data['request_id']}"}]},
    ]
    buttons: list[dict[str, Any]] = []
    signed = bool(data.get("passkey"))  # a button carries no passkey assertion
    if whole and not signed:
        buttons.append({"type": "button", "action_id": APPROVE, "style": "primary",
                        "text": {"type": "plain_text", "text": "Approve once"},
                        "value": f"{data['request_id']} {data['args_hash']}"})
    buttons += [{"type": "button", "action_id": REJECT, "style": "danger",
                 "text": {"type": "plain_text", "text": "Reject…"},
                 "value": data["request_id"]},
                {"type": "button", "action_id": OPEN, "url": data["url"],
                 "text": {"type": "plain_text", "text": "Open in inbox"}}]
    blocks.append({"type": "actions", "block_id": f"signoff:{data['request_id']}"[:255],
                   "elements": buttons})
    if signed:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text":
                       ":key: Approvals of this call are signed with a passkey: approve it "
                       "in the inbox."}]})
    elif not whole:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text":
                       "These arguments can't be shown whole here: approve them in the "
                       "inbox."}]})
    return f"Approval needed: {data['tool']} ({data['risk']} risk)", blocks


def outcome_message(data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text and blocks a request's message is replaced by once it has moved on."""
    status = data["status"]
    said = _OUTCOMES.get(status, status)
    who = [d["approver"] for d in data.get("decisions", [])]
    lines = [f"*{said}*: `{mrkdwn(data['tool'])}` — {mrkdwn(data['summary'])}"]
    if who:
        lines.append(f"Decided by {', '.join(mrkdwn(w) for w in who)}")
    reasons = [d["reason"] for d in data.get("decisions", []) if d.get("reason")]
    if reasons:
        lines.append(f"Reason: {mrkdwn(reasons[-1])}")
    if data.get("outcome_reason"):
        lines.append(mrkdwn(str(data["outcome_reason"])))
    text = "\n".join(lines)[:2900]
    return f"{said}: {data['tool']}", [
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text":
                                          f"`{data.get('approved_args_hash') or data['args_hash']}`"
                                          f" · <{data['url']}|{data['request_id']}>"}]}]


class SlackChannel(OneByOne):
    def __init__(self, config: SlackConfig, store: Store, *, clock: Callable[[], float],
                 timeout: float) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        with needs("slack", "[notify.slack] in signoff.toml"):
            from slack_sdk import WebClient  # noqa: PLC0415
            from slack_sdk.errors import SlackApiError  # noqa: PLC0415
        self._api_error = SlackApiError
        self.client = WebClient(token=config.token, base_url=config.base_url,
                                timeout=max(1, round(timeout)))

    @property
    def channel(self) -> str:
        return "slack"

    def wants(self, event_type: str, request: ApprovalRequest) -> bool:
        return self.config.filters.wants(event_type, risk=request.risk.value,
                                         tool=request.tool, thread_id=request.thread_id)

    def send(self, delivery: Delivery) -> Attempt:
        body = json.loads(delivery.payload)
        data = body["data"]
        try:
            if body["type"] in PENDING_TYPES:
                shown = self._as_pending(data, created=body["type"] == "request.created")
                if shown is not None and body["type"] == "request.created":
                    self._post(shown, *request_message(shown))
                elif shown is not None:
                    self._update(shown, *request_message(shown), record=True)
            else:
                self._update(data, *outcome_message(data))
        except self._api_error as exc:
            error = str(exc.response.get("error", "error"))
            return Attempt(ok=False, status=exc.response.status_code, error=f"slack: {error}",
                           final=error in _FINAL)
        except Exception as exc:  # the network: urllib's errors, timeouts
            return Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
        return Attempt(ok=True, status=200)

    def _post(self, data: dict[str, Any], text: str, blocks: list[dict[str, Any]]) -> None:
        answer = self.client.chat_postMessage(channel=self.config.channel, text=text,
                                              blocks=blocks, unfurl_links=False)
        with self.store.transaction() as tx:
            tx.put_slack_message(data["request_id"], channel=str(answer["channel"]),
                                 ts=str(answer["ts"]), at=self.clock())

    def _as_pending(self, data: dict[str, Any], *, created: bool) -> dict[str, Any] | None:
        """The message data of a pending request as it stands now: the arguments that would
        run and their hash (an edit since the event was written included). ``None`` when it
        has moved on: its outcome's own update says so, never buttons again."""
        request = self.store.get_request(data["request_id"])
        if request is None:
            return data
        if request.status is not RequestStatus.PENDING and not created:
            return None
        shown = {**data, "args": json.loads(request.run_args), "args_hash": request.run_hash,
                 "passkey": request.passkey}
        shown.pop("proposed_hash", None)
        if request.run_hash != request.args_hash:
            shown["proposed_hash"] = request.args_hash
        return shown

    def _update(self, data: dict[str, Any], text: str, blocks: list[dict[str, Any]], *,
                record: bool = False) -> None:
        """Replace the request's message; post one when there is none (``record``: keep it
        as the request's message, for a pending request's message with buttons)."""
        where = self.store.slack_message(data["request_id"])
        if where is not None:
            try:
                self.client.chat_update(channel=where[0], ts=where[1], text=text,
                                        blocks=blocks)
                return
            except self._api_error as exc:
                if exc.response.get("error") != "message_not_found":
                    raise
        if record:
            self._post(data, text, blocks)
        else:  # its request was never posted (e.g. before Slack was set up)
            self.client.chat_postMessage(channel=self.config.channel, text=text,
                                         blocks=blocks, unfurl_links=False)
