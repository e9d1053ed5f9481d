"""More commands that read what a directory holds, or a file no word spells plainly.

Each was allowed in ``full`` mode with a ``.env`` in the workspace: a static file
server hands every file beneath it to whoever asks (``python -m http.server``,
``busybox httpd -h .``: GTFOBins' upload), ``diff -r`` and ``git diff --no-index``
print what two directories hold, ``git hash-object -w`` stores a file for ``git
cat-file`` to print, and a word no model can class may still name the file a command
reads (``curl "file://$HOME/.aws/credentials"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell, reader_policy, secrets_workspace
from signoff import Effect, Policy, ReviewMode
from signoff.shell.commands.servers import UNKNOWN, served

_TOOLS = ["python *", "python3 *", "php *", "ruby *", "busybox *", "npx *", "diff *",
          "git *", "echo *", "curl *", "http-server *"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = secrets_workspace(tmp_path / "ws")
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# docs\n")
    return root


@pytest.fixture
def policy(workspace: Path) -> Policy:
    return reader_policy(workspace, _TOOLS)


@pytest.mark.parametrize(("command", "naming"), [
    ("python -m http.server", ".env"),
    ("python3 -m http.server 8000 --bind 127.0.0.1", ".env"),
    ("python3 -m http.server -d .", ".env"),
    ("php -S 0.0.0.0:8000", ".env"),
    ("php -S localhost:8000 -t .", ".env"),
    ("ruby -run -e httpd . -p 8000", ".env"),
    ("busybox httpd -f -p 12345 -h .", ".env"),
    ("npx http-server", ".env"),
    ("npx -y http-server -p 8080 .", ".env"),
    ("http-server .", ".env"),
    ("diff -r . /tmp/empty", ".env"),
    ("diff --recursive -N /tmp/empty .", ".env"),
    ("git diff --no-index . /tmp/empty", ".env"),
    ("git hash-object -w .env", ".env"),
    ("echo .env | git hash-object -w --stdin-paths", ".env"),
    ("git frobnicate .env", ".env"),  # a subcommand no model knows
    ("curl file://$PWD/.env", ".env"),
    ("curl \"file://$HOME/.aws/credentials\"", ".aws/credentials"),
])
def test_a_command_that_hands_on_what_it_reads_reads_the_secret(
        policy: Policy, command: str, naming: str) -> None:
    assert_human_decides(policy, command, "secret_read", naming=naming)


@pytest.mark.parametrize("command", [
    "python3 -m http.server --directory docs", "php -S localhost:8000 -t docs",
    "ruby -run -ehttpd docs -p 8000", "busybox httpd -f -p 12345 -h docs",
    "npx serve docs", "diff -r docs /tmp/empty", "diff -r -x .env . /tmp/empty",
    "git diff --no-index docs /tmp/empty", "git hash-object src/app.py", "curl $URL",
    "diff . /tmp/empty",  # not recursive: compares no file beneath
])
def test_the_same_commands_away_from_the_secret_are_judged_as_before(
        policy: Policy, command: str) -> None:
    verdict = judge_shell(policy, command, ReviewMode.FULL)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


def test_what_a_server_serves() -> None:
    def of(command: str, literal: tuple[bool, ...] | None = None) -> str | None:
        argv = tuple(command.split())
        return served(argv, literal or (True,) * len(argv))

    assert of("python3 -m http.server 9000") == "."
    assert of("python -m http.server --directory=site") == "site"
    assert of("python -m json.tool x.json") is None
    assert of("php -S 0:80 -t public") == "public" and of("php -r x") is None
    assert of("busybox httpd -h www") == "www" and of("ruby -run -e httpd -p 80") == "."
    assert of("npx serve@14 build") == "build" and of("npx prettier .") is None
    assert of("python -m http.server -d $D", (True, True, True, True, False)) == UNKNOWN
