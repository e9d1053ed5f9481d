"""What ``find`` lists is read by whatever it hands the names to.

``find . -exec cat {} +``, ``find . -type f | xargs cat`` and ``find . | tar cf x.tar
-T -`` print or copy ``.env`` as surely as ``cat .env``. They were allowed in ``full``
mode, where only a named secret needs a human: nothing looked at which files the find
names. Now the find's starting points are walked as a search walks them (with its
``-name``/``-iname`` tests when the expression is a plain conjunction, its
``-maxdepth``, ``-L``), and read by the command it hands them to — when that command
reads its operands (``cat``, ``grep``), not when it only looks at them (``ls -l``) or
removes them (``rm``).
"""

from __future__ import annotations

import pytest

from kit import assert_human_decides, judge_shell, reasons
from signoff import Effect, Policy, ReviewMode
from signoff.shell.commands import Tree
from signoff.shell.commands.find import listing


@pytest.mark.parametrize("command", [
    "find . -exec cat {} +",
    "find -type f -exec cat {} \\;",
    "find . -name .env -exec cat {} \\;",
    "find . -iname '.ENV' -exec cat {} +",
    "find . -name '*.py' -o -name '.*' -exec cat {} +",  # -o: the other branch lists all
    "find . -maxdepth 1 -type f -exec head {} +",
    "find . -type f -exec grep -H TOKEN {} +",
    "find . -type f -execdir cat {} \\;",
    "find . -type f -exec sh -c 'cat \"$1\"' _ {} \\;",  # sh reads nothing here can place
    "find . -not -name '*.py' -exec cat {} +",
    "find src . -exec cat {} +",
])
def test_find_exec_reads_what_find_lists(readers: Policy, command: str) -> None:
    assert_human_decides(readers, command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "find . -type f | xargs cat",
    "find . -print0 | xargs -0 grep TOKEN",
    "find . -name .env | xargs -I{} cat {}",
    "find . -type f | tar -cf x.tar -T -",
    "find . | sort | xargs cat",
    "find . | grep -v x | head -5 | xargs cat",
    "find . -type f | uniq | tail -n 3 | xargs -n 1 cat",
    "find -L . -type f | xargs cat",
    "find . -iname '*.ENV' | xargs cat",
])
def test_find_piped_to_a_reader_reads_what_find_lists(readers: Policy, command: str) -> None:
    assert_human_decides(readers, command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "ls -a | xargs cat",
    "ls -la | xargs cat",  # -l: each line ends with the name
    "ls -A . docs | xargs -n1 cat",
    "ls -f | xargs cat",  # -f implies -a
    "ls -d .e* | xargs cat",
    "ls -aR | grep env | xargs cat",
    "ls -a | tar cf x.tar -T -",
    "cat $(ls -a)",
    "cat $(find . -name .env)",
    "cat `find . -type f`",
    "cat \"$(find . -name .env)\"",
    "grep TOKEN $(find . -type f | sort)",
    "find .env -maxdepth 0 -exec cat {} +",  # the starting point itself
    "F=$(find . -name .env); cat $F",
    "for f in $(find . -type f); do cat \"$f\"; done",
    "for f in $(ls -A); do cat $f; done",
    "find . -type f | while read f; do cat \"$f\"; done",
    "find . -type f | sort | while IFS= read -r f; do grep TOKEN \"$f\"; done",
    "ls -A | while read -r f; do cat \"$f\"; done",
])
def test_what_ls_or_a_substitution_lists_is_read_too(readers: Policy, command: str) -> None:
    assert_human_decides(readers, command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "find . -name '*.py' -exec cat {} +",
    "find src -type f -exec cat {} +",
    "find . -exec ls -l {} +",
    "find . -name '*.md' -exec grep -n x {} \\;",
    "find . -maxdepth 0 -exec cat {} +",  # lists the directory itself, not what it holds
    "find . -type f",
    "find . -name '*.py' | xargs cat",
    "find src -type f | xargs cat",
    "find . | xargs ls -l",
    "find . -type f | wc -l",
    "find . -name '*.md' | sort | xargs grep -n x",
    "ls | xargs -n1 wc -l",  # without -a, ls lists no dot-file
    "ls -R src | xargs ls -l",
    "cat $(find src -name '*.py')",
    "wc -l $(ls docs)",
    "ls $(find . -type f)",
    "find . -name '*.py' | while read f; do wc -l \"$f\"; done",
    "for f in $(find src -type f); do cat $f; done",
])
def test_a_find_whose_reader_reaches_no_secret_is_allowed(
        readers: Policy, command: str) -> None:
    verdict = judge_shell(readers, command, ReviewMode.FULL)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


def test_wc_of_a_listed_secret_reads_it_in_the_policys_sense(readers: Policy) -> None:
    """wc and file open the file (``wc -c .env`` is a secret read), so one the find hands
    ``.env`` to counts; only ``ls``/``stat``/``rm``-like commands look without reading."""
    for command in ("find . -name .env -exec wc -c {} +", "find . -type f -exec file {} +"):
        verdict = judge_shell(readers, command, ReviewMode.FULL)
        assert verdict.effect is Effect.ASK and verdict.mandatory, verdict
        assert any(".env" in text for text in reasons(verdict, "secret_read"))


@pytest.mark.parametrize("command", [
    "find . -exec rm {} +", "find . -name .env -exec stat {} \\;",
    "find . -name .env | xargs ls -la", "find . -type f -exec chmod 600 {} +",
])
def test_a_command_that_only_looks_at_or_removes_names_reads_nothing(
        readers: Policy, command: str) -> None:
    verdict = judge_shell(readers, command, ReviewMode.FULL)
    assert not reasons(verdict, "secret_read"), (command, verdict.reasons)


def test_a_find_after_a_filter_that_prints_parts_of_lines_is_not_followed(
        readers: Policy) -> None:
    """``grep -o`` and ``sed`` print text of their own: what reaches xargs is not a name
    the find listed, and that stays a path nothing can place (a limit, in the docs)."""
    for command in ("find . | grep -o 'src.*' | xargs cat",
                    "find . | sed s/x/y/ | xargs cat"):
        verdict = judge_shell(readers, command, ReviewMode.FULL)
        assert not any(".env" in text for text in reasons(verdict, "secret_read")), command


def _listing(command: str) -> object:
    argv = tuple(command.split())
    return listing(argv, (True,) * len(argv))


def test_what_a_find_lists() -> None:
    found = _listing("find")
    assert found is not None and found.starts == (".",) and found.tree == Tree()
    found = _listing("find -L src docs -maxdepth 2 -iname *.PY -type f")
    assert found is not None and found.starts == ("src", "docs")
    assert found.tree == Tree(follow=True, depth=2, fold=True, include=("*.PY",))
    found = _listing("find . -name *.py -o -name *.md")  # a branch: the names narrow nothing
    assert found is not None and found.tree.include == ()
    found = _listing("find . ! -name *.py")
    assert found is not None and found.tree.include == ()
    found = _listing("find .env -maxdepth 0")  # the starting points themselves
    assert found is not None and found.starts == (".env",) and found.tree is None
    unplaced = listing(("find", "$DIR", "-type", "f"), (True, False, True, True))
    assert unplaced is None  # nothing here can walk it: a path nothing can place
