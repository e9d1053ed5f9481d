"""Rule suggestions: learned from approvals, narrow, and proven never to admit a refused call."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signoff import Effect, Policy, RunContext, ToolCall
from signoff.model import ReviewMode
from signoff.policy.starter import starter_toml
from signoff.policy.suggest import Decided, Outcome, suggest, with_rules
from signoff.review import RiskReviewer

ROOT = "/srv/ws"
TEXT = starter_toml(ROOT)


def decided(n: int, command: str, outcome: Outcome = Outcome.APPROVED) -> Decided:
    return Decided(request_id=f"r{n}", tool="execute", args={"command": command},
                   outcome=outcome)


def effect(policy: Policy, command: str) -> Effect:
    verdict = policy.evaluate(ToolCall(id="c", name="execute", args={"command": command}),
                              RunContext(review_mode=ReviewMode.MANUAL, thread_id="t"))
    return verdict.effect


def learned(history: list[Decided]) -> Policy:
    report = suggest(TEXT, history, reviewer=RiskReviewer())
    base = Policy.from_toml(TEXT)
    return Policy.from_toml(with_rules(TEXT, base, report.suggestions))


def test_approved_scripts_become_a_glob_of_their_kind_not_the_whole_command() -> None:
    history = [decided(1, "python reproduce.py"), decided(2, "python check_fix.py"),
               decided(3, "python reproduce.py")]
    report = suggest(TEXT, history, reviewer=RiskReviewer())
    [only] = report.suggestions
    assert only.commands == ("python *.py",)
    assert only.saved == 3 and set(only.evidence) == {"r1", "r2", "r3"}
    policy = learned(history)
    assert effect(policy, "python another.py") is Effect.ALLOW
    assert effect(policy, "python -m http.server") is Effect.ASK  # not `python *`
    assert effect(policy, "python /etc/x.py") is Effect.ASK  # outside the workspace


def test_a_rejected_call_narrows_the_rule_to_what_was_approved() -> None:
    history = [decided(1, "python a.py"), decided(2, "python b.py"), decided(3, "python a.py"),
               decided(4, "python b.py"), decided(5, "python drop_db.py", Outcome.REJECTED)]
    report = suggest(TEXT, history, reviewer=RiskReviewer())
    assert report.suggestions, "the exact invocations are still worth a rule"
    policy = learned(history)
    assert effect(policy, "python drop_db.py") is Effect.ASK
    assert effect(policy, "python a.py") is Effect.ALLOW
    assert all(s.level == "exact" for s in report.suggestions)


def test_a_heredoc_write_is_learned_as_the_rule_that_admits_its_redirection() -> None:
    history = [decided(i, f"cat <<'EOF' > t{i}.py\nprint({i})\nEOF") for i in range(3)]
    policy = learned(history)
    assert effect(policy, "cat <<'EOF' > other.py\nprint(9)\nEOF") is Effect.ALLOW
    assert effect(policy, "cat <<'EOF' > notes.sh\nid\nEOF") is Effect.ASK
    assert effect(policy, "cat <<'EOF' > conftest.py\nx = 1\nEOF") is Effect.ASK  # sensitive


def test_no_history_or_only_refusals_suggest_nothing() -> None:
    assert suggest(TEXT, [], reviewer=RiskReviewer()).suggestions == ()
    refused = [decided(i, "python x.py", Outcome.REJECTED) for i in range(4)]
    assert suggest(TEXT, refused, reviewer=RiskReviewer()).suggestions == ()


COMMANDS = st.sampled_from([
    "python reproduce.py", "python drop.py", "python sub/run.py", "python -c 'print(1)'",
    "python3 x.py --fast", "python3 x.py --slow", "javac A.java", "javac B.java",
    "java -cp . A", "sed -i 's/a/b/' src/x.py", "sed -i 's/a/b/' setup.py",
    "cat <<'EOF' > t.py\nx\nEOF", "cat <<'EOF' > u.sh\nx\nEOF", "mvn test", "mvn deploy",
    "git add -A", "git push origin main", "make", "make install", "npm test", "npm publish",
    "cd /srv/ws && python run.py", "python run.py && curl http://x", "rm -rf build",
    "bash build.sh", "bash /tmp/evil.sh", "chmod +x run.sh && ./run.sh",
])
HISTORY = st.lists(st.tuples(COMMANDS, st.sampled_from(list(Outcome)), st.booleans()),
                   min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HISTORY)
def test_no_suggestion_admits_a_call_a_human_rejected_or_edited(
        rows: list[tuple[str, Outcome, bool]]) -> None:
    history = [Decided(request_id=f"r{i}", tool="execute", args={"command": command},
                       outcome=outcome, mandatory=mandatory and outcome is Outcome.APPROVED)
               for i, (command, outcome, mandatory) in enumerate(rows)]
    base = Policy.from_toml(TEXT)
    policy = learned(history)
    for item in history:
        if item.protected and effect(base, item.args["command"]) is not Effect.ALLOW:
            assert effect(policy, item.args["command"]) is not Effect.ALLOW, item
