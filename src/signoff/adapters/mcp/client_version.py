"""How a call's client speaks MCP, and the approval question for 2026-07-28 clients.

A handshake-era client (``initialize``, protocol up to 2025-11-25) declares its
capabilities once; the proxy asks its user with an ``elicitation/create`` request
(``asking.py``). A 2026-07-28 client sends its protocol version, capabilities and
identity in each request's ``_meta`` and takes no requests from the server: the
question goes back as an ``InputRequiredResult``, and the client calls again with
the answer and the ``requestState`` it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.adapters.mcp.asking import elicitation_params
from signoff.adapters.mcp.relay import Relay
from signoff.model import ApprovalRequest

STATE_PREFIX = "signoff:"  # the requestState of our approval question (modern clients)
INPUT_KEY = "signoff-approval"  # its key among the input requests
RESERVED_META = "io.modelcontextprotocol/"  # the envelope keys of a 2026-07-28 request


@dataclass(frozen=True, slots=True)
class ClientVersion:
    """How this call's client speaks: the initialize handshake, or the per-request
    envelope of 2026-07-28 (capabilities in each request's ``_meta``)."""

    modern: bool
    capabilities: dict[str, Any]
    client_info: dict[str, Any]

    @classmethod
    def of(cls, relay: Relay, params: dict[str, Any]) -> ClientVersion:
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get(PROTOCOL_VERSION_META_KEY) \
                in MODERN_PROTOCOL_VERSIONS:
            caps = meta.get(CLIENT_CAPABILITIES_META_KEY)
            info = meta.get(CLIENT_INFO_META_KEY)
            return cls(True, dict(caps) if isinstance(caps, dict) else {},
                       dict(info) if isinstance(info, dict) else {})
        return cls(False, relay.client_capabilities, relay.client_info)


def input_required(request: ApprovalRequest, inbox: str | None) -> dict[str, Any]:
    """The approval question as a 2026-07-28 ``InputRequiredResult``: the client asks its
    user and calls again with the answer and this state."""
    return {"resultType": "input_required",
            "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": {
                "mode": "form", **elicitation_params(request, inbox)}}},
            "requestState": STATE_PREFIX + request.id}
