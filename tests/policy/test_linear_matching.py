"""Patterns are matched by RE2, in time linear in the text: what loads, what is refused,
and what each pattern still means.

A ``re:`` pattern that needs backtracking (a backreference, a lookaround) is refused when
the policy loads, naming the rule and the field; the glob languages keep their meaning;
``\\d``, ``\\w`` and ``\\s`` keep Python's Unicode meaning. Hostile texts get the right
answers (their speed is bench/linear_bench.py's, and tests/server/test_linear_judging.py
shows a real server answering while it judges them).
"""

from __future__ import annotations

from typing import Any

import pytest

from signoff import Policy, RunContext, ToolCall, Verdict
from signoff.errors import PolicyError
from signoff.globs.linear import LinearError, python_dialect
from signoff.model import Grant, GrantScope
from signoff.policy.config import parse_policy
from signoff.policy.memory import Memory
from signoff.policy.patterns import compile_value_pattern, tool_matches
from signoff.policy.starter import PRESETS, starter_toml


def rule(pattern: str, *, effect: str = "deny", field: str = "args") -> str:
    body = (f"args = {{ url = '{pattern}' }}" if field == "args"
            else f"command = 'make *'\nwrites = ['{pattern}']")
    return ("[tools.execute]\nshell = 'command'\n"
            f"[[rules]]\nid = 'r1'\neffect = '{effect}'\ntool = 'execute'\n{body}\n")


@pytest.mark.parametrize("pattern", [
    r"re:(a)\1",                      # a backreference
    r"re:https?://(?!docs\.example\.com/).*",  # a negative lookahead
    r"re:.*(?=\.env).*",              # a lookahead
    r"re:(?<=a)b",                    # a lookbehind
    r"re:(?>a+)b",                    # an atomic group
    r"re:a++b",                       # a possessive quantifier
])
def test_a_pattern_that_needs_backtracking_is_refused_at_load(pattern: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(rule(pattern), source="team/signoff.toml")
    error = info.value
    assert error.code == "pattern_not_linear"
    assert (error.file, error.rule, error.field) == ("team/signoff.toml", "rules[0] (id 'r1')",
                                                     "args.url")
    assert "linear time" in str(error) and repr(pattern) in str(error)


def test_a_written_path_pattern_is_checked_too() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(rule(r"re:(.)\1", effect="allow", field="writes"))
    assert info.value.code == "pattern_not_linear" and info.value.field == "writes"


def test_a_bad_regex_stays_policy_invalid() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(rule("re:("))
    assert info.value.code == "policy_invalid" and "regular expression" in str(info.value)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_starter_policies_load(preset: str, tmp_path: Any) -> None:
    policy = Policy.from_toml(starter_toml(str(tmp_path), preset))
    assert policy.config.rules


def test_the_starter_still_asks_for_env_files_in_commands(tmp_path: Any) -> None:
    """The starter's ``.env`` rule was a lookahead; its linear form means the same."""
    policy = Policy.from_toml(starter_toml(str(tmp_path)))
    for command, asked in (("cat .env", True), ("cat .env.local", True),
                           ("grep KEY src/.env | head", True), ("cat .envrc", False),
                           ("cat .env_example", False), ("cat .environment", False),
                           ("cat x.env", True)):
        verdict = judge(policy, "execute", {"command": command})
        hit = "env-files-shell" in {r.rule for r in verdict.reasons}
        assert hit is asked, command


GLOBS = [
    ("*.py", "a.py", True), ("*.py", "src/a.py", False), ("**/*.py", "src/a/b.py", True),
    ("**/.env", ".env", True), ("**/.env", "/abs/.env", True), ("src/**", "src", True),
    ("src/**", "src/a/b", True), ("?", "a", True), ("?", "/", False), ("[!a]x", "bx", True),
    ("[!a]x", "ax", False), ("[^a]x", "bx", True), ("[a-c]", "b", True), ("a[", "a[", True),
    ("a.b", "axb", False), ("(x)", "(x)", True), ("a+b", "a+b", True), ("a+b", "aab", False),
    ("*", "line\nbreak", True), ("$HOME", "$HOME", True), ("a{1,2}", "a{1,2}", True),
]


@pytest.mark.parametrize(("glob", "text", "expected"), GLOBS)
def test_globs_keep_their_meaning(glob: str, text: str, expected: bool) -> None:
    assert compile_value_pattern(glob).matches(text) is expected


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    (r"re:\d+", "１２３", True),      # fullwidth digits are digits, as in Python
    (r"re:\D+", "abc", True),
    (r"re:\w+", "café_x", True),
    (r"re:\W", "é", False),
    (r"re:\s+", "\u00a0\u2003", True),
    (r"re:[\d]+", "٣٤", True),
    (r"re:[\w.]+", "naïve.txt", True),
    (r"re:a\Z", "a", True),
    (r"re:\\d", "\\d", True),         # an escaped backslash, then a letter
    (r"re:[\]a]+", "]a", True),
    (r"re:(?i)DEPLOY", "deploy", True),
    (r"re:a.b", "a\nb", True),        # dot matches newline, as with re.DOTALL
])
def test_python_regexes_keep_their_meaning(pattern: str, text: str, expected: bool) -> None:
    assert compile_value_pattern(pattern).matches(text) is expected


def test_classes_ascii_would_widen_are_refused() -> None:
    for pattern in (r"[\W]", r"[^\S]"):
        with pytest.raises(LinearError):
            python_dialect(pattern)


@pytest.mark.parametrize(("glob", "tool", "expected"), [
    ("mcp__github__*", "mcp__github__create_pr", True), ("deploy", "deploy", True),
    ("deploy", "*", False), ("*", "anything", True), ("send_?", "send_x", True),
    ("[ab]*", "bx", True), ("[!ab]*", "bx", False), ("a[", "a[", True),
])
def test_rule_tool_globs(glob: str, tool: str, expected: bool) -> None:
    assert tool_matches(glob, tool) is expected


def judge(policy: Policy, tool: str, args: dict[str, Any]) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args), RunContext(thread_id="t"))


HOSTILE = """
[policy]
version = "hostile"
gated = ["execute", "read_file", "fetch"]
[tools.execute]
shell = "command"
[tools.read_file]
[tools.fetch]

[[rules]]
id = "build-logs"
effect = "allow"
tool = "read_file"
args = { path = "**/build/**/*.log" }

[[rules]]
id = "nested"
effect = "deny"
tool = "fetch"
args = { url = "re:(a+)+b" }

[[rules]]
id = "echo-words"
effect = "allow"
tool = "execute"
command = "echo *a*a*a*a*a*b"
"""


def test_hostile_texts_get_the_answers_their_rules_say() -> None:
    policy = Policy.from_toml(HOSTILE)
    build = "build/" * 170_000
    assert judge(policy, "read_file", {"path": build + "x.log"}).effect.value == "allow"
    assert judge(policy, "read_file", {"path": build + "x.lo"}).effect.value == "ask"
    assert judge(policy, "fetch", {"url": "a" * 1_000_000 + "b"}).effect.value == "deny"
    assert judge(policy, "fetch", {"url": "a" * 1_000_000}).effect.value == "ask"
    word = "a" * 30_000
    assert judge(policy, "execute", {"command": f"echo {word}b"}).effect.value == "allow"
    assert judge(policy, "execute", {"command": f"echo {word}"}).effect.value == "ask"


def test_a_grant_pattern_re2_cannot_compile_matches_nothing() -> None:
    memory = Memory()
    memory.add_grant(Grant(id="g", scope=GrantScope.THREAD, tool="fetch", thread_id="t",
                           args={"url": r"re:(a)\1"}))
    policy = Policy.from_toml(HOSTILE, memory=memory)
    verdict = judge(policy, "fetch", {"url": "aa"})
    assert verdict.effect.value == "ask" and not verdict.source.startswith("grant:")


def test_glob_shortcuts_give_re2s_answer() -> None:
    """The string shortcuts for common glob shapes, and an argument's list of patterns,
    answer exactly as RE2 on the glob's regex does (a fixed sample of shapes and texts)."""
    import random

    from signoff.globs.linear import Linear
    from signoff.globs.pathglob import glob_to_regex
    from signoff.policy.config import _combine
    from signoff.policy.spec import ArgRule

    rng = random.Random(42)
    names = ["a", ".env", "x.log", "src", "a/b", "id_", ".ssh"]
    shapes = [f"{head}{name}{tail}" for head in ("", "**/", "*", "**/*") for name in names
              for tail in ("", "/**", "*")] + [f"**/{name}/**" for name in names]
    words = ["a", "b", "/", ".", "src", "x.log", ".env", "py", "\n", "id_", ".ssh", "é"]
    texts = ["".join(rng.choice(words) for _ in range(rng.randint(0, 6))) for _ in range(400)]
    compiled = [compile_value_pattern(s) for s in shapes]
    assert sum(p.shortcut is not None for p in compiled) > len(shapes) // 2
    for pattern in compiled:
        reference = Linear(glob_to_regex(pattern.source))
        for text in texts:
            assert pattern.matches(text) is reference.fullmatch(text), (pattern.source, text)
    for _ in range(300):
        chosen = tuple(rng.sample(compiled, 3))
        rule = ArgRule(name="x", patterns=chosen, combined=_combine(chosen))
        for text in rng.sample(texts, 20):
            expected = any(Linear(glob_to_regex(p.source)).fullmatch(text) for p in chosen)
            assert rule.matches(text) is expected, ([p.source for p in chosen], text)
