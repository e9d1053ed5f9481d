"""A walk honours the ignore files the tool honours, when the line cannot change them.

``git add -A`` copies every file ``.gitignore`` does not exclude into the object store,
and ``git diff --cached`` prints them: with a ``.env`` that is not ignored, it was
allowed in ``full`` mode. It is now a tree read, as ``tar c .`` is; ``git stash -u``
too. The ignore files decide which files count (``signoff.shell.ignores``), for git
and for rg, so an ignored ``.env`` costs no question — unless the line can have
changed them before the tool reads them (``signoff.shell.chain.settle_ignores``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell, reader_policy, secrets_workspace
from signoff import Effect, Policy, ReviewMode
from signoff.shell.ignores import Ignores, repository_top

_TOOLS = ["git *", "cd *", "rm *", "echo *", "rg *", "mv *"]


def _repo(root: Path, gitignore: str | None = None) -> Path:
    secrets_workspace(root)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    if gitignore is not None:
        (root / ".gitignore").write_text(gitignore)
    return root.resolve()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _repo(tmp_path / "ws")


@pytest.fixture
def ignoring(tmp_path: Path) -> Path:
    """A repository whose .gitignore excludes .env."""
    return _repo(tmp_path / "ws", ".env\n")


def _full(policy: Policy, command: str) -> Effect:
    return judge_shell(policy, command, ReviewMode.FULL).effect


@pytest.mark.parametrize("command", [
    "git add -A", "git add -A && git diff --cached", "git add .", "git add --all",
    "git add :/", "cd src && git add -A", "git stash -u", "git stash push --include-untracked",
    "git add -A && git commit -qm x && git show",
])
def test_staging_the_tree_reads_a_secret_that_is_not_ignored(
        repo: Path, command: str) -> None:
    assert_human_decides(reader_policy(repo, _TOOLS), command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "git add -A", "git add .", "git add -A && git commit -m x", "git status && git add -A",
    "cd src && git add -A", "git stash -u", "rg --hidden TOKEN", "git add -u", "git add src",
])
def test_an_ignored_secret_is_not_read_by_a_tool_that_honours_the_ignore_file(
        ignoring: Path, command: str) -> None:
    assert _full(reader_policy(ignoring, _TOOLS), command) is Effect.ALLOW, command


@pytest.mark.parametrize("command", [
    "git add -f .", "git stash -a", "rg --hidden --no-ignore TOKEN", "rg --hidden -u TOKEN",
    "rg --hidden --no-ignore-vcs TOKEN", "rg --hidden --no-ignore-parent TOKEN",
])
def test_a_tool_told_to_read_ignored_files_reads_the_secret(
        ignoring: Path, command: str) -> None:
    assert_human_decides(reader_policy(ignoring, _TOOLS), command, "secret_read",
                         naming=".env")


@pytest.mark.parametrize("command", [
    "rm .gitignore && git add -A",
    "echo > .gitignore; git add -A",
    "mv .gitignore x && git add .",
    "git add -A > .gitignore",  # the shell truncates it before git starts
    "git add -A & rm .gitignore",  # no order between them
    "git checkout HEAD~1 -- .gitignore && git add -A",
    "for i in 1 2; do git add -A; rm .gitignore; done",  # the second turn runs after rm
    "f() { rm .gitignore; }; f; git add -A",
    "echo x | rg --hidden TOKEN . & rm .gitignore",
    "sh -c 'rm .gitignore'; rg --hidden TOKEN",
])
def test_ignore_files_the_line_can_change_first_are_not_trusted(
        ignoring: Path, command: str) -> None:
    policy = reader_policy(ignoring, [*_TOOLS, "sh *"])
    assert_human_decides(policy, command, "secret_read", naming=".env", modes=(ReviewMode.FULL,))


def test_git_reads_ignore_files_as_git_does(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws", "*.pem\nsecrets/\n!secrets/.env\n")
    policy = reader_policy(root, _TOOLS)
    (root / "keys").mkdir()
    (root / "keys" / "server.pem").write_text("-----BEGIN EC PRIVATE KEY-----")
    (root / "secrets").mkdir()
    (root / "secrets" / ".env").write_text("TOKEN=2")
    (root / ".env").unlink()
    assert _full(policy, "git add -A") is Effect.ALLOW  # nothing re-includes below secrets/
    (root / "keys" / ".gitignore").write_text("!server.pem\n")  # a deeper file decides
    verdict = judge_shell(policy, "git add -A", ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert any("server.pem" in r.text for r in verdict.reasons), verdict.reasons


def test_info_exclude_and_rgs_own_files_count(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    policy = reader_policy(root, _TOOLS)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text(".env\n")
    assert _full(policy, "git add -A") is Effect.ALLOW
    (root / ".gitignore").write_text("!.env\n")  # .gitignore wins over info/exclude
    assert _full(policy, "git add -A") is Effect.ASK
    (root / ".rgignore").write_text(".env\n")  # rg's own file wins over .gitignore
    assert _full(policy, "rg --hidden TOKEN") is Effect.ALLOW
    assert _full(policy, "git add -A") is Effect.ASK  # git does not read .rgignore


def test_outside_a_repository_gitignore_is_not_honoured(tmp_path: Path) -> None:
    root = secrets_workspace(tmp_path / "ws")
    (root / ".gitignore").write_text(".env\n")
    policy = reader_policy(root, _TOOLS)
    assert _full(policy, "rg --hidden TOKEN") is Effect.ASK  # rg: .gitignore needs a repo
    (root / ".ignore").write_text(".env\n")
    assert _full(policy, "rg --hidden TOKEN") is Effect.ALLOW


def test_a_parent_directory_rules_apply_beneath_it(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws", "src/**/.env\n")
    (root / "src" / "deep").mkdir()
    (root / "src" / "deep" / ".env").write_text("TOKEN=3")
    (root / ".env").unlink()
    policy = reader_policy(root, _TOOLS)
    assert _full(policy, "rg --hidden TOKEN src") is Effect.ALLOW
    assert _full(policy, "git add src") is Effect.ALLOW
    rules = Ignores.above(str(root / "src"), (".gitignore",)).within(str(root / "src"), "")
    assert rules.ignored("deep/.env", False) and not rules.ignored("deep/app.py", False)
    assert repository_top(str(root / "src" / "deep")) == str(root)
    assert repository_top(str(tmp_path)) is None or repository_top(str(tmp_path)) != str(root)


@pytest.mark.parametrize("command", [
    "git -C sub add -A", "git --work-tree=sub add -A", "git -C sub stash -u"])
def test_git_pointed_at_another_tree_reads_it_by_none_of_these_rules(
        ignoring: Path, command: str) -> None:
    """The root's .gitignore excludes .env everywhere, but git -C sub runs in sub's own
    repository, by sub's rules: the tree it names counts, every file."""
    sub = ignoring / "sub"
    sub.mkdir()
    subprocess.run(["git", "init", "-q", str(sub)], check=True)
    (sub / ".env").write_text("TOKEN=4\n")
    assert_human_decides(reader_policy(ignoring, _TOOLS), command, "secret_read",
                         naming=".env", modes=(ReviewMode.FULL,))
