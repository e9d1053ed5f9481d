"""Text the bash grammar leaves in no node: a lone ``-`` before a redirection is put back as
the argument bash passes; nothing else is ever skipped silently."""

from __future__ import annotations

import pytest

from signoff.shell import analyze, gaps
from signoff.shell.analysis import _PARSER


@pytest.mark.parametrize(("command", "argv"), [
    ("python - <<'PY'\nprint(1)\nPY", ("python", "-")),
    ("python3 - x <<'PY'\nprint(1)\nPY", ("python3", "-", "x")),
    ("tar -xf - <<EOF\nx\nEOF", ("tar", "-xf", "-")),
    ("cat - 2>/dev/null", ("cat", "-")),
    ("cat - - 2>/dev/null tail", ("cat", "-", "-", "tail")),
    ("cat -\\\n - >out", ("cat", "-", "-")),
    ("ls 2>/dev/null", ("ls",)),
])
def test_a_lone_dash_before_a_redirection_is_an_argument(command: str,
                                                          argv: tuple[str, ...]) -> None:
    (found,) = analyze(command).commands
    assert found.argv == argv


def test_tar_reading_its_archive_from_a_heredoc_names_no_file() -> None:
    # Without the dash, "-xf" took the next word as its archive; with it, stdin is the archive.
    assert analyze("tar -xf - <<EOF\nx\nEOF").commands[0].argv[-1] == "-"


@pytest.mark.parametrize("command", [
    "python - <<'PY'\nprint(1)\nPY", "cat - 2>/dev/null", "ls 2>/dev/null", "a && b - >c",
    "echo 'x' | tee - >/dev/null", "for f in a b; do cat - <$f; done"])
def test_every_other_byte_is_in_a_node(command: str) -> None:
    root = _PARSER.parse(command.encode()).root_node
    assert not root.has_error and gaps.skipped(root) is None
    assert "unparseable" not in {f.code for f in analyze(command).never_allow}
