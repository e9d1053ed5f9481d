"""A tool's definition, as the agent was shown it, and what a change of it means.

An MCP server describes each tool (description, input schema, annotations); the
model chooses calls by that text, and the policy reads the annotations as hints.
A server may change the definition mid-session (the "rug pull": a harmless
tool's description turns into instructions, or its hints turn gentle), so the
hash of the definition the agent was shown travels with the call
(``ToolCall.definition_hash``): requests record it, grants are bound to it
(``signoff.policy.matching.grant_applies``), and a call whose definition changed
since the session first saw it (``ToolCall.definition_changed``, set by the
adapter that saw both) is asked of a human whatever the thread's mode or
grants say — and the request says why (reason ``definition_changed``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from signoff.canonical import canonical_bytes
from signoff.errors import InvalidArguments
from signoff.model import ApprovalRequest, Reason, Step

DEFINITION_CHANGED = "definition_changed"
DEFINED_BY = ("description", "inputSchema", "annotations")  # what the hash covers


def definition_hash(tool: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of the tool's description, input schema and
    annotations (absent ones as null): the same text, the same hash."""
    defined = {key: tool.get(key) for key in DEFINED_BY}
    try:
        data = canonical_bytes(defined)
    except (InvalidArguments, TypeError, ValueError):  # beyond canonical JSON: still stable
        data = json.dumps(defined, sort_keys=True, default=repr).encode("utf-8", "replace")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def definition_changed(request: ApprovalRequest) -> bool:
    """The request was asked because its tool's definition changed (the inbox flags it)."""
    return any(reason.get("code") == DEFINITION_CHANGED for reason in request.reasons)


def changed_reason(tool: str) -> Reason:
    return Reason(step=Step.MANDATORY_ASK, code=DEFINITION_CHANGED,
                  text=f"the definition of {tool} (description, input schema or annotations) "
                       "changed since this session first saw it: asked anew, whatever the "
                       "thread's mode and standing approvals")
