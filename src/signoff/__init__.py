"""signoff: keep a human hand on what AI agents do.

An agent proposes a tool call; signoff decides allow / ask / deny from a
policy, and (from the kernel on) turns an ask into a durable, immutable
approval request that humans decide. This module is the curated public API;
``tests/test_public_api.py`` pins ``__all__``.
"""

from typing import TYPE_CHECKING, Any

from signoff.canonical import args_hash, canonical_bytes, parse_args
from signoff.errors import (
    ArgsChanged,
    ConfigurationError,
    Conflict,
    Expired,
    Forbidden,
    InvalidArguments,
    InvalidCall,
    InvalidDecision,
    InvalidInput,
    NotFound,
    PathError,
    PolicyError,
    SignoffError,
    StoreError,
    Unauthenticated,
)
from signoff.extras import absent
from signoff.identity import Identity, IdentityKind
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import (
    Blocked,
    CallNotRun,
    Denied,
    Outcome,
    OutcomeKind,
    Proposal,
    ProposalKind,
    Rejected,
    Responded,
    StillPending,
)
from signoff.model import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    Effect,
    Grant,
    GrantScope,
    InteractionMode,
    Reason,
    Rejection,
    RequestStatus,
    ReviewMode,
    Risk,
    RunContext,
    ToolCall,
    Verdict,
)
from signoff.policy import Memory, Policy, trusted_context, untrusted_context
from signoff.policy.reviewing import ReviewConfig, Reviewer, use_builder
from signoff.store.sqlite import SqliteStore


def _build_reviewer(config: ReviewConfig) -> Reviewer:
    from signoff.review.configured import build_reviewer  # noqa: PLC0415 (when one is built)

    return build_reviewer(config)


# The composition root: a policy builds the reviewer its ``[review]`` names with the
# reviewers' own builder; the policy package defines the port and imports no reviewer.
use_builder(_build_reviewer)

if TYPE_CHECKING:
    from signoff.store.postgres import PostgresStore as PostgresStore


def __getattr__(name: str) -> Any:
    """``PostgresStore`` is imported on first use, so ``import signoff`` stays light."""
    if name == "PostgresStore":
        try:
            from signoff.store.postgres import PostgresStore  # noqa: PLC0415
        except ImportError as exc:
            raise absent("postgres", "signoff.PostgresStore", exc) from exc
        return PostgresStore
    raise AttributeError(f"module 'signoff' has no attribute {name!r}")

__version__ = "0.1.0"

# ``PostgresStore`` needs the postgres extra: it is imported by name
# (``from signoff import PostgresStore``), never by ``from signoff import *``,
# so a core install's star import works.
__all__ = [
    "ApprovalRequest",
    "ArgsChanged",
    "Blocked",
    "CallNotRun",
    "ConfigurationError",
    "Conflict",
    "Decision",
    "DecisionKind",
    "Denied",
    "Effect",
    "Expired",
    "Forbidden",
    "Gate",
    "Grant",
    "GrantScope",
    "Identity",
    "IdentityKind",
    "InteractionMode",
    "InvalidArguments",
    "InvalidCall",
    "InvalidDecision",
    "InvalidInput",
    "Memory",
    "NotFound",
    "Outcome",
    "OutcomeKind",
    "PathError",
    "Policy",
    "PolicyError",
    "Proposal",
    "ProposalKind",
    "Reason",
    "Rejected",
    "Rejection",
    "RequestStatus",
    "Responded",
    "ReviewMode",
    "Risk",
    "RunContext",
    "SignoffError",
    "SqliteStore",
    "StillPending",
    "StoreError",
    "ToolCall",
    "Unauthenticated",
    "Verdict",
    "__version__",
    "args_hash",
    "canonical_bytes",
    "parse_args",
    "trusted_context",
    "untrusted_context",
]
