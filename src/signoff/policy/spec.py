"""The policy as loaded: immutable rules, tools and settings (``signoff.policy.config``
builds them from ``signoff.toml``; the engine only reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from signoff.globs.linear import Linear
from signoff.model import Effect, ReviewMode, Risk
from signoff.policy.guarded import Guarded
from signoff.policy.harnesses import DEFAULT_PROTECTED
from signoff.policy.hints import McpConfig
from signoff.policy.patterns import CommandPattern, ValuePattern
from signoff.policy.reviewing import ReviewConfig
from signoff.policy.sensitive import DEFAULT_SECRETS, DEFAULT_SENSITIVE

DEFAULT_GATED = ("execute", "run_in_background", "schedule_task")
# Concerns (signoff.shell.concerns) that need a human whatever the review mode.
DEFAULT_ALWAYS_ASK = ("sensitive_write", "outside_write", "secret_read", "env_dump",
                      "privilege", "system_install", "global_config")
CONCERN_CODES = frozenset({"sensitive_write", "outside_write", "secret_read", "privilege",
                           "system_install",
                           "global_config", "hidden_exec", "inline_code", "network",
                           "listener", "env_dump", "executes_written", "pipe_to_shell",
                           "opaque", "unknown_option", "runtime_name"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    name: str
    paths: tuple[str, ...] = ()
    writes: bool = False
    shell: str | None = None
    cwd: str | None = None
    risk: Risk | None = None
    description: str | None = None
    # The path arguments are virtual, rooted at the workspace root: "/notes.md" is
    # "<root>/notes.md" (deepagents' file backends with virtual_mode, their default).
    virtual: bool = False
    # Write evidence (signoff.kernel.write_evidence): the argument holding the file's whole new text
    # (write_file-style), or the edit_file-style arguments (old text, new text, replace all).
    content: str | None = None
    edit: EditSpec | None = None
    # Arguments that may name a file inside a git object ("HEAD:.env", ":src/app.py"):
    # the tool prints what was committed there, so it is read (``secret_read``).
    objects: tuple[str, ...] = ()
    # Path arguments naming a directory the tool reads file by file (deepagents' grep): a
    # credential under it is read (``secret_read``), unless a glob argument narrows it.
    trees: tuple[str, ...] = ()
    # The argument naming the subagent a call starts (deepagents' ``task``:
    # "subagent_type"): a call to a subagent that runs without signoff is refused.
    subagent: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EditSpec:
    """``edit = { old = "old_string", new = "new_string", all = "replace_all" }``: the
    tool replaces ``old`` by ``new`` in the file it writes, every occurrence when ``all``
    is true, else exactly one."""

    old: str
    new: str
    all: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgRule:
    name: str
    patterns: tuple[ValuePattern, ...]
    combined: Linear | None = None  # all patterns as one alternation, when it compiles

    def matches(self, text: str) -> bool:
        """Patterns with a string shortcut first; RE2 (the alternation, one pass) only
        when a pattern without one could match."""
        pending = False
        for pattern in self.patterns:
            if pattern.shortcut is not None:
                if pattern.shortcut(text):
                    return True
            elif pattern.possible(text):
                pending = True
        if not pending:
            return False
        if self.combined is not None:
            return self.combined.fullmatch(text)
        return any(p.matches(text) for p in self.patterns if p.shortcut is None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    id: str
    index: int
    effect: Effect
    tool: str = "*"
    commands: tuple[CommandPattern, ...] = ()
    args: tuple[ArgRule, ...] = ()
    mandatory: bool = False
    risk: Risk | None = None
    roles: tuple[str, ...] = ()
    approvals: int | None = None
    # Dual control: (role, approvals) pairs, all needed, each approver counted once.
    requires: tuple[tuple[str, int], ...] = ()
    expires: float | None = None
    reason: str | None = None
    text: str = ""  # the description shown in verdicts, computed once at load
    writes: tuple[ValuePattern, ...] = ()  # allow rules: paths their commands may write
    passkey: bool = False  # ask rules: ``signature = "passkey"``, approvals need one
    # Command patterns by their literal command name; patterns whose name is a glob apart.
    by_name: Mapping[str, tuple[CommandPattern, ...]] = field(default_factory=dict)
    wild: tuple[CommandPattern, ...] = ()

    def __hash__(self) -> int:  # ids are unique in a policy; hashing every pattern is slow
        return hash((self.id, self.index))

    def describe(self) -> str:
        return self.text or _describe(self)

    def patterns_for(self, argv0: str) -> tuple[CommandPattern, ...]:
        """The command patterns that can match a command named ``argv0`` (or its basename)."""
        found = self.by_name.get(argv0, ())
        if "/" in argv0:
            found = found + self.by_name.get(argv0.rsplit("/", 1)[-1], ())
        return found + self.wild if self.wild else found


def _describe(rule: Rule) -> str:
    if rule.reason:
        return rule.reason
    parts = [f"tool {rule.tool!r}"]
    if rule.commands:
        parts.append("command " + " | ".join(repr(c.source) for c in rule.commands))
    for arg in rule.args:
        parts.append(f"{arg.name} ~ " + " | ".join(repr(p.source) for p in arg.patterns))
    return f"rule '{rule.id}' ({rule.effect.value}): " + ", ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceConfig:
    root: str
    name: str = "workspace"
    outside: str = "approve"  # allow | approve | deny
    allowlist: tuple[str, ...] = ()
    mandatory: bool = False
    risk: Risk = Risk.HIGH
    sensitive: tuple[str, ...] = DEFAULT_SENSITIVE
    secrets: tuple[str, ...] = DEFAULT_SECRETS


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyConfig:
    version: str
    source: str = "<policy>"
    default_review_mode: ReviewMode = ReviewMode.MANUAL
    ceiling: ReviewMode = ReviewMode.FULL
    gated: tuple[str, ...] = DEFAULT_GATED
    unknown_tools: str = "ask"  # allow | ask | deny
    clarification_tool: str | None = "ask_user"
    unattended_asks: str = "block"  # block | allow
    default_expires: float | None = 3600.0
    default_approvals: int = 1
    default_roles: tuple[str, ...] = ()
    always_ask: tuple[str, ...] = DEFAULT_ALWAYS_ASK
    # Single-user setups: the principal of a thread may raise its own review mode
    # (never approve its own calls). Off: no route lets a principal review itself.
    self_service_modes: bool = False
    sensitive: tuple[str, ...] = DEFAULT_SENSITIVE
    secrets: tuple[str, ...] = DEFAULT_SECRETS
    # Protected paths (signoff.policy.protected): the harness settings and [policy]
    # protected, as patterns; and the gate's own files, registered from the running
    # configuration (its policy file, its database). Writing one is a mandatory ask.
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    guarded: tuple[Guarded, ...] = ()
    # ``[policy] passkey_from_risk``: every approval of a call at or above it needs a passkey.
    passkey_from_risk: Risk | None = None
    workspace: WorkspaceConfig | None = None
    tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    review: ReviewConfig = field(default_factory=ReviewConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
