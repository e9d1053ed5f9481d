"""Names a command reads from standard input are judged as the reads they are.

``echo HEAD:.env | git cat-file --batch`` and ``xargs cat <<< .env`` print ``.env``
as surely as ``cat .env``; they were allowed in ``full`` mode, where only a named
secret needs a human, because nothing looked at the names on standard input.
When the command line writes them (a here-string, a quoted here-document, ``echo``
or ``printf`` before a pipe) they are judged; when it does not, what is read is a
path nothing can place (outside the workspace, and a human's with
``[workspace] mandatory = true``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell, reader_policy
from signoff import Effect, Policy, ReviewMode, Verdict
from signoff.shell import analyze

_READERS = ["cat *", "xargs *", "git cat-file *", "tar *", "echo *", "printf *",
            "timeout *", "ls *", "rm *"]


def _policy(workspace: Path, *, mandatory: bool = False) -> Policy:
    return reader_policy(workspace, _READERS, deny=("rm -rf *",), mandatory=mandatory)


def _codes(verdict: Verdict) -> set[str]:
    return {r.code for r in verdict.reasons}


@pytest.mark.parametrize("command", [
    "git cat-file --batch <<< HEAD:.env",
    "echo HEAD:.env | git cat-file --batch",
    "printf '%s\\n' HEAD:.env | git cat-file --batch",
    "git cat-file --batch-command <<< 'contents HEAD:.env'",
    "git cat-file --batch <<< 'HEAD:dir name/.env'",
    "git cat-file --batch <<'E'\nHEAD:src/app.py\nHEAD:.env\nE",
    "timeout 5 git cat-file --batch <<< :.env",
    "echo HEAD:.env | git cat-file --batch > out.txt",
    "xargs cat <<< .env",
    "echo .env | xargs cat",
    "echo src/app.py .env | xargs -n 1 cat",
    "echo .env | xargs -I{} cat {}",
    "xargs --replace=FILE cat FILE <<< .env",
    "printf 'src/app.py\\n.env\\n' | xargs -I{} cat {}",
    "printf '.env\\0' | xargs -0 cat",
    "printf '%s\\0' 'a b/.env' | xargs -0 cat",
    "xargs cat <<< \".e'n'v\"",
    "xargs cat <<'E'\n.env\nE",
    "echo .env | timeout 5 xargs cat",
    "tar cf - -T - <<< .env",
    "echo .env | tar cf out.tar -T -",
    "xargs -d, cat <<< '.env,x'",
    "xargs -d '\\x2c' cat <<< 'a,.env'",
    "xargs -dX cat <<< 'a.txtX.envX'",
    "xargs cat <<E\n.e\\\nnv\nE",  # bash joins the lines of an unquoted here-document
    "echo HEAD:.env | git --no-pager cat-file --batch",
    "echo HEAD:.env | git -C sub cat-file --batch",
    "git cat-file --batch <<< $'HEAD:.env'",
])
def test_a_secret_named_on_standard_input_is_a_mandatory_ask(
        workspace: Path, command: str) -> None:
    assert_human_decides(_policy(workspace), command, "secret_read", naming=".env")


@pytest.mark.parametrize("command", [
    "echo src/app.py | xargs cat",
    "xargs cat <<< 'src/app.py README.md'",
    "printf '%s\\n' src/app.py | xargs cat",
    "echo src/app.py | xargs -n 1 cat",
    "git cat-file --batch <<< HEAD:src/app.py",
    "git cat-file --batch-check <<< HEAD:.env",  # sizes, not content
    "git cat-file --batch-check --batch-all-objects",
    "echo src/app.py | tar cf - -T -",
])
def test_harmless_names_written_in_the_line_are_allowed(workspace: Path, command: str) -> None:
    verdict = judge_shell(_policy(workspace), command)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


@pytest.mark.parametrize("command", [
    "ls | xargs cat",
    "xargs cat < names.txt",
    "echo src/app.py | xargs cat < names.txt",  # the redirection wins over the pipe
    "xargs -a names.txt cat <<< src/app.py",  # -a: the words come from the file
    "printf '.e%s' nv | xargs cat",
    "echo -e '\\x2eenv' | xargs cat",
    "echo '\\x2eenv' | xargs cat",  # dash's echo reads escapes without -e
    "xargs cat <<E\n$NAME\nE",
    "xargs cat <<< $NAME",
    "echo $NAME | xargs cat",
    "xargs cat <<< \"a'b'\"",
    "echo src/app.py | xargs -0 cat",  # -0: not split on blanks
    "git cat-file --batch",
    "git cat-file --batch < names.txt",
    "cat names.txt | git cat-file --batch",
    "git cat-file --batch --batch-all-objects",
    "tar cf out.tar -T names.txt",
    "tar cf out.tar -T -",
    "xargs -d '\\x99999999999999999999' cat <<< src/app.py",
])
def test_names_the_line_does_not_write_are_placed_nowhere(workspace: Path, command: str) -> None:
    verdict = judge_shell(_policy(workspace), command)
    assert verdict.effect is Effect.ASK and not verdict.mandatory, (command, verdict)
    assert "outside_workspace" in _codes(verdict), verdict.reasons
    assert judge_shell(_policy(workspace), command, ReviewMode.FULL).effect is Effect.ALLOW
    strict = judge_shell(_policy(workspace, mandatory=True), command, ReviewMode.FULL)
    assert strict.effect is Effect.ASK and strict.mandatory, (command, strict)


def test_the_words_xargs_is_given_are_its_commands_arguments(workspace: Path) -> None:
    assert ("rm", "-rf", "/") in {c.argv for c in analyze("echo -rf / | xargs rm").commands}
    verdict = judge_shell(_policy(workspace), "echo -rf / | xargs rm")
    assert verdict.effect is Effect.DENY, verdict
    before = analyze("ls | xargs rm")  # unknown words stay unknown
    assert any(not ref.literal for ref in before.paths)

