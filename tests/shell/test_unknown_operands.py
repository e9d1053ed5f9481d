"""A word known only when the shell runs may be an operand: cp's target stays a target.

``cp $X .git/hooks/pre-commit`` writes the hook if ``$X`` is a file, and ``cp x $X``
writes wherever ``$X`` says. The model took the unknown word for an option, so the
hook was read and nothing was written: allowed in ``full`` mode. ``cp -t DIR`` did not
record its target directory either, so the last source was taken for a target.
"""

from __future__ import annotations

import pytest

from kit import assert_human_decides, judge_shell
from signoff import Policy, ReviewMode, Verdict


def _judge(policy: Policy, command: str) -> Verdict:
    return judge_shell(policy, command, ReviewMode.FULL)


@pytest.mark.parametrize(("command", "code"), [
    ("cp $X .git/hooks/pre-commit", "sensitive_write"),
    ('cp "$SRC" Makefile', "sensitive_write"),
    ("ln -s $X .bashrc", "sensitive_write"),
    ("install $X .git/hooks/pre-push", "sensitive_write"),
    ("cp x $X", "outside_write"),
    ("cp .git/config $DEST", "outside_write"),
    ("cp -t $D x", "outside_write"),
    ("ls | xargs -I{} cp {} .git/hooks/pre-commit", "sensitive_write"),
    ("xargs -I{} cp {} .git/hooks/pre-commit <<< x", "sensitive_write"),
    ("echo .git/hooks/pre-commit | xargs -I % cp x %", "sensitive_write"),
    ("xargs -i cp x {} <<< .bashrc", "sensitive_write"),
])
def test_an_unknown_operand_leaves_the_target_a_write(
        starter: Policy, command: str, code: str) -> None:
    assert_human_decides(starter, command, code, modes=(ReviewMode.FULL,))


@pytest.mark.parametrize("command", [
    "cp -t dst a .bashrc",  # -t: every operand is a source, read
    "ls | xargs cp -t dst",
    "cp x y",
    "printf 'a.txt\\nb.txt\\n' | xargs -I{} cp {} backup/",
])
def test_a_target_directory_makes_every_operand_a_source(starter: Policy, command: str) -> None:
    verdict = _judge(starter, command)
    assert not verdict.mandatory, (command, verdict)
