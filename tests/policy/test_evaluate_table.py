"""The evaluation order (docs/concepts.md), case by case, through Policy.evaluate and signoff check.

Every row runs twice: once in-process through ``Policy.evaluate`` and once
through the CLI (``signoff check --json``) with the same policy file, memory
file, mode and interaction. Both must agree with the row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from signoff import Grant, GrantScope, Memory, Policy, Rejection, ToolCall, args_hash
from signoff.cli import main
from signoff.model import Effect, Verdict
from signoff.policy.modes import trusted_context

BASE = """
[policy]
version = "table-1"
default_review_mode = "{default_mode}"
ceiling = "{ceiling}"
gated = ["execute", "run_in_background", "schedule_task"]
unknown_tools = "{unknown}"
clarification_tool = "ask_user"
unattended_asks = "{unattended}"

[workspace]
name = "dev-workspace"
root = "{root}"
outside = "{outside}"
allowlist = ["/etc/hostname"]
mandatory = {ws_mandatory}

[tools.read_file]
paths = ["path"]
[tools.write_file]
paths = ["path"]
writes = true
[tools.execute]
shell = "command"
[tools.fetch]
description = "fetch a URL"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "no-secrets-write"
effect = "deny"
tool = "write_file"
args = {{ path = "**/secrets/**" }}

[[rules]]
id = "no-prod-env"
effect = "deny"
tool = "read_file"
args = {{ path = "**/prod/.env" }}

[[rules]]
id = "safe-shell"
effect = "allow"
tool = "execute"
command = ["ls *", "echo *", "cat *", "cd *", "git status", "pytest *"]

[[rules]]
id = "env-files"
effect = "ask"
mandatory = true
tool = "read_file"
args = {{ path = "**/.env" }}
risk = "critical"
roles = ["security"]
approvals = 2
expires = "30m"

[[rules]]
id = "ask-fetch"
effect = "ask"
tool = "fetch"
"""

DEFAULTS = {"default_mode": "manual", "ceiling": "full", "unknown": "ask",
            "unattended": "block", "outside": "approve", "ws_mandatory": "false"}


@dataclass(frozen=True)
class Case:
    id: str
    tool: str
    args: Any
    effect: str
    code: str | None = None
    source: str | None = None
    mode: str | None = None
    interaction: str | None = None
    thread: str | None = "t"
    session: str | None = None
    parent: str | None = None
    variant: dict[str, str] = field(default_factory=dict)
    risk: str | None = None
    mandatory: bool | None = None
    rules: tuple[str, ...] = ()
    call_id: str | None = "call-1"
    cli: bool = True


GATED = {"command": "make build"}
MODES = ("manual", "auto", "full")
INTERACTIONS = ("interactive", "scheduled", "webhook", "autonomous")


def _matrix() -> Iterator[Case]:
    for mode in MODES:
        for interaction in INTERACTIONS:
            if mode == "manual":
                effect, code, source = (("ask", "gated", "policy") if interaction == "interactive"
                                        else ("blocked", "needs_human", "policy"))
            elif mode == "auto":
                effect, code, source = "allow", "reviewer_approved", "reviewer"
            else:
                effect, code, source = "allow", "mode_full", "mode:full"
            yield Case(f"gated-{mode}-{interaction}", "execute", GATED, effect, code, source,
                       mode=mode, interaction=interaction, risk="medium")


CASES: list[Case] = [
    *_matrix(),
    # auto mode: the reviewer escalates high and critical risk
    Case("auto-curl-pipe-sh", "execute", {"command": "curl -s x | sh"}, "ask", "opaque",
         mode="auto", risk="critical"),
    Case("auto-curl-pipe-sh-scheduled", "execute", {"command": "curl -s x | sh"}, "blocked",
         "needs_human", mode="auto", interaction="scheduled", risk="critical"),
    Case("auto-force-push", "execute", {"command": "git push --force origin main"}, "ask",
         "gated", mode="auto", risk="high"),
    Case("auto-rm-r-is-denied-not-reviewed", "execute", {"command": "rm -r build"}, "deny",
         "rule_deny", mode="auto", rules=("no-rm",)),
    # the operator ceiling
    Case("ceiling-auto-clamps-full", "execute", GATED, "allow", "reviewer_approved", "reviewer",
         mode="full", variant={"ceiling": "auto"}),
    Case("ceiling-manual-clamps-full", "execute", GATED, "ask", "gated", mode="full",
         variant={"ceiling": "manual"}),
    Case("ceiling-manual-clamps-auto", "execute", GATED, "ask", "gated", mode="auto",
         variant={"ceiling": "manual"}),
    Case("ceiling-auto-keeps-ask-user", "ask_user", {"question": "which?"}, "allow", "allowed",
         mode="full", variant={"ceiling": "auto"}),
    Case("default-mode-auto", "execute", GATED, "allow", "reviewer_approved", "reviewer",
         variant={"default_mode": "auto"}),
    Case("default-mode-full-clamped", "execute", GATED, "allow", "reviewer_approved",
         "reviewer", variant={"default_mode": "full", "ceiling": "auto"}),
    # mandatory ask rules: a human whatever the mode
    Case("mandatory-manual", "read_file", {"path": ".env"}, "ask", "mandatory_ask",
         risk="critical", mandatory=True, rules=("env-files",)),
    Case("mandatory-full", "read_file", {"path": ".env"}, "ask", "mandatory_ask", mode="full",
         mandatory=True),
    Case("mandatory-auto", "read_file", {"path": ".env"}, "ask", "mandatory_ask", mode="auto",
         mandatory=True),
    Case("mandatory-scheduled", "read_file", {"path": ".env"}, "blocked", "needs_human",
         interaction="scheduled", mandatory=True),
    Case("mandatory-full-scheduled", "read_file", {"path": ".env"}, "blocked", "needs_human",
         mode="full", interaction="scheduled"),
    Case("mandatory-unattended-allow-still-blocked", "read_file", {"path": ".env"}, "blocked",
         "needs_human", interaction="scheduled", variant={"unattended": "allow"}),
    Case("mandatory-nested-env", "read_file", {"path": "sub/dir/.env"}, "ask", "mandatory_ask"),
    Case("mandatory-absolute-env", "read_file", {"path": "{root}/.env"}, "ask",
         "mandatory_ask"),
    Case("plain-read-inside", "read_file", {"path": "README.md"}, "allow", "allowed", "policy",
         risk="low"),
    # mandatory deny rules: nothing overrides them
    Case("deny-manual", "execute", {"command": "rm -rf ."}, "deny", "rule_deny",
         risk="critical", rules=("no-rm",)),
    Case("deny-full", "execute", {"command": "rm -rf ."}, "deny", "rule_deny", mode="full"),
    Case("deny-scheduled", "execute", {"command": "rm x"}, "deny", "rule_deny",
         interaction="scheduled"),
    Case("deny-args-rule", "write_file", {"path": "secrets/key.txt", "content": "x"}, "deny",
         "rule_deny", rules=("no-secrets-write",)),
    Case("deny-beats-mandatory-ask", "read_file", {"path": "prod/.env"}, "deny", "rule_deny",
         rules=("no-prod-env", "env-files")),
    Case("deny-beats-outside", "write_file", {"path": "/etc/secrets/x", "content": "x"}, "deny",
         "rule_deny", rules=("no-secrets-write",)),
    # rejection memory
    Case("rejected-before", "execute", {"command": "make deploy"}, "deny", "rejected_before",
         thread="t-rej"),
    Case("rejected-before-full", "execute", {"command": "make deploy"}, "deny",
         "rejected_before", thread="t-rej", mode="full"),
    Case("rejected-before-scheduled", "execute", {"command": "make deploy"}, "deny",
         "rejected_before", thread="t-rej", interaction="scheduled"),
    Case("rejected-other-thread", "execute", {"command": "make deploy"}, "ask", "gated",
         thread="t-other"),
    Case("rejected-other-args", "execute", {"command": "make deploy2"}, "ask", "gated",
         thread="t-rej"),
    # grants
    Case("grant-thread", "execute", GATED, "allow", "grant", "grant:g-thread", thread="t-grant"),
    Case("grant-scheduled", "execute", GATED, "allow", "grant", "grant:g-thread",
         thread="t-grant", interaction="scheduled"),
    Case("grant-expired", "execute", GATED, "ask", "gated", thread="t-exp"),
    Case("grant-used-up", "execute", GATED, "ask", "gated", thread="t-used"),
    Case("grant-other-thread", "execute", GATED, "ask", "gated", thread="t-none"),
    Case("grant-session", "execute", GATED, "allow", "grant", "grant:g-session", thread="t-x",
         session="s1"),
    Case("grant-never-covers-mandatory", "read_file", {"path": ".env"}, "ask", "mandatory_ask",
         thread="t-grant"),
    Case("grant-never-covers-deny", "execute", {"command": "rm x"}, "deny", "rule_deny",
         thread="t-grant"),
    Case("grant-shell-pattern-is-per-command", "execute",
         {"command": "make build && curl x | sh"}, "ask", "opaque", thread="t-grant"),
    Case("grant-shell-never-allow", "execute", {"command": "FOO=1 make build"}, "ask", "gated",
         thread="t-grant"),
    Case("grant-arg-pattern", "fetch", {"url": "https://docs.example.com/a/b"}, "allow",
         "grant", "grant:g-fetch", thread="t-grant"),
    Case("grant-arg-pattern-miss", "fetch", {"url": "https://evil.example.com/a"}, "ask",
         "rule_ask", thread="t-grant"),
    # unknown tools
    Case("unknown-manual", "frobnicate", {}, "ask", "unknown_tool", risk="medium"),
    Case("unknown-full", "frobnicate", {}, "allow", "mode_full", "mode:full", mode="full"),
    Case("unknown-auto", "frobnicate", {}, "allow", "reviewer_approved", "reviewer",
         mode="auto"),
    Case("unknown-scheduled", "frobnicate", {}, "blocked", "needs_human",
         interaction="scheduled"),
    Case("unknown-deny", "frobnicate", {}, "deny", "unknown_tool", variant={"unknown": "deny"}),
    Case("unknown-allow", "frobnicate", {}, "allow", "allowed", variant={"unknown": "allow"}),
    # workspace scope: approve outside
    Case("scope-approve-manual", "read_file", {"path": "/etc/passwd"}, "ask",
         "outside_workspace", risk="high"),
    Case("scope-approve-full", "read_file", {"path": "/etc/passwd"}, "allow", "mode_full",
         "mode:full", mode="full"),
    Case("scope-approve-auto-escalates", "read_file", {"path": "/etc/passwd"}, "ask",
         "outside_workspace", mode="auto", risk="high"),
    Case("scope-approve-scheduled", "read_file", {"path": "/etc/passwd"}, "blocked",
         "needs_human", interaction="scheduled"),
    Case("scope-allowlisted", "read_file", {"path": "/etc/hostname"}, "allow", "allowed"),
    Case("scope-dotdot", "read_file", {"path": "../outside.txt"}, "ask", "outside_workspace"),
    Case("scope-symlink-escape", "read_file", {"path": "escape/passwd"}, "ask",
         "outside_workspace"),
    Case("scope-sibling-prefix", "read_file", {"path": "{root}_evil/x"}, "ask",
         "outside_workspace"),
    Case("scope-inside", "read_file", {"path": "src/main.py"}, "allow", "allowed"),
    Case("scope-beats-allow-rule", "execute", {"command": "cat /etc/passwd"}, "ask",
         "outside_workspace"),
    # a write outside the workspace is a mandatory ask ([policy] always_ask)
    Case("scope-redirect-target", "execute", {"command": "echo x > /tmp/motd"}, "ask",
         "outside_write", mandatory=True),
    Case("scope-write-outside", "write_file", {"path": "/tmp/x", "content": "x"}, "ask",
         "outside_write", mandatory=True),
    # workspace scope: deny outside
    Case("scope-deny", "read_file", {"path": "/etc/passwd"}, "deny", "outside_workspace",
         variant={"outside": "deny"}),
    Case("scope-deny-allowlisted", "read_file", {"path": "/etc/hostname"}, "allow", "allowed",
         variant={"outside": "deny"}),
    Case("scope-deny-inside", "read_file", {"path": "src/main.py"}, "allow", "allowed",
         variant={"outside": "deny"}),
    Case("scope-deny-full", "read_file", {"path": "/etc/passwd"}, "deny", "outside_workspace",
         mode="full", variant={"outside": "deny"}),
    Case("scope-deny-shell", "execute", {"command": "cat /etc/passwd"}, "deny",
         "outside_workspace", variant={"outside": "deny"}),
    # workspace scope: allow all
    Case("scope-allow", "read_file", {"path": "/etc/passwd"}, "allow", "allowed",
         variant={"outside": "allow"}),
    Case("scope-allow-nul-still-denied", "read_file", {"path": "a\x00b"}, "deny", "nul_byte",
         variant={"outside": "allow"}),
    Case("scope-allow-non-string-denied", "read_file", {"path": 123}, "deny", "invalid_path",
         variant={"outside": "allow"}),
    Case("scope-mandatory-full", "read_file", {"path": "/etc/passwd"}, "ask", "mandatory_ask",
         mode="full", mandatory=True, variant={"ws_mandatory": "true"}),
    Case("scope-mandatory-unattended-allow", "read_file", {"path": "/etc/passwd"}, "blocked",
         "needs_human", interaction="scheduled",
         variant={"ws_mandatory": "true", "unattended": "allow"}),
    # unattended_asks = allow: root runs pass non-mandatory asks, subagents never
    Case("unattended-allow-root", "execute", GATED, "allow", "unattended_allowed", "unattended",
         interaction="scheduled", variant={"unattended": "allow"}),
    Case("unattended-allow-subagent", "execute", GATED, "blocked", "needs_human",
         interaction="autonomous", parent="call-0", variant={"unattended": "allow"}),
    Case("unattended-allow-scope", "read_file", {"path": "/etc/passwd"}, "allow",
         "unattended_allowed", interaction="webhook", variant={"unattended": "allow"}),
    # well-formedness
    Case("empty-call-id", "read_file", {"path": "a"}, "deny", "missing_call_id", call_id=""),
    Case("blank-call-id", "read_file", {"path": "a"}, "deny", "missing_call_id", call_id="  "),
    Case("null-call-id", "read_file", {"path": "a"}, "deny", "missing_call_id", call_id=None,
         cli=False),
    Case("duplicate-keys", "read_file", '{"path": "a", "path": "/etc/passwd"}', "deny",
         "duplicate_key", cli=False),
    Case("nan-argument", "read_file", '{"n": NaN}', "deny", "non_finite_number", cli=False),
    Case("args-not-object", "read_file", "[1, 2]", "deny", "not_an_object", cli=False),
    Case("shell-arg-missing", "execute", {}, "deny", "invalid_shell_argument"),
    Case("shell-arg-not-string", "execute", {"command": ["rm", "x"]}, "deny",
         "invalid_shell_argument"),
    Case("empty-tool-name", "", {}, "deny", "invalid_tool_name"),
    # the clarification tool
    Case("ask-user-manual", "ask_user", {"question": "which?"}, "allow", "allowed"),
    Case("ask-user-auto", "ask_user", {"question": "which?"}, "allow", "allowed", mode="auto"),
    Case("ask-user-full", "ask_user", {"question": "which?"}, "deny", "clarification_withdrawn",
         mode="full"),
    Case("ask-user-scheduled", "ask_user", {"question": "which?"}, "deny",
         "clarification_withdrawn", interaction="scheduled"),
    # non-mandatory ask rules follow the mode
    Case("ask-rule-manual", "fetch", {"url": "https://x"}, "ask", "rule_ask",
         rules=("ask-fetch",)),
    Case("ask-rule-full", "fetch", {"url": "https://x"}, "allow", "mode_full", "mode:full",
         mode="full"),
    Case("ask-rule-auto", "fetch", {"url": "https://x"}, "allow", "reviewer_approved",
         "reviewer", mode="auto"),
    # allow rules, command by command
    Case("allow-compound", "execute", {"command": "ls -la && echo ok"}, "allow", "rule_allow",
         rules=("safe-shell",)),
    Case("allow-exact", "execute", {"command": "git status"}, "allow", "rule_allow"),
    Case("allow-exact-extra-arg", "execute", {"command": "git status --short"}, "ask", "gated"),
    Case("allow-partial-compound", "execute", {"command": "ls && make"}, "ask", "gated"),
    Case("allow-scheduled", "execute", {"command": "pytest -q"}, "allow", "rule_allow",
         interaction="scheduled"),
    # strongest of steps 2-5
    Case("mandatory-beats-scope", "read_file", {"path": "/etc/.env"}, "ask", "mandatory_ask",
         mode="full", risk="critical", mandatory=True),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("table")
    root = base / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# hi\n")
    (root / ".env").write_text("X=1\n")
    (base / "outside.txt").write_text("outside\n")
    os.symlink("/etc", root / "escape")
    rejections = [Rejection(thread_id="t-rej", tool="execute",
                            args_hash=args_hash({"command": "make deploy"}),
                            reason="deploys need a change ticket",
                            alternatives=("make deploy-staging",), request_id="req-1")]
    grants = [
        Grant(id="g-thread", scope=GrantScope.THREAD, tool="execute",
              args={"command": "make *"}, thread_id="t-grant"),
        Grant(id="g-env", scope=GrantScope.THREAD, tool="read_file", args={"path": "**"},
              thread_id="t-grant"),
        Grant(id="g-rm", scope=GrantScope.THREAD, tool="execute", args={"command": "rm *"},
              thread_id="t-grant"),
        Grant(id="g-fetch", scope=GrantScope.THREAD, tool="fetch",
              args={"url": "https://docs.example.com/**"}, thread_id="t-grant"),
        Grant(id="g-expired", scope=GrantScope.THREAD, tool="execute", thread_id="t-exp",
              expires_at=1000.0),
        Grant(id="g-used", scope=GrantScope.THREAD, tool="execute", thread_id="t-used",
              max_uses=1, uses=1),
        Grant(id="g-session", scope=GrantScope.SESSION, tool="execute", session_id="s1"),
    ]
    memory_file = base / "memory.json"
    memory_file.write_text(json.dumps({
        "rejections": [{"thread_id": r.thread_id, "tool": r.tool, "args_hash": r.args_hash,
                        "reason": r.reason, "alternatives": list(r.alternatives),
                        "request_id": r.request_id} for r in rejections],
        "grants": [{"id": g.id, "scope": g.scope.value, "tool": g.tool, "args": dict(g.args),
                    "thread_id": g.thread_id, "session_id": g.session_id,
                    "expires_at": g.expires_at, "max_uses": g.max_uses, "uses": g.uses}
                   for g in grants],
    }))
    return {"base": base, "root": str(root), "memory": Memory(rejections, grants),
            "memory_file": memory_file}


def _policy_file(world: dict[str, Any], variant: dict[str, str]) -> Path:
    values = {**DEFAULTS, **variant, "root": world["root"]}
    name = "policy-" + "-".join(f"{k}_{v}" for k, v in sorted(variant.items())) + ".toml"
    path: Path = world["base"] / name
    if not path.exists():
        path.write_text(BASE.format(**values))
    return path


def _args(case: Case, root: str) -> Any:
    if isinstance(case.args, dict):
        return {k: v.replace("{root}", root) if isinstance(v, str) else v
                for k, v in case.args.items()}
    return case.args


def _check(case: Case, verdict: dict[str, Any]) -> None:
    assert verdict["effect"] == case.effect, verdict
    if case.code is not None:
        assert verdict["code"] == case.code, verdict
    if case.source is not None:
        assert verdict["source"] == case.source, verdict
    if case.risk is not None:
        assert verdict["risk"] == case.risk, verdict
    if case.mandatory is not None:
        assert verdict["mandatory"] is case.mandatory, verdict
    matched = {r["rule"] for r in verdict["reasons"]}
    for rule in case.rules:
        assert rule in matched, (rule, verdict)
    assert verdict["policy_version"] == "table-1"
    assert verdict["decision_id"].startswith("dec_")
    assert verdict["reasons"], "every verdict explains itself"
    if case.effect in ("ask", "blocked"):
        assert verdict["args_hash"].startswith("sha256:")
        assert verdict["approvals"] >= 1


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 80
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_evaluate(case: Case, world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, case.variant), memory=world["memory"])
    context = trusted_context(thread_id=case.thread, session_id=case.session,
                              review_mode=case.mode, interaction_mode=case.interaction,
                              parent_call=case.parent)
    verdict = policy.evaluate(
        ToolCall(id=case.call_id, name=case.tool, args=_args(case, world["root"])), context)
    _check(case, verdict.to_dict())


@pytest.mark.parametrize("case", [c for c in CASES if c.cli], ids=[c.id for c in CASES if c.cli])
def test_signoff_check(case: Case, world: dict[str, Any],
                       capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--policy", str(_policy_file(world, case.variant)), "--tool", case.tool,
            "--args", json.dumps(_args(case, world["root"])), "--memory",
            str(world["memory_file"]), "--call-id", str(case.call_id), "--json"]
    for flag, value in (("--mode", case.mode), ("--interaction", case.interaction),
                        ("--thread", case.thread), ("--session", case.session),
                        ("--parent-call", case.parent)):
        if value is not None:
            argv += [flag, value]
    assert main(argv) == 0
    _check(case, json.loads(capsys.readouterr().out))


def test_rejection_reaches_the_model_with_reason_and_alternatives(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {}), memory=world["memory"])
    verdict = policy.evaluate(ToolCall(id="c", name="execute", args={"command": "make deploy"}),
                              trusted_context(thread_id="t-rej"))
    assert "deploys need a change ticket" in verdict.message
    assert "make deploy-staging" in verdict.message
    assert "Do not retry" in verdict.message


def test_scope_denial_message_names_the_workspace(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {"outside": "deny"}))
    verdict = policy.evaluate(ToolCall(id="c", name="read_file", args={"path": "/etc/passwd"}))
    assert verdict.message == "Access denied: '/etc/passwd' is outside workspace 'dev-workspace'"


def test_blocked_names_the_missing_decision(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {}))
    verdict = policy.evaluate(ToolCall(id="c", name="execute", args=GATED),
                              trusted_context(interaction_mode="autonomous"))
    assert verdict.effect is Effect.BLOCKED
    assert verdict.message.startswith("BLOCKED:")
    assert "Missing decision" in verdict.message and "execute" in verdict.message


def test_mandatory_ask_carries_roles_quorum_and_expiry(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {}))
    verdict = policy.evaluate(ToolCall(id="c", name="read_file", args={"path": ".env"}))
    assert verdict.roles == ("security",)
    assert verdict.approvals == 2
    assert verdict.expires_in == 1800.0


def test_duplicate_ids_in_one_turn_are_all_denied(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {}))
    verdicts = policy.evaluate_turn([
        ToolCall(id="a", name="read_file", args={"path": "x"}),
        ToolCall(id="a", name="execute", args={"command": "ls"}),
        ToolCall(id="b", name="read_file", args={"path": "y"}),
        ToolCall(id=None, name="read_file", args={"path": "z"}),
    ])
    assert [v.code for v in verdicts] == [
        "duplicate_call_id", "duplicate_call_id", "allowed", "missing_call_id"]


def test_reviewer_failure_goes_to_a_human(world: dict[str, Any]) -> None:
    class Broken:
        def review(self, request: object) -> object:
            raise RuntimeError("model timed out")

    class Malformed:
        def review(self, request: object) -> object:
            return {"approve": True}

    for reviewer in (Broken(), Malformed()):
        policy = Policy.load(_policy_file(world, {}), reviewer=reviewer)  # type: ignore[arg-type]
        verdict = policy.evaluate(ToolCall(id="c", name="execute", args=GATED),
                                  trusted_context(review_mode="auto"))
        assert verdict.effect is Effect.ASK
        assert any(r.code == "reviewer_escalated" for r in verdict.reasons)


def test_evaluate_is_deterministic(world: dict[str, Any]) -> None:
    policy = Policy.load(_policy_file(world, {}), memory=world["memory"])
    for case in CASES:
        context = trusted_context(thread_id=case.thread, session_id=case.session,
                                  review_mode=case.mode, interaction_mode=case.interaction,
                                  parent_call=case.parent)
        call = ToolCall(id=case.call_id, name=case.tool, args=_args(case, world["root"]))
        first, second = policy.evaluate(call, context), policy.evaluate(call, context)
        assert _stable(first) == _stable(second)


def _stable(verdict: Verdict) -> dict[str, Any]:
    data = verdict.to_dict()
    data.pop("decision_id")
    return data
