"""How an allow rule admits a shell command: the grammar, naming, writes, sensitive paths.

The per-command tables (test_command_models.py) say *what* each command may do under
``CMD *``; these tests pin the mechanisms: getopt spellings, options named by a rule,
``writes``, exact patterns, wrappers, global options, sensitive paths (shell and write
tools), ``always_ask`` in full mode, the chain rule, and ``signoff check --explain``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from signoff import Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.errors import PolicyError
from signoff.globs.pathglob import is_sensitive
from signoff.policy.sensitive import DEFAULT_SENSITIVE
from signoff.shell.commands import Kind, invocation

HEAD = """
[policy]
version = "admission"
{policy}
[workspace]
root = "{root}"
{workspace}
[tools.execute]
shell = "command"
[tools.write_file]
paths = ["path"]
writes = true
[tools.read_file]
paths = ["path"]
"""


def rule(rule_id: str, *patterns: str, writes: tuple[str, ...] = ()) -> str:
    words = ", ".join(json.dumps(p) for p in patterns)
    extra = f"\nwrites = {json.dumps(list(writes))}" if writes else ""
    return (f'\n[[rules]]\nid = "{rule_id}"\neffect = "allow"\ntool = "execute"\n'
            f"command = [{words}]{extra}\n")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "README.md").write_text("x\n")
    return ws.resolve()


def make(root: Path, *rules: str, policy: str = "", workspace: str = "") -> Policy:
    return Policy.from_toml(HEAD.format(root=root, policy=policy, workspace=workspace)
                            + "".join(rules))


def run(policy: Policy, command: str, mode: ReviewMode = ReviewMode.MANUAL,
        tool: str = "execute") -> Verdict:
    args = ({"command": command} if tool == "execute" else {"path": command} if tool == "read_file"
            else {"path": command, "content": "x"})
    return policy.evaluate(ToolCall(id="c", name=tool, args=args),
                           RunContext(thread_id="t", review_mode=mode))


def parts(command: str) -> list[tuple[str, str]]:
    argv = tuple(shlex.split(command))
    return [(p.kind.value, p.option or p.word)
            for p in invocation(argv, (True,) * len(argv)).parts if p.kind is not Kind.INERT]


@pytest.mark.parametrize(("command", "expected"), [
    ("sort -o out in", [("write", "-o"), ("read", "in")]),
    ("sort -oout in", [("write", "-o"), ("read", "in")]),
    ("sort --output=out in", [("write", "--output"), ("read", "in")]),
    ("sort --output out in", [("write", "--output"), ("read", "in")]),
    ("sort --outp=out in", [("write", "--output"), ("read", "in")]),  # a unique prefix
    ("sort -uo out in", [("write", "-o"), ("read", "in")]),  # a cluster
    ("sort -- -o in", [("read", "-o"), ("read", "in")]),  # after --: operands
    ("sort --frobnicate in", [("unknown", "--frobnicate"), ("read", "in")]),
    ("git log --out=x", [("unknown", "--out=x")]),  # ambiguous: --output, --output-indicator…
    ("tar xvf a.tar", [("read", "-f a.tar"), ("write", "-x")]),  # the bundled old form
    ("sed -n 1,5p README.md", [("read", "README.md")]),
    ("sed -n '/def x/,/def/p' f", [("read", "f")]),
    ("sed 1~2e\\ id f", [("exec", "1~2e id"), ("read", "f")]),
    ("sed --expr='$ w out' f", [("write", "--expression")] and [("write", "--expr=$ w out"),
                                                                 ("read", "f")]),
])
def test_the_grammar_reads_every_spelling(command: str, expected: list[tuple[str, str]]) -> None:
    assert parts(command) == expected


def test_a_rule_admits_an_option_it_names(root: Path) -> None:
    wide = make(root, rule("sed", "sed *"))
    named = make(root, rule("sed", "sed -i *"))
    command = "sed -i 's/a/b/' README.md"
    assert run(wide, command).effect.value == "ask"
    assert run(named, command).effect.value == "allow"
    # naming -i admits in-place edits, not an e command
    assert run(named, "sed -i '1e id' README.md").effect.value == "ask"


def test_a_redirection_needs_the_rules_writes(root: Path) -> None:
    plain = make(root, rule("echo", "echo *"))
    notes = make(root, rule("echo", "echo *", writes=("notes/**", "*.log")))
    assert run(plain, "echo hi > notes/a.md").effect.value == "ask"
    assert run(notes, "echo hi > notes/a.md").effect.value == "allow"
    assert run(notes, "echo hi >> build.log").effect.value == "allow"
    assert run(notes, "echo hi > src/x.py").effect.value == "ask"
    assert run(notes, "echo hi 2>/dev/null").effect.value == "allow"
    with pytest.raises(PolicyError, match="writes"):
        make(root, '\n[[rules]]\nid = "w"\neffect = "ask"\ntool = "execute"\n'
                   'command = "echo *"\nwrites = ["x"]\n')


def test_an_exact_pattern_admits_exactly_that_command(root: Path) -> None:
    policy = make(root, rule("exact", "env", "python --version", "bash", "python -c 1"),
                  policy='always_ask = ["sensitive_write", "secret_read"]')
    assert run(policy, "env").effect.value == "allow"
    # by default env's dump of the environment (its credentials) is a human's to allow
    assert run(make(root, rule("exact", "env")), "env").effect.value == "ask"
    assert run(policy, "python --version").effect.value == "allow"
    assert run(policy, "python -c 1").effect.value == "allow"
    # bash alone reads its program from its input, which no text shows: opaque, which no
    # rule admits, not even one that names it exactly
    verdict = run(policy, "bash")
    assert (verdict.effect.value, verdict.code, verdict.mandatory) == ("ask", "opaque", True)
    assert run(policy, "env ls").effect.value == "ask"
    assert run(policy, "python --version; bash -c id").effect.value == "ask"


def test_a_wrapper_admits_only_a_command_the_policy_admits(root: Path) -> None:
    policy = make(root, rule("wrap", "timeout *", "xargs *", "pytest *", "grep *"))
    assert run(policy, "timeout 60 pytest -x").effect.value == "allow"
    assert run(policy, "timeout 60 bash -c id").effect.value == "ask"
    assert run(policy, "timeout -s KILL 5 sed -i x f").effect.value == "ask"
    # xargs appends words from its input: a file grep reads is then unknown (outside)
    assert run(policy, "xargs grep -l foo").effect.value == "ask"


def test_global_options_that_only_format_do_not_hide_a_subcommand(root: Path) -> None:
    policy = make(root, rule("git", "git show *", "git log *"))
    assert run(policy, "git --no-pager show HEAD").effect.value == "allow"
    assert run(policy, "git -P log -1").effect.value == "allow"
    assert run(policy, "git -c core.pager=sh log").effect.value == "ask"
    deny = make(root, '\n[[rules]]\nid = "no-push"\neffect = "deny"\ntool = "execute"\n'
                      'command = "git push *"\n')
    assert run(deny, "git -c x=y push origin main").effect.value == "deny"


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "conftest.py",
                                  "src/conftest.py", "Makefile", "package.json", ".bashrc",
                                  "sub/.envrc", ".github/workflows/ci.yml"])
def test_writing_a_sensitive_path_is_a_mandatory_ask(root: Path, path: str) -> None:
    assert is_sensitive(path, DEFAULT_SENSITIVE)
    policy = make(root, rule("all", "echo *", "tee *", "cp *", writes=("**",)))
    for command in (f"echo x > {path}", f"echo x | tee {path}", f"cp README.md {path}"):
        for mode in ReviewMode:
            verdict = run(policy, command, mode)
            assert verdict.effect.value == "ask" and verdict.mandatory, (command, mode)
            assert verdict.code == "sensitive_write"
    verdict = run(policy, path, ReviewMode.FULL, tool="write_file")
    assert verdict.effect.value == "ask" and verdict.mandatory


def test_sensitive_paths_extend_and_replace(root: Path) -> None:
    more = make(root, rule("e", "echo *", writes=("**",)),
                workspace='sensitive = ["deploy/*.sh"]')
    assert run(more, "echo x > deploy/go.sh").code == "sensitive_write"
    assert run(more, "echo x > conftest.py").code == "sensitive_write"
    only = make(root, rule("e", "echo *", writes=("**",)),
                workspace='sensitive = ["deploy/*.sh"]\nsensitive_defaults = false')
    assert run(only, "echo x > conftest.py").effect.value == "allow"
    assert run(only, "echo x > deploy/go.sh").code == "sensitive_write"


def test_always_ask_holds_in_full_mode_and_is_validated(root: Path) -> None:
    policy = make(root)
    for command in ("sudo ls", "apt-get install -y curl", "git config --global a.b c",
                    "echo x > /tmp/out"):
        verdict = run(policy, command, ReviewMode.FULL)
        assert verdict.effect.value == "ask" and verdict.mandatory, command
    relaxed = make(root, policy='always_ask = ["sensitive_write"]')
    assert run(relaxed, "sudo ls", ReviewMode.FULL).effect.value == "allow"
    with pytest.raises(PolicyError, match="always_ask"):
        make(root, policy='always_ask = ["everything"]')


def test_a_tool_that_reads_what_the_line_just_wrote_executes_it(root: Path) -> None:
    policy = make(root, rule("all", "echo *", "pytest *", "git *", writes=("**",)),
                  workspace="sensitive_defaults = false")
    verdict = run(policy, "echo 'import os' > conftest.py && pytest", ReviewMode.AUTO)
    assert verdict.effect.value == "ask"
    assert "executes_written" in {r.code for r in verdict.reasons}
    assert run(policy, "echo x > notes.txt && pytest").effect.value == "allow"


def test_signoff_check_explain_shows_each_part(root: Path, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(HEAD.format(root=root, policy="", workspace="") + rule("s", "sort *"))
    out = subprocess.run(
        [sys.executable, "-m", "signoff.cli", "check", "--policy", str(policy), "--tool",
         "execute", "--args", json.dumps({"command": "sort -u in | sort -o out"}),
         "--explain", "--json"], capture_output=True, text=True, check=True)
    body = json.loads(out.stdout)
    first, second = body["explain"]
    assert first["rule"] == "s (allow)" and first["model"] == "sort"
    assert second["rule"] is None
    assert {"kind": "write", "option": "-o"}.items() <= second["parts"][0].items()
    assert "does not admit '-o out'" in second["refused"][0]
    text = subprocess.run(
        [sys.executable, "-m", "signoff.cli", "check", "--policy", str(policy), "--tool",
         "execute", "--args", json.dumps({"command": "sort -o out in"}), "--explain"],
        capture_output=True, text=True, check=True).stdout
    assert "parsed:" in text and "write    -o out" in text


def test_an_exact_pattern_waives_only_its_own_commands_findings(root: Path) -> None:
    """``python -c 1`` named exactly waives its inline-code finding, not the same finding
    of a second ``python -c 2`` that only a wildcard matched."""
    policy = make(root, rule("py", "python -c 1", "python *"))
    assert run(policy, "python -c 1").effect.value == "allow"
    assert run(policy, "python -c 1; python -c 2").effect.value == "ask"
    assert run(policy, "python -c 2; python -c 1").effect.value == "ask"


def test_a_command_with_no_model_is_judged_as_before_and_no_weaker(root: Path) -> None:
    """``javac`` has no model: a wildcard admits any options, every word is a path for the
    workspace guard (as before models), and what models added on top still applies."""
    policy = make(root, rule("javac", "javac *"))
    assert invocation(("javac", "-d", "out"), (True,) * 3).modelled is False
    assert run(policy, "javac -d out -cp lib Foo.java").effect.value == "allow"
    assert run(policy, "javac /etc/Foo.java").effect.value == "ask"  # outside
    assert run(policy, "javac Foo.java > log.txt").effect.value == "ask"  # a redirection
    verdict = run(policy, "javac -d .git/hooks Foo.java")  # names a sensitive path
    assert verdict.effect.value == "ask" and verdict.code == "sensitive_write"
    assert run(policy, "javac $(id) Foo.java").effect.value == "ask"  # never-allow


def test_a_grant_admits_as_an_allow_rule_would(root: Path) -> None:
    """A thread grant for ``sed *`` saves a click for sed reads, not for sed -i or sed e;
    one for a modelled wrapper needs its command admitted too."""
    from signoff.model import Grant, GrantScope
    from signoff.policy.memory import Memory

    memory = Memory()
    for gid, pattern in (("g-sed", "sed *"), ("g-timeout", "timeout *")):
        memory.add_grant(Grant(id=gid, scope=GrantScope.THREAD, tool="execute",
                               args={"command": pattern}, thread_id="t"))
    # execute is gated by default: its asks go to the thread's grants first
    policy = Policy.from_toml(HEAD.format(root=root, policy="", workspace=""), memory=memory)
    assert run(policy, "sed -n 1,5p README.md").source == "grant:g-sed"
    assert run(policy, "sed -i s/a/b/ README.md").effect.value == "ask"
    assert run(policy, "sed -n '1e id' README.md").effect.value == "ask"
    # one grant must cover every command: timeout's covers timeout, not the sed it runs
    assert run(policy, "timeout 5 sed -n 1p README.md").effect.value == "ask"


def test_the_starter_asks_security_for_env_files_whatever_reads_them(root: Path) -> None:
    from signoff.policy.starter import starter_toml

    policy = Policy.from_toml(starter_toml(str(root)))
    for command in ("cat .env", "grep -r KEY src/.env", "head -3 ./.env.local",
                    "awk 1 .env"):
        verdict = run(policy, command, ReviewMode.FULL)
        assert verdict.effect.value == "ask" and verdict.mandatory, command
        assert verdict.roles == ("security",) and verdict.approvals == 2
    assert run(policy, "cat README.md").effect.value == "allow"
    assert run(policy, "cat .envrc").effect.value == "allow"  # direnv's file is not a secret


def test_the_first_rule_memo_is_per_tool_and_never_changes_a_verdict(root: Path) -> None:
    """Step 6 remembers a command's first admitting rule per (tool, argv); another tool
    with other rules, or a second evaluation, must come out the same as a fresh policy."""
    text = HEAD.format(root=root, policy="", workspace="") + rule("ls", "ls *") + """
[tools.other]
shell = "command"
[[rules]]
id = "other-sort"
effect = "allow"
tool = "other"
command = "sort -o *"
"""
    warm = Policy.from_toml(text)
    for command in ("ls -la", "sort -o out in", "ls -la && sort -o out in", "ls -la"):
        for tool in ("execute", "other"):
            call = ToolCall(id="c", name=tool, args={"command": command})
            first = warm.evaluate(call, RunContext(thread_id="t"))
            again = warm.evaluate(call, RunContext(thread_id="t"))
            fresh = Policy.from_toml(text).evaluate(call, RunContext(thread_id="t"))
            assert first.effect == again.effect == fresh.effect, (tool, command)
            assert [r.code for r in first.reasons] == [r.code for r in fresh.reasons]


@pytest.mark.parametrize(("path", "patterns", "hit"), [
    ("/etc/cron.d/x", ("/etc/**",), "/etc/**"),
    ("etc/cron.d/x", ("/etc/**",), None),  # anchored patterns need an absolute path
    ("lib/x.py", DEFAULT_SENSITIVE, None),
    ("/root/.bashrc", DEFAULT_SENSITIVE, ".bashrc"),  # the first pattern that matches
    ("/root/notes.txt", DEFAULT_SENSITIVE, "/root/**"),
    ("a/b/conftest.py", ("conftest.py",), "conftest.py"),
    ("./.git/hooks", (".git/hooks/**",), ".git/hooks/**"),
    ("src/git/config", (".git/config",), None),
])
def test_sensitive_patterns(path: str, patterns: tuple[str, ...], hit: str | None) -> None:
    assert is_sensitive(path, patterns) == hit


def test_reading_credentials_is_a_mandatory_ask_with_or_without_a_workspace(root: Path) -> None:
    bare = Policy.from_toml('[policy]\nversion = "x"\n[tools.execute]\nshell = "command"\n'
                            '[tools.read_file]\npaths = ["path"]\n' + rule("r", "cat *",
                                                                            "tail *"))
    for policy in (bare, make(root, rule("r", "cat *", "tail *"))):
        for command in ("cat /etc/shadow", "tail -c+0 ~/.ssh/id_rsa", "cat .aws/credentials"):
            verdict = run(policy, command, ReviewMode.FULL)
            assert verdict.effect.value == "ask" and verdict.mandatory, command
        verdict = run(policy, "/etc/shadow", ReviewMode.FULL, tool="read_file")
        assert verdict.effect.value == "ask" and verdict.mandatory
        assert run(policy, "cat README.md").effect.value == "allow"


@pytest.mark.parametrize("command", ["echo x >& .git/config", "echo x >&out", "echo x 1>&out",
                                     "echo x >& conftest.py"])
def test_a_descriptor_redirection_to_a_file_is_a_write(root: Path, command: str) -> None:
    """``>&WORD`` with a word that is not a descriptor number writes that file."""
    policy = make(root, rule("echo", "echo *"))
    assert run(policy, command).effect.value == "ask"
    assert run(policy, "echo x >&2").effect.value == "allow"
    assert run(policy, "echo x 2>&1").effect.value == "allow"
    assert run(policy, "echo x >&-").effect.value == "allow"
