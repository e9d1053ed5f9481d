"""The policy engine: config, rules, modes, the workspace guard, ``Policy.evaluate``.

The shell analysis it reads is ``signoff.shell``, beneath it.
"""

from signoff.policy.config import parse_policy
from signoff.policy.engine import Policy
from signoff.policy.memory import DecisionMemory, Memory
from signoff.policy.modes import (
    clamp,
    parse_interaction_mode,
    parse_review_mode,
    trusted_context,
    untrusted_context,
)
from signoff.policy.spec import PolicyConfig, Rule, ToolSpec, WorkspaceConfig

__all__ = [
    "DecisionMemory",
    "Memory",
    "Policy",
    "PolicyConfig",
    "Rule",
    "ToolSpec",
    "WorkspaceConfig",
    "clamp",
    "parse_interaction_mode",
    "parse_policy",
    "parse_review_mode",
    "trusted_context",
    "untrusted_context",
]
