"""A search's globs are read the way the tools read them.

grep's ``--include``/``--exclude`` and find's ``-name`` go through fnmatch(3), rg's
``-g`` through globset — not Python's ``fnmatch``: ``[^a]`` negates (and, under
``POSIXLY_CORRECT``, is a class holding ``^``), a backslash escapes, ``[[:punct:]]``
is a class, ``--iglob`` ignores case. ``grep -r --include='[^a]env' TOKEN .`` read
``.env`` and was allowed in every mode under ``grep *``. Where the readings differ, a
glob that admits files is taken to admit the name and one that leaves files out to
leave it out only when every reading does.
"""

from __future__ import annotations

import pytest

from kit import assert_human_decides, judge_shell
from signoff import Effect, Policy, ReviewMode
from signoff.shell.treewalk import may_match, must_match


@pytest.mark.parametrize("command", [
    "grep -r --include='[^a]env' TOKEN .",
    "grep -r --include='[!a]env' TOKEN .",
    "grep -r --exclude='[^.]*' TOKEN .",
    "POSIXLY_CORRECT=1 grep -r --include='[^.]*' TOKEN .",  # [^.] holds '^' and '.'
    "grep -r --include='\\.env' TOKEN .",
    "grep -r --include='[[:punct:]]env' TOKEN .",
    "rg --hidden --iglob '.ENV' TOKEN",
    "rg --hidden --glob-case-insensitive -g '.ENV' TOKEN",
])
def test_a_search_glob_is_read_as_the_tool_reads_it(readers: Policy, command: str) -> None:
    assert_human_decides(readers, command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "grep -r --include='[!.]*' TOKEN .",  # fnmatch(3) and Python agree: not .env
    "rg --hidden -g '.ENV' TOKEN",  # globset is case-sensitive unless told
    "grep -r --exclude='[[:punct:]]env' --include='*.py' TOKEN .",
])
def test_a_glob_that_leaves_the_secret_out_in_every_reading_is_allowed(
        readers: Policy, command: str) -> None:
    verdict = judge_shell(readers, command, ReviewMode.FULL)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


def test_glob_readings() -> None:
    assert may_match(".env", ".env", "[^a]env") and may_match(".env", ".env", "\\.env")
    assert not may_match("app.py", "app.py", "[!a]pp.py")
    assert may_match("app.py", "app.py", "[^a]pp.py")  # POSIX: a class holding "a"
    assert may_match(".env", ".env", "[[:punct:]]env")  # a class: may admit anything
    assert not must_match(".env", ".env", "[[:punct:]]env")  # …and exclude nothing
    assert must_match("x.md", "x.md", "[!.]*") and not must_match(".env", ".env", "[!.]*")
    # [^.] is a negation to glibc and a class holding '^' and '.' under POSIXLY_CORRECT:
    assert may_match(".env", ".env", "[^.]*") and may_match("x.md", "x.md", "[^.]*")
    assert not must_match("x.md", "x.md", "[^.]*") and not must_match(".env", ".env", "[^.]*")
    assert may_match(".ENV", ".ENV", ".env", fold=True)
    assert not may_match(".ENV", ".ENV", ".env")
    # a backslash is an escape to grep and a plain character to a tool built without it
    assert may_match("a*b", "a*b", "a\\*b") and not must_match("a*b", "a*b", "a\\*b")
    assert may_match("src/app.py", "app.py", "src/*.py")
