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
    # written for every name of the program: python2, python3 are python (the family)
    assert only.commands == ("python *.py", "python2 *.py", "python3 *.py")
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


def rules(history: list[Decided]) -> set[str]:
    return {c for s in suggest(TEXT, history, reviewer=RiskReviewer()).suggestions
            for c in s.commands}


# --- the program family: python3 is python, ./mvnw is mvn ---------------------------

def test_a_rule_learned_for_python_covers_python3_and_a_versioned_name_it_saw() -> None:
    history = [decided(1, "python a.py"), decided(2, "python3 b.py"),
               decided(3, "python3.11 a.py")]
    policy = learned(history)
    for command in ("python c.py", "python3 c.py", "python3.11 c.py", "python2 c.py"):
        assert effect(policy, command) is Effect.ALLOW, command
    assert effect(policy, "/usr/bin/python3 c.py") is Effect.ASK  # a path is only itself
    assert effect(policy, "pypy3 c.py") is Effect.ASK  # another implementation
    assert effect(policy, "python3 -m pylint c.py") is Effect.ASK  # another head


def test_a_rejected_call_under_another_name_of_the_program_narrows_the_family_rule() -> None:
    history = [decided(1, "python a.py"), decided(2, "python b.py"), decided(3, "python a.py"),
               decided(4, "python3 drop_db.py", Outcome.REJECTED)]
    policy = learned(history)
    assert effect(policy, "python3 drop_db.py") is Effect.ASK
    assert effect(policy, "python drop_db.py") is Effect.ASK
    assert effect(policy, "python3 a.py") is Effect.ALLOW  # the exact approved, every name
    history = [decided(1, "python a.py"), decided(2, "python b.py"),
               decided(3, "python3.12 drop_db.py", Outcome.REJECTED)]
    policy = learned(history)
    assert effect(policy, "python3.12 drop_db.py") is Effect.ASK
    assert effect(policy, "python drop_db.py") is Effect.ASK


def test_python_m_module_is_its_own_head_and_a_rejected_pip_stays_asked() -> None:
    history = [decided(i, f"python3 -m unittest tests.test_{i}") for i in range(3)]
    history.append(decided(9, "python3 -m pip install requests", Outcome.REJECTED))
    found = rules(history)
    assert found == {"python -m unittest *", "python2 -m unittest *", "python3 -m unittest *"}
    policy = learned(history)
    assert effect(policy, "python -m unittest tests.test_other") is Effect.ALLOW
    assert effect(policy, "python3 -m pip install requests") is Effect.ASK
    assert effect(policy, "python3 -m pylint x.py") is Effect.ASK
    assert effect(policy, "python3 x.py") is Effect.ASK
    # options before -m do not hide the module: the module is still part of the head
    history = [decided(1, "python -u -m pylint a.py"), decided(2, "python -u -m pylint b.py")]
    assert effect(learned(history), "python -u -m pylint c.py") is Effect.ALLOW
    assert effect(learned(history), "python -u -m other c.py") is Effect.ASK


def test_many_scripts_make_the_interpreter_wide_rule_which_leaves_other_heads_out() -> None:
    scripts = ["a.py", "b.py -v", "sub/c.py --fast", "d.py x y", "/srv/ws/e.py",
               "f.py", "g.py -k t", "h.py 1"]
    history = [decided(i, f"python {s}") for i, s in enumerate(scripts)]
    history.append(decided(20, "python -u a.py"))
    history.append(decided(21, "python -u b.py"))
    report = suggest(TEXT, history, reviewer=RiskReviewer())
    [only] = report.suggestions
    assert only.level == "wide"
    assert "python *.py *" in only.commands and "python3 -u *.py *" in only.commands
    assert "python *" not in only.commands
    policy = learned(history)
    assert effect(policy, "python3 new.py --any thing") is Effect.ALLOW
    assert effect(policy, "python -u new.py") is Effect.ALLOW
    for command in ("python -m pylint x.py", "python -m http.server", "python -W error x.py",
                    "python - <<'PY'\nprint(1)\nPY", "python /etc/x.py"):
        assert effect(policy, command) is Effect.ASK, command


def test_a_build_tool_wrapper_is_the_tool() -> None:
    history = [decided(1, "mvn test"), decided(2, "mvn test")]
    policy = learned(history)
    assert effect(policy, "./mvnw test") is Effect.ALLOW
    assert effect(policy, "mvnw test") is Effect.ASK  # only the project's wrapper, by path
    assert effect(policy, "/tmp/mvnw test") is Effect.ASK
    assert effect(policy, "./mvnw deploy") is Effect.ASK
    # one program: refused under one name, it is refused under the other
    history = [decided(1, "./gradlew test"), decided(2, "./gradlew test"),
               decided(3, "gradle test", Outcome.REJECTED)]
    assert suggest(TEXT, history, reviewer=RiskReviewer()).suggestions == ()


# --- option values ----------------------------------------------------------------------

def test_an_option_value_seen_with_two_values_becomes_a_glob_for_that_option_only() -> None:
    history = [decided(1, "mvn test -Dtest=FooTest -Dgroups=fast"),
               decided(2, "./mvnw test -Dtest=BarTest -Dgroups=fast")]
    assert rules(history) == {"mvn test -Dtest=* -Dgroups=fast",
                              "./mvnw test -Dtest=* -Dgroups=fast"}
    policy = learned(history)
    assert effect(policy, "mvn test -Dtest=BazTest -Dgroups=fast") is Effect.ALLOW
    assert effect(policy, "mvn test -Dtest=BazTest -Dgroups=slow") is Effect.ASK
    assert effect(policy, "mvn test -Dtest=BazTest -Dgroups=fast -X") is Effect.ASK


def test_one_value_or_a_refused_value_keeps_the_option_literal() -> None:
    once = [decided(1, "mvn test -Dtest=FooTest"), decided(2, "mvn test -Dtest=FooTest")]
    assert effect(learned(once), "mvn test -Dtest=BarTest") is Effect.ASK
    refused = [decided(1, "mvn test -Dtest=FooTest"), decided(2, "mvn test -Dtest=BarTest"),
               decided(3, "mvn test -Dtest=BarTest"),
               decided(4, "mvn test -Dtest=DropTables", Outcome.REJECTED)]
    policy = learned(refused)
    assert effect(policy, "mvn test -Dtest=DropTables") is Effect.ASK
    assert effect(policy, "mvn test -Dtest=BarTest") is Effect.ALLOW


# --- commands judged one by one, paths of their kind --------------------------------------

def test_a_leading_cd_is_judged_on_its_own() -> None:
    history = [decided(1, "python3 runtests.py queries"),
               decided(2, "python3 runtests.py pagination")]
    policy = learned(history)
    assert effect(policy, "cd tests && python3 runtests.py queries.tests") is Effect.ALLOW
    assert effect(policy, "cd /etc && python3 runtests.py x") is Effect.ASK  # outside
    assert effect(policy, "cd tests && python3 -m pylint x") is Effect.ASK


def test_a_path_glob_admits_a_file_of_its_kind_at_any_depth_and_its_own_path() -> None:
    history = [decided(1, "sed -i 's/a/b/' src/x.py"), decided(2, "sed -i 's/c/d/' src/y.py"),
               decided(3, "chmod +x /srv/ws/run.py"), decided(4, "chmod +x /srv/ws/run.py")]
    policy = learned(history)
    assert effect(policy, "sed -i 's/e/f/' top.py") is Effect.ALLOW
    assert effect(policy, "sed -i 's/e/f/' a/b/c.py") is Effect.ALLOW
    assert effect(policy, "sed -i 's/e/f/' /etc/x.py") is Effect.ASK
    assert effect(policy, "sed -i 's/e/f/' ../x.py") is Effect.ASK
    assert effect(policy, "chmod +x /srv/ws/run.py") is Effect.ALLOW
    assert effect(policy, "chmod +x /srv/ws/tools/other.py") is Effect.ALLOW
    assert effect(policy, "chmod +x /srv/ws/run.sh") is Effect.ASK


def test_a_program_on_standard_input_teaches_nothing() -> None:
    history = [decided(i, f"python - <<'PY'\nprint({i})\nPY") for i in range(4)]
    history += [decided(9, "bash <<'EOF'\nls\nEOF"), decided(10, "bash <<'EOF'\npwd\nEOF")]
    assert suggest(TEXT, history, reviewer=RiskReviewer()).suggestions == ()
    policy = learned(history)
    assert effect(policy, "python - <<'PY'\nimport shutil; shutil.rmtree('src')\nPY") \
        is Effect.ASK


def test_a_model_refusing_the_glob_falls_back_to_the_exact_commands() -> None:
    # git checkout PATH discards changes: its model admits it only when a rule names it
    history = [decided(1, "git checkout a/b.py"), decided(2, "git checkout a/b.py")]
    [only] = suggest(TEXT, history, reviewer=RiskReviewer()).suggestions
    assert only.level == "exact" and only.commands == ("git checkout a/b.py",)
    assert effect(learned(history), "git checkout c/d.py") is Effect.ASK


COMMANDS = st.sampled_from([
    "python reproduce.py", "python drop.py", "python sub/run.py", "python -c 'print(1)'",
    "python3 x.py --fast", "python3 x.py --slow", "javac A.java", "javac B.java",
    "java -cp . A", "sed -i 's/a/b/' src/x.py", "sed -i 's/a/b/' setup.py",
    "cat <<'EOF' > t.py\nx\nEOF", "cat <<'EOF' > u.sh\nx\nEOF", "mvn test", "mvn deploy",
    "git add -A", "git push origin main", "make", "make install", "npm test", "npm publish",
    "cd /srv/ws && python run.py", "python run.py && curl http://x", "rm -rf build",
    "bash build.sh", "bash /tmp/evil.sh", "chmod +x run.sh && ./run.sh",
    "python3 -m pip install x", "python3 -m unittest t", "python -m unittest u",
    "python3.11 x.py", "/usr/bin/python3 x.py", "python -u reproduce.py",
    "./mvnw test", "./mvnw test -Dtest=A", "mvn test -Dtest=B", "./gradlew test",
    "gradle test --tests X", "cd tests && python3 runtests.py a", "python3 runtests.py b",
    "python - <<'PY'\nprint(1)\nPY", "git checkout a/b.py", "sed -i 's/a/b/' top.py",
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
