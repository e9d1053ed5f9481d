"""A name the line spells through a variable or ``$(echo …)`` counts where it expands.

``F=.env; cat $F`` and ``cat $(echo .env)`` read ``.env``. The assignment or the
substitution made the call a review, but ``full`` mode passes reviews, and a
credential read is a human's in every mode. The line is read again with the
values written in; only the paths of that reading count
(``signoff.policy.shellvars``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Effect, Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy.shell import analyze


def _policy(workspace: Path) -> Policy:
    return Policy.from_toml(
        f'[policy]\nversion = "t"\n[workspace]\nroot = "{workspace}"\n'
        f'[tools.execute]\nshell = "command"\n'
        f'[[rules]]\nid = "shadow"\neffect = "deny"\ntool = "execute"\n'
        f'command = ["cat /etc/shadow"]\n'
        f'[[rules]]\nid = "reads"\neffect = "allow"\ntool = "execute"\n'
        f'command = ["cat *", "git *", "echo *", "xargs *"]\n')


def _judge(policy: Policy, command: str, mode: ReviewMode = ReviewMode.MANUAL) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name="execute", args={"command": command}),
                           RunContext(thread_id="t", review_mode=mode))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("n\n")
    (root / ".env").write_text("TOKEN=1\n")
    return root.resolve()


@pytest.mark.parametrize("command", [
    "F=.env; cat $F",
    'export F=.env && cat "$F"',
    "declare -r F='.env'; cat $F",
    "F=HEAD:.env; git show ${F}",
    "F=HEAD:.env git show ${F}",
    "F=(notes.txt .env); cat ${F[1]}",
    "A=.e; B=nv; cat $A$B",
    "F='.e*'; cat $F",  # unquoted, the value is a glob
    "F=.env; echo HEAD:$F | git cat-file --batch",
    "F=.env; echo $F | xargs cat",
    "cat $F; F=.env",  # assigned anywhere on the line: every value is tried
    "cat $(echo .env)",
    "cat `echo .env`",
    "cat \"$(printf '%s\\n' .env)\"",
    "git show $(echo HEAD:.env)",
    "F=$(echo .env); cat $F",
    "cat $(echo $(echo .env))",
])
def test_a_secret_assigned_then_read_is_a_mandatory_ask(workspace: Path, command: str) -> None:
    for mode in (ReviewMode.MANUAL, ReviewMode.FULL):
        verdict = _judge(_policy(workspace), command, mode)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, mode, verdict)
        assert any(r.code == "secret_read" and ".env" in r.text for r in verdict.reasons)


def test_a_sensitive_path_assigned_then_written_is_a_mandatory_ask(workspace: Path) -> None:
    verdict = _judge(_policy(workspace), "F=.git/hooks/pre-commit; echo x > $F",
                     ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert "sensitive_write" in {r.code for r in verdict.reasons}


@pytest.mark.parametrize("command", [
    "F=notes.txt; cat $F", "cat $(echo notes.txt)", "cat $(printf '.e%s' nv)"])
def test_a_name_that_is_no_secret_is_judged_as_before(workspace: Path, command: str) -> None:
    verdict = _judge(_policy(workspace), command)
    assert verdict.effect is Effect.ASK and not verdict.mandatory  # never allowed: gated
    assert _judge(_policy(workspace), command, ReviewMode.FULL).effect is Effect.ALLOW


def test_the_written_in_line_is_not_what_runs_so_it_never_denies(workspace: Path) -> None:
    """Bash reads notes.txt; the variant with the first value is asked about, not denied."""
    verdict = _judge(_policy(workspace), "F=/etc/shadow; F=notes.txt; cat $F")
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert _judge(_policy(workspace), "cat /etc/shadow").effect is Effect.DENY


def test_only_name_like_values_are_written_in() -> None:
    analysis = analyze("F='$(id)'; G='a; rm -rf /'; cat $F $G")
    assert {c.argv[0] for c in analysis.commands} == {"cat"}
    assert {ref.path for ref in analysis.paths if ref.literal} == set()
    assert {ref.path for ref in analyze("F=a; cat $F").paths if ref.literal} == {"a"}


@pytest.mark.parametrize("command", [
    "python -c 'print(open(\".env\").read())'",
    "python3 -c \"import pathlib; print(pathlib.Path('.env').read_text())\"",
    "node -e \"console.log(require('fs').readFileSync('.env','utf8'))\"",
    "perl -e 'open(F, \"<.env\"); print <F>'",
    "ruby -e 'puts File.read(\".env\")'",
    "php -r 'readfile(\"/etc/shadow\");'",
    "python - <<'PY'\nprint(open('.env').read())\nPY",
    "bash -c \"python -c 'open(\\\".env\\\")'\"",
])
def test_a_secret_named_in_inline_code_is_a_mandatory_ask(workspace: Path, command: str) -> None:
    for mode in (ReviewMode.MANUAL, ReviewMode.FULL):
        verdict = _judge(_policy(workspace), command, mode)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, mode, verdict)
        assert "secret_read" in {r.code for r in verdict.reasons}


def test_inline_code_that_names_no_secret_is_judged_as_before(workspace: Path) -> None:
    command = "python -c 'print(\"hello\", open(\"notes.txt\").read())'"
    assert _judge(_policy(workspace), command, ReviewMode.FULL).effect is Effect.ALLOW
    assert analyze(command).code_names == ("hello", "notes.txt")
