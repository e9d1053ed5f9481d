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
    "Outcome", "OutcomeKind", "Proposal", "ProposalKind", "Rejected",
    "RequestStatus", "Responded", "SqliteStore", "StillPending", "StoreError", "Unauthenticated",
}


def test_all_is_pinned() -> None:
    assert set(signoff.__all__) == EXPECTED


def test_every_name_resolves() -> None:
    for name in signoff.__all__:
        assert getattr(signoff, name) is not None, name


def test_postgres_store_is_imported_by_name() -> None:
    """It needs the postgres extra, so a star import leaves it out and a named one finds it."""
    from signoff import PostgresStore

    assert "PostgresStore" not in signoff.__all__
    assert PostgresStore.__name__ == "PostgresStore"
