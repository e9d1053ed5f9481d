"""Reading a credential through a shell glob or a variable is a ``secret_read``, like naming it.

``cat .env`` was a mandatory ask while ``cat .en?``, ``cat .e*`` and ``echo
$AWS_SECRET_ACCESS_KEY`` were allowed by the starter's read-only rule. A glob
counts by what it expands to in the workspace, and one that cannot be expanded
(no workspace, a prefix outside it) by the secrets it can name
(``signoff.shell.globoverlap``); a variable by its name.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit import judge_shell, reader_policy
from signoff import Effect, Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy.sensitive import DEFAULT_SECRETS
from signoff.policy.starter import starter_toml
from signoff.shell.globoverlap import can_name


def _shell_policy(commands: list[str], *, writes: bool = False) -> Policy:
    """No workspace: one shell tool, one allow rule (``writes``: any redirection too)."""
    listed = ", ".join(f'"{c}"' for c in commands)
    return Policy.from_toml(
        f'[policy]\nversion = "bare"\n[tools.execute]\nshell = "command"\n'
        f'[[rules]]\nid = "reads"\neffect = "allow"\ntool = "execute"\ncommand = [{listed}]\n'
        + ('writes = ["**"]\n' if writes else ""))


BARE = ["cat *", "head *", "grep *", "sort *", "awk *", "echo *", "printf *", "ls *"]


def _judge(policy: Policy, command: str, mode: ReviewMode = ReviewMode.MANUAL) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name="execute", args={"command": command}),
                           RunContext(thread_id="t", review_mode=mode))


def _secret(verdict: Verdict) -> list[str]:
    return [r.text for r in verdict.reasons if r.code == "secret_read"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "notes.txt").write_text("n\n")
    return root.resolve()


@pytest.fixture
def starter(workspace: Path) -> Policy:
    return Policy.from_toml(starter_toml(str(workspace)))


@pytest.mark.parametrize("command", [
    "cat .en?", "cat .e*", "cat .[e]nv", "sort .?nv", "awk 1 .e*", "grep '' .en*",
    "head -n 5 src/../.e*", "cd src && cat ../.en?",
])
def test_a_glob_that_expands_to_a_secret_is_a_mandatory_ask(
        workspace: Path, starter: Policy, command: str) -> None:
    (workspace / ".env").write_text("TOKEN=1\n")
    for mode in (ReviewMode.MANUAL, ReviewMode.FULL):
        verdict = _judge(starter, command, mode)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, mode, verdict)
        assert any(".env" in text for text in _secret(verdict)), verdict.reasons


def test_a_glob_that_matches_no_secret_is_judged_as_before(
        workspace: Path, starter: Policy) -> None:
    for command in ("cat .e*", "cat *", "grep -n x src/*.py", "cat notes.*"):
        verdict = _judge(starter, command)
        assert verdict.effect is Effect.ALLOW and not _secret(verdict), (command, verdict)
    (workspace / "server.pem").write_text("-----BEGIN")
    verdict = _judge(starter, "cat *")  # now * expands to a key
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert any("server.pem" in text for text in _secret(verdict))


def test_a_link_in_the_workspace_is_judged_by_what_it_reads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("key")
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(home / ".ssh" / "id_ed25519", root / "notes")
    text = starter_toml(str(root.resolve())).replace('outside = "approve"', 'outside = "allow"')
    policy = Policy.from_toml(text)
    for command in ("cat notes", "cat note?"):
        verdict = _judge(policy, command)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, verdict)
        assert _secret(verdict), verdict.reasons


@pytest.mark.parametrize("command", [
    "cat ~/.ss*/id_*", "head /home/*/.aws/cred*", "cat /etc/sha*", "cat /et?/shadow",
    "cat *.pe?", "cat /proc/*/env*", "cat ~/.[!.]*", "grep -h . ~/.git-cred*",
])
def test_without_a_workspace_a_glob_counts_by_the_secrets_it_can_name(command: str) -> None:
    verdict = _judge(_shell_policy(BARE), command)
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert "a glob that can name a file that holds credentials" in _secret(verdict)[0]


@pytest.mark.parametrize("command", [
    "cat *", "grep x *.py", "cat src/*.txt", "cat /var/log/*", "ls *", "cat notes.*",
    "head -n1 docs/[a-z]*.md", "cat README*",
])
def test_a_glob_that_spells_no_secret_stays_allowed(command: str) -> None:
    verdict = _judge(_shell_policy(BARE), command)
    assert verdict.effect is Effect.ALLOW and not _secret(verdict), verdict


def test_a_glob_outside_an_open_workspace_counts_by_the_secrets_it_can_name(
        workspace: Path) -> None:
    text = starter_toml(str(workspace)).replace('outside = "approve"', 'outside = "allow"')
    policy = Policy.from_toml(text)
    assert _judge(policy, "cat /var/log/sys*").effect is Effect.ALLOW
    verdict = _judge(policy, "cat ~/.ss*/id_*")
    assert verdict.effect is Effect.ASK and verdict.mandatory and _secret(verdict)


def test_many_unexpanded_globs_are_asked_about_not_skipped() -> None:
    harmless = " ".join(f"/var/log/a{n}*" for n in range(20))
    verdict = _judge(_shell_policy(BARE), f"cat {harmless} ~/.ss*/id_*")
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert "too many to judge" in _secret(verdict)[0]


@pytest.mark.parametrize("command", [
    "echo $AWS_SECRET_ACCESS_KEY", 'printf %s "${GITHUB_TOKEN}"', "echo key=$OPENAI_API_KEY",
    "echo ${DATABASE_URL:-none}", "cat <<EOF\n$DB_PASSWORD\nEOF", "echo $STRIPE_KEY",
    "echo ${SLACK_AUTH[0]}",
])
def test_expanding_a_credential_variable_is_a_mandatory_ask(
        starter: Policy, command: str) -> None:
    for mode in (ReviewMode.MANUAL, ReviewMode.FULL):
        verdict = _judge(starter, command, mode)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, mode, verdict)
        assert any("a variable whose name says it holds a credential" in text
                   for text in _secret(verdict))


@pytest.mark.parametrize("command", [
    "echo $HOME", "echo $PATH", "echo $GIT_AUTHOR_NAME", "echo '$AWS_SECRET_ACCESS_KEY'",
    "cat <<'EOF'\n$DB_PASSWORD\nEOF", "echo $KEYBOARD_LAYOUT", "ls $VIRTUAL_ENV",
])
def test_other_variables_and_quoted_text_are_not_credentials(
        starter: Policy, command: str) -> None:
    assert not _secret(_judge(starter, command)), command


def test_a_policy_that_does_not_always_ask_about_secrets_only_raises_the_risk(
        workspace: Path) -> None:
    text = starter_toml(str(workspace)).replace(
        "[policy]\n", '[policy]\nalways_ask = ["sensitive_write"]\n', 1)
    policy = Policy.from_toml(text)
    verdict = _judge(policy, "echo $AWS_SECRET_ACCESS_KEY")
    assert verdict.effect is Effect.ALLOW and verdict.risk.rank >= 2 and _secret(verdict)


@pytest.mark.parametrize(("word", "named"), [
    (".en?", ".env"), (".e*", ".env"), (".[e]nv", ".env"), ("x/../.e*", ".env"),
    ("~/.ss*/id_*", ".ssh/**"), ("/et?/shadow", "/etc/shadow"), ("*.ke?", "*.key"),
    ("a*.pem", "*.pem"), ("/proc/*/env*", "/proc/*/environ"), ("id_*", "id_rsa*"),
    ("\\.en?", ".env"),
    ("*", None), ("?env", None), ("src/*.py", None), ("*.txt", None), ("[!.]env", None),
    ("README*", None), ("docs/[a-z]*.md", None), ("notes/*", None), ("*.k", None),
    ("env", None), (".envrc", None),
])
def test_can_name(word: str, named: str | None) -> None:
    assert can_name(word, DEFAULT_SECRETS) == named


def test_can_name_is_bounded_on_hostile_words() -> None:
    assert can_name("a*" * 3000, DEFAULT_SECRETS) is not None  # past judging: asks
    for word in ("a*" * 128, "*/" * 128, "e*s*" * 64, "[" * 256, "[[:alpha:]" * 25):
        can_name(word, DEFAULT_SECRETS)  # terminates, raises nothing


@pytest.mark.parametrize("command", [
    "git show HEAD:.env", "git show :.env", "git show :0:.env", "git cat-file -p HEAD:.env",
    "git show HEAD~3:config/.env.production", "git diff HEAD:.env HEAD~1:.env",
    "git grep TOKEN HEAD:.env", "git grep -e TOKEN HEAD:.ssh/id_rsa",
])
def test_a_secret_read_out_of_git_objects_is_a_secret_read(workspace: Path,
                                                            command: str) -> None:
    """``<rev>:<path>`` names a file's committed content; the regex rule of the starter is
    left out, so only ``secret_read`` stands between the agent and the file."""
    text = starter_toml(str(workspace))
    start = text.index('[[rules]]\nid = "env-files-shell"')
    end = text.find("[[rules]]", start + 1)
    policy = Policy.from_toml(text[:start] + (text[end:] if end > 0 else ""))
    verdict = _judge(policy, command, ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory, (command, verdict)
    assert _secret(verdict), verdict.reasons


@pytest.mark.parametrize("command", [
    "git show HEAD:README.md", "git show HEAD:", "git show :/fix", "git show HEAD",
    "git grep x HEAD", "git show v1.0:src/app.py",
])
def test_other_git_objects_are_read_as_before(starter: Policy, command: str) -> None:
    verdict = _judge(starter, command)
    assert verdict.effect is Effect.ALLOW and not _secret(verdict), (command, verdict)


@pytest.mark.parametrize(("tool", "args"), [
    ("grep", {"pattern": "TOKEN", "path": "/", "glob": ".e*"}),
    ("grep", {"pattern": "TOKEN", "glob": "**/.en?"}),
    ("glob", {"pattern": "**/.e*"}),
    ("grep", {"pattern": "BEGIN", "glob": "*.pe?"}),
])
def test_a_search_tool_whose_glob_names_a_secret_is_a_secret_read(
        workspace: Path, tool: str, args: dict[str, str]) -> None:
    """deepagents' grep returns matching lines of the files its glob names."""
    policy = Policy.from_toml(starter_toml(str(workspace), preset="deepagents"))
    verdict = policy.evaluate(ToolCall(id="c", name=tool, args=args),
                              RunContext(thread_id="t", review_mode=ReviewMode.FULL))
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert "a glob that can name a file that holds credentials" in _secret(verdict)[0]


@pytest.mark.parametrize("args", [
    {"pattern": "TOKEN", "glob": "*"}, {"pattern": "TOKEN", "glob": "**/*.py"},
    {"pattern": "TOKEN"},
])
def test_a_search_tool_whose_glob_spells_no_secret_is_allowed(
        workspace: Path, args: dict[str, str]) -> None:
    policy = Policy.from_toml(starter_toml(str(workspace), preset="deepagents"))
    verdict = policy.evaluate(ToolCall(id="c", name="grep", args=args),
                              RunContext(thread_id="t"))
    assert verdict.effect is Effect.ALLOW and not _secret(verdict), verdict


WRITER = ["sed *", "cp *", "tee *", "echo *"]


@pytest.mark.parametrize(("command", "named"), [
    ("sed -i s/a/b/ Makefil?", "Makefile"), ("tee .git/hoo*/pre-commit", ".git/hooks/**"),
    ("cp x .bash*", ".bashrc"), ("echo x > conftes?.py", "conftest.py"),
    ("sed -i s/a/b/ *.py", "conftest.py"),
])
def test_without_a_workspace_a_written_glob_counts_by_the_sensitive_paths_it_can_name(
        command: str, named: str) -> None:
    verdict = _judge(_shell_policy(WRITER, writes=True), command)
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    texts = [r.text for r in verdict.reasons if r.code == "sensitive_write"]
    assert texts and "a glob that can name a sensitive path" in texts[0], verdict.reasons
    assert f"({named})" in texts[0]


def test_a_written_glob_that_spells_nothing_sensitive_is_allowed() -> None:
    verdict = _judge(_shell_policy(WRITER, writes=True), "tee notes/*.md")
    assert verdict.effect is Effect.ALLOW, verdict


@pytest.mark.parametrize(("path", "hit"), [
    (".env~", ".env"), (".pgpass.bak", ".pgpass"), ("/home/u/.netrc.orig", ".netrc"),
    (".aws/credentials.old", ".aws/credentials"), ("deploy/.env.swp", ".env.*"),
    ("notes.txt~", None), ("Makefile.bak", None), (".envrc", None),
])
def test_a_backup_copy_of_a_secret_is_a_secret(path: str, hit: str | None) -> None:
    from signoff.globs.pathglob import is_secret

    assert is_secret(path, DEFAULT_SECRETS) == hit


def test_reading_a_backup_copy_of_a_secret_is_a_mandatory_ask() -> None:
    policy = _shell_policy(BARE)  # no regex rule: secret_read alone
    for command in ("cat .env~", "head .pgpass.bak", "grep KEY ~/.netrc.orig"):
        verdict = _judge(policy, command, ReviewMode.FULL)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, verdict)
    assert _judge(policy, "cat notes.txt~").effect is Effect.ALLOW


@pytest.mark.parametrize("command", [
    "ls -la .env", "stat .env", "du -h .env", "realpath .env", "readlink -f .env",
    "ls -la .e*", "tree -a",
])
def test_looking_at_a_secret_is_not_reading_it(workspace: Path, command: str) -> None:
    """ls, stat, du and realpath show a secret's name and size, never its content."""
    (workspace / ".env").write_text("TOKEN=1\n")
    policy = reader_policy(workspace, ["ls *", "stat *", "du *", "realpath *",
                                       "readlink *", "tree *"])
    verdict = judge_shell(policy, command, ReviewMode.FULL)
    assert verdict.effect is Effect.ALLOW and not _secret(verdict), (command, verdict)
    assert judge_shell(policy, "ls -la .env && cat .env").effect is Effect.ASK
