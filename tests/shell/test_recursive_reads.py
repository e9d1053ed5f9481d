"""A recursive search reads what the directory holds, a credential included.

``grep -r TOKEN .`` prints the lines of ``.env`` as surely as ``grep TOKEN .env``, and
the starter's read-only rule allowed it in every mode. A directory a search walks is
now walked by the policy too (bounded, breadth first: ``signoff.shell.treewalk``), the
way the tool walks it: grep -r reads dot-files, rg without ``--hidden`` does not,
grep -R and rg -L follow linked directories.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell, reasons, search_workspace
from signoff import Effect, Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy.sensitive import DEFAULT_SECRETS
from signoff.policy.starter import starter_toml
from signoff.shell import treewalk as trees
from signoff.shell.commands import Tree


def _secret(verdict: Verdict) -> list[str]:
    return reasons(verdict, "secret_read")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return search_workspace(tmp_path / "ws")


@pytest.fixture
def starter(workspace: Path) -> Policy:
    return Policy.from_toml(starter_toml(str(workspace)))


@pytest.mark.parametrize("command", [
    "grep -r TOKEN .", "grep -rn TOKEN", "grep TOKEN -r", "grep -R TOKEN src .",
    "grep -r --include='.e*' TOKEN .", "grep -r --exclude=*.md TOKEN .",
    "rg --hidden -t weird TOKEN",  # a type not known here narrows nothing
    "git grep --no-index TOKEN", "git grep --untracked -n TOKEN .",
    "grep -d recurse TOKEN .", "grep --recursive -l TOKEN .", "egrep -r 'TO+KEN' .",
    "rg --hidden TOKEN", "rg -uu TOKEN", "rg -. TOKEN .", "cd src && grep -r x ..",
])
def test_a_recursive_search_over_a_secret_is_a_mandatory_ask(
        starter: Policy, command: str) -> None:
    assert_human_decides(starter, command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "grep -r TOKEN src", "grep -rn x docs src", "rg TOKEN", "rg -u TOKEN",
    "grep -d skip TOKEN .", "grep TOKEN src/pkg/app.py",
    "grep -rn --include=*.py TOKEN .", "grep -r --exclude=.en? TOKEN .",
    "grep -r --exclude='.e*' TOKEN .", "rg --hidden -t py TOKEN", "rg -uu -g '*.md' TOKEN",
    "rg --hidden -g '!.en?' TOKEN", "grep -r --include='src/*' TOKEN .",
    "git grep TOKEN",  # the tracked files: nothing here can know them
])
def test_a_search_that_reaches_no_secret_is_allowed(starter: Policy, command: str) -> None:
    verdict = judge_shell(starter, command)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


def test_rg_reads_a_secret_that_is_not_hidden(workspace: Path, starter: Policy) -> None:
    (workspace / "src" / "pkg" / "server.pem").write_text("-----BEGIN EC PRIVATE KEY-----")
    verdict = judge_shell(starter, "rg TOKEN src", ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert any("src/pkg/server.pem" in text for text in _secret(verdict)), verdict.reasons


def test_a_link_to_a_secret_counts_where_it_leads(
        workspace: Path, tmp_path: Path, starter: Policy) -> None:
    home = tmp_path / "home" / ".ssh"
    home.mkdir(parents=True)
    (home / "id_rsa").write_text("KEY")
    os.symlink(home / "id_rsa", workspace / "docs" / "notes")
    verdict = judge_shell(starter, "grep -r x docs", ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict


def test_linked_directories_are_entered_only_when_the_tool_follows_them(
        workspace: Path, starter: Policy) -> None:
    os.symlink(workspace, workspace / "docs" / "up")  # docs/up/.env is .env
    assert judge_shell(starter, "grep -r x docs").effect is Effect.ALLOW
    verdict = judge_shell(starter, "grep -R x docs")
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert trees.secret_under(str(workspace / "docs"), DEFAULT_SECRETS,
                              Tree(follow=True)) == ("up/.env", ".env")


def test_the_walk_is_breadth_first_and_bounded(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = workspace / "docs" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / ".env").write_text("X=1\n")
    found = trees.secret_under(str(workspace), DEFAULT_SECRETS, Tree())
    assert found == (".env", ".env")  # the top before the depths
    docs = str(workspace / "docs")
    assert trees.secret_under(docs, DEFAULT_SECRETS, Tree()) == ("a/b/.env", ".env")
    assert trees.secret_under(docs, DEFAULT_SECRETS, Tree(hidden=False)) is None
    monkeypatch.setattr(trees, "MAX_ENTRIES", 2)  # past the bound it claims nothing
    assert trees.secret_under(docs, DEFAULT_SECRETS, Tree()) is None
    budget = trees.Budget(3)  # one bound for every directory of a call
    assert trees.secret_under(docs, DEFAULT_SECRETS, Tree(), budget=budget) is None
    assert budget.left < 0


def test_without_a_workspace_a_directory_counts_by_what_it_can_hold() -> None:
    policy = Policy.from_toml(
        '[policy]\nversion = "bare"\n[tools.execute]\nshell = "command"\n'
        '[[rules]]\nid = "reads"\neffect = "allow"\ntool = "execute"\ncommand = ["grep *"]\n')
    verdict = judge_shell(policy, "grep -r x ~/.ssh", ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert judge_shell(policy, "grep -r x /var/log").effect is Effect.ALLOW


@pytest.mark.parametrize("args", [
    {"pattern": "TOKEN"}, {"pattern": "TOKEN", "path": "/"}, {"pattern": "TOKEN", "path": None},
])
def test_a_search_tool_over_a_secret_is_a_mandatory_ask(
        workspace: Path, args: dict[str, str | None]) -> None:
    """deepagents' grep searches every file under its path (a .env too) unless its glob
    narrows the search: ``[tools.grep] trees = ["path"]`` in the deepagents preset."""
    policy = Policy.from_toml(starter_toml(str(workspace), preset="deepagents"))
    verdict = policy.evaluate(ToolCall(id="c", name="grep", args=args),
                              RunContext(thread_id="t", review_mode=ReviewMode.FULL))
    assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
    assert any(".env" in text for text in _secret(verdict)), verdict.reasons


@pytest.mark.parametrize("args", [
    {"pattern": "TOKEN", "path": "/src"}, {"pattern": "TOKEN", "glob": "*.py"},
    {"pattern": "TOKEN", "path": "/", "glob": "**/*.md"},
])
def test_a_search_tool_that_reaches_no_secret_is_allowed(
        workspace: Path, args: dict[str, str]) -> None:
    policy = Policy.from_toml(starter_toml(str(workspace), preset="deepagents"))
    verdict = policy.evaluate(ToolCall(id="c", name="grep", args=args),
                              RunContext(thread_id="t"))
    assert verdict.effect is Effect.ALLOW, verdict


def test_trees_must_name_path_arguments() -> None:
    from signoff.errors import PolicyError

    with pytest.raises(PolicyError, match="trees"):
        Policy.from_toml('[policy]\nversion = "t"\n[tools.search]\npaths = ["dir"]\n'
                         'trees = ["where"]\n')


def test_installed_packages_and_certificates_are_not_credentials(workspace: Path) -> None:
    """A virtualenv or node_modules holds the packages' files, and a PEM bundle of
    certificates is public; a PEM with a private key is not."""
    (workspace / ".env").unlink()
    venv = workspace / ".venv"
    (venv / "lib" / "certifi").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "lib" / "certifi" / "server.key").write_text("KEY")
    (workspace / "node_modules" / "x").mkdir(parents=True)
    (workspace / "node_modules" / "x" / ".env").write_text("X=1\n")
    (workspace / "docs" / "cacert.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    policy = Policy.from_toml(starter_toml(str(workspace)))
    assert judge_shell(policy, "grep -r TOKEN .").effect is Effect.ALLOW
    (workspace / "docs" / "client.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    verdict = judge_shell(policy, "grep -r TOKEN .")
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert any("docs/client.pem" in text for text in _secret(verdict)), verdict.reasons


@pytest.mark.parametrize(("command", "mandatory"), [
    ("tar czf out.tgz .", True), ("tar cf - . | base64", True), ("zip -r out.zip .", True),
    ("cp -a . dst", True), ("cp -R . dst", True), ("rsync -a . host:/x", True),
    ("scp -r . host:/x", True),
    ("tar czf out.tgz src", False), ("zip out.zip docs/index.md", False),
    ("cp -r src dst", False), ("tar --no-recursion -cf x.tar .", False),
])
def test_a_copy_of_a_tree_reads_what_it_holds(
        starter: Policy, command: str, mandatory: bool) -> None:
    """An archive or a copy of the workspace carries its .env along."""
    verdict = judge_shell(starter, command, ReviewMode.FULL)
    assert verdict.mandatory is mandatory, (command, verdict)
    assert bool(_secret(verdict)) is mandatory


def test_a_fifo_where_a_key_would_be_does_not_block_the_policy(
        workspace: Path, starter: Policy) -> None:
    """The PEM sniff opens without blocking and reads only a regular file; a FIFO named
    key.pem (a hostile workspace) is taken to hold a key, and nothing waits on it."""
    (workspace / ".env").unlink()
    os.mkfifo(workspace / "docs" / "key.pem")
    verdict = judge_shell(starter, "grep -r x docs", ReviewMode.FULL)
    assert verdict.effect is Effect.ASK and verdict.mandatory
    assert any("docs/key.pem" in text for text in _secret(verdict))
