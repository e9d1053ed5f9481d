"""signoff: keep a human hand on what AI agents do.

An agent proposes a tool call; signoff decides allow / ask / deny from a
policy, and (from the kernel on) turns an ask into a durable, immutable
approval request that humans decide. This module is the curated public API;
``tests/test_public_api.py`` pins ``__all__``.
"""

from signoff.canonical import args_hash, canonical_bytes, parse_args
from signoff.errors import (
    ConfigurationError,
    InvalidArguments,
    InvalidCall,
    PathError,
    PolicyError,
    SignoffError,
)
from signoff.model import (
    Effect,
    Grant,
    GrantScope,
    InteractionMode,
    Reason,
    Rejection,
    ReviewMode,
    Risk,
    RunContext,
    ToolCall,
    Verdict,
)
from signoff.policy import Memory, Policy, trusted_context, untrusted_context

__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "Effect",
    "Grant",
    "GrantScope",
    "InteractionMode",
    "InvalidArguments",
    "InvalidCall",
    "Memory",
    "PathError",
    "Policy",
    "PolicyError",
    "Reason",
    "Rejection",
    "ReviewMode",
    "Risk",
    "RunContext",
    "SignoffError",
    "ToolCall",
    "Verdict",
    "__version__",
    "args_hash",
    "canonical_bytes",
    "parse_args",
    "trusted_context",
    "untrusted_context",
]
