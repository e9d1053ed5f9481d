"""A Slack interaction payload read into the few fields signoff acts on, shape checked.

The payload is verified as Slack's before it is read, but a valid signature
says who sent it, not that it has the shape Slack documents: a field of
another type (``"user": "U1"``, ``"actions": "x"``) or a missing one is a
typed refusal (``InvalidInput``, code ``invalid_payload``, ``field`` naming
where), never a server error. Fields signoff does not use are not looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signoff.errors import InvalidInput

TEXT_MAX = 4000  # longer than any value, id or reason Slack sends


@dataclass(frozen=True, slots=True, kw_only=True)
class Interaction:
    kind: str  # "block_actions", "view_submission", or another kind (ignored)
    user: str
    team: str | None = None
    channel: str | None = None
    trigger_id: str = ""
    # block_actions: the first action
    action_id: str | None = None
    value: str = ""
    action_ts: str = ""
    # view_submission
    callback_id: str | None = None
    view_id: str = ""
    private_metadata: str = ""
    reason: str = ""


def _bad(field: str, what: str) -> InvalidInput:
    return InvalidInput(f"the callback's {field} {what}", code="invalid_payload", field=field)


def _object(parent: Mapping[str, Any], key: str, where: str, *, required: bool
            ) -> Mapping[str, Any] | None:
    value = parent.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, Mapping):
        raise _bad(where, "must be an object")
    return value


def _text(parent: Mapping[str, Any], key: str, where: str, *, required: bool = False,
          limit: int = TEXT_MAX) -> str | None:
    value = parent.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise _bad(where, "must be a non-empty string" if required else "must be a string")
    if len(value) > limit:
        raise _bad(where, f"is longer than {limit} characters")
    return value


def read(payload: Mapping[str, Any]) -> Interaction:
    """The interaction ``payload`` (a JSON object) describes; ``InvalidInput`` if its shape
    is not one Slack sends."""
    kind = _text(payload, "type", "type", required=True, limit=64)
    user = _object(payload, "user", "user", required=True)
    assert user is not None and kind is not None
    user_id = _text(user, "id", "user.id", required=True, limit=64)
    assert user_id is not None
    team = _object(payload, "team", "team", required=False)
    channel = _object(payload, "channel", "channel", required=False)
    base: dict[str, Any] = {
        "kind": kind, "user": user_id,
        "team": _text(team, "id", "team.id", limit=64) if team is not None else None,
        "channel": _text(channel, "id", "channel.id", limit=64) if channel is not None
        else None,
        "trigger_id": _text(payload, "trigger_id", "trigger_id") or ""}
    if kind == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions:
            raise _bad("actions", "must be a non-empty list")
        action = actions[0]
        if not isinstance(action, Mapping):
            raise _bad("actions[0]", "must be an object")
        return Interaction(**base, action_id=_text(action, "action_id", "actions[0].action_id",
                                                   required=True, limit=255),
                           value=_text(action, "value", "actions[0].value") or "",
                           action_ts=_text(action, "action_ts", "actions[0].action_ts") or "")
    if kind == "view_submission":
        view = _object(payload, "view", "view", required=True)
        assert view is not None
        node: Mapping[str, Any] | None = view
        where = "view"
        for key in ("state", "values", "reason", "reason"):  # the modal's one input
            where += f".{key}"
            node = _object(node, key, where, required=False) if node is not None else None
        reason = _text(node, "value", where + ".value") if node is not None else None
        return Interaction(**base, callback_id=_text(view, "callback_id", "view.callback_id"),
                           view_id=_text(view, "id", "view.id") or "",
                           private_metadata=_text(view, "private_metadata",
                                                  "view.private_metadata") or "",
                           reason=reason or "")
    return Interaction(**base)
