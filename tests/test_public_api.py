"""The public surface is a contract: adding or removing a name is a deliberate act."""

import signoff

EXPECTED = {
    "ConfigurationError", "Effect", "Grant", "GrantScope", "InteractionMode", "InvalidArguments",
    "InvalidCall", "InvalidInput", "Memory", "PathError", "Policy", "PolicyError", "Reason",
    "Rejection", "ReviewMode", "Risk", "RunContext", "SignoffError", "ToolCall", "Verdict",
    "__version__",
    "args_hash", "canonical_bytes", "parse_args", "trusted_context", "untrusted_context",
    "ApprovalRequest", "ArgsChanged", "Blocked", "CallNotRun", "Conflict", "Decision",
    "DecisionKind", "Denied",
    "Expired", "Forbidden", "Gate", "Identity", "IdentityKind", "InvalidDecision", "NotFound",
    "Outcome", "OutcomeKind", "PostgresStore", "Proposal", "ProposalKind", "Rejected",
    "RequestStatus", "Responded", "SqliteStore", "StillPending", "StoreError", "Unauthenticated",
}


def test_all_is_pinned() -> None:
    assert set(signoff.__all__) == EXPECTED


def test_every_name_resolves() -> None:
    for name in signoff.__all__:
        assert getattr(signoff, name) is not None, name
