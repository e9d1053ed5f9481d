"""What tests share besides fixtures: the kernel policy, the PostgreSQL address and a store
maker. A plain module (``from kit import …``): importing from ``conftest`` breaks as soon as
a test folder has a conftest of its own."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from signoff import Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.store.base import Store

PG_DSN = os.environ.get("SIGNOFF_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

KERNEL_POLICY = """
[policy]
version = "kernel-1"
gated = ["execute", "deploy"]
unknown_tools = "ask"

[workspace]
name = "ws"
root = "{root}"

[tools.execute]
shell = "command"
[tools.write_file]
paths = ["path"]
writes = true
[tools.deploy]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "two-man-deploy"
effect = "ask"
mandatory = true
tool = "deploy"
roles = ["ops"]
approvals = 2
expires = "1h"
"""


def postgres_available(dsn: str = PG_DSN, *, busy_wait: float = 60.0) -> str | None:
    """``None`` if PostgreSQL answers, else why not. A server at its connection limit is
    there, only busy (other tests' pools closing, another suite beside this one): it is
    asked again for up to ``busy_wait`` seconds, never taken for an absent one — that
    would turn its tests into skips."""
    import time

    deadline = time.monotonic() + busy_wait
    while True:
        try:
            import psycopg

            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
        except Exception as exc:  # any other failure means: skip, and say why
            if "too many clients" in str(exc) and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            return f"PostgreSQL not reachable at {dsn}: {exc}"
        return None




def make_store(backend: str, tmp_path: Path) -> Store:
    if backend == "sqlite":
        from signoff.store.sqlite import SqliteStore

        return SqliteStore(tmp_path / "signoff.db")
    from signoff.store.postgres import PostgresStore

    return PostgresStore(PG_DSN, schema="t_" + uuid.uuid4().hex[:12], setup=True)


def twin_store(store: Store) -> Store:
    """A second store on the same database: what another process would see and do."""
    from signoff.store.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        return SqliteStore(store.path)
    return type(store)(store.dsn, schema=store.schema)  # type: ignore[attr-defined,call-arg]


def only_rule_policy(root: Path, name: str) -> str:
    """A policy whose only allow rule is ``"NAME *"`` on a shell tool, outside = approve."""
    return f"""
[policy]
version = "only-{name}"
default_review_mode = "manual"

[workspace]
root = "{root}"
outside = "approve"

[tools.execute]
shell = "command"

[[rules]]
id = "only-{name}"
effect = "allow"
tool = "execute"
command = "{name} *"
"""


def judge_shell(policy: Policy, command: str, mode: ReviewMode = ReviewMode.MANUAL,
                tool: str = "execute") -> Verdict:
    """``policy``'s verdict on one shell command, on thread ``t`` in review ``mode``."""
    return policy.evaluate(ToolCall(id="c", name=tool, args={"command": command}),
                           RunContext(thread_id="t", review_mode=mode))


def assert_human_decides(policy: Policy, command: str, code: str, *, naming: str = "",
                         modes: tuple[ReviewMode, ...] = (ReviewMode.MANUAL,
                                                         ReviewMode.FULL)) -> None:
    """In each of ``modes`` the command is a mandatory ask, with a ``code`` reason (that
    names ``naming``, when given)."""
    for mode in modes:
        verdict = judge_shell(policy, command, mode)
        assert verdict.effect.value == "ask" and verdict.mandatory, (command, mode, verdict)
        assert any(naming in text for text in reasons(verdict, code)), (code, verdict.reasons)


def reasons(verdict: Verdict, code: str) -> list[str]:
    """The texts of a verdict's reasons with ``code`` (``secret_read``: the secrets read)."""
    return [r.text for r in verdict.reasons if r.code == code]


def reader_policy(root: Path, allow: list[str], *, deny: tuple[str, ...] = (),
                  mandatory: bool = False) -> Policy:
    """A workspace at ``root``, one shell tool, one allow rule for ``allow`` and one deny
    rule for ``deny``: no rule that names a secret, so ``secret_read`` alone must judge."""
    def listed(patterns: Sequence[str]) -> str:
        return ", ".join(f'"{p}"' for p in patterns)
    text = (f'[policy]\nversion = "readers"\n[workspace]\nroot = "{root}"\n'
            f'mandatory = {"true" if mandatory else "false"}\n'
            '[tools.execute]\nshell = "command"\n'
            f'[[rules]]\nid = "reads"\neffect = "allow"\ntool = "execute"\n'
            f'command = [{listed(allow)}]\n')
    if deny:
        text += (f'[[rules]]\nid = "denied"\neffect = "deny"\ntool = "execute"\n'
                 f'command = [{listed(deny)}]\n')
    return Policy.from_toml(text)


def secrets_workspace(root: Path) -> Path:
    """A workspace with sources, notes and a ``.env`` that holds a token."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (root / "notes.txt").write_text("n\n")
    (root / ".env").write_text("TOKEN=1\n")
    return root.resolve()


def search_workspace(root: Path) -> Path:
    """A workspace a search walks: a package, docs and a ``.env`` beside them."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "app.py").write_text("TOKEN = None\n")
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# docs\n")
    (root / ".env").write_text("TOKEN=1\n")
    return root.resolve()


# What a reader policy admits for the listing and search tests: no rule names a secret.
READERS = ["find *", "xargs *", "cat *", "grep *", "egrep *", "rg *", "tar *", "sort *",
           "uniq *", "head *", "tail *", "ls *", "rm *", "wc *", "sed *", "file *", "stat *",
           "chmod *"]


def shell_workspace(root: Path) -> Path:
    """A workspace with the files the shell tables name: sources, notes, a .git with hooks."""
    (root / "src").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "README.md").write_text("# readme\n")
    (root / "src" / "a.py").write_text("def x():\n    return 1\n")
    (root / "notes.txt").write_text("a 1 2\nb 3 4\n")
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    (root / "a.tar").write_bytes(b"")
    return root.resolve()


# A policy whose one gated tool writes a virtual path with its whole new text: its
# requests carry write evidence (the diff) — for the CLI's and the inbox's tests.
WRITES_POLICY = """
[policy]
version = "writes"
gated = ["write_file"]

[workspace]
root = "{root}"

[tools.write_file]
paths = ["file_path"]
writes = true
virtual = true
content = "content"
"""


@contextmanager
def _patched(owner: Any, name: str, replace: Any) -> Iterator[None]:
    """``owner.name`` is ``replace(original)`` while the block runs."""
    original = getattr(owner, name)
    setattr(owner, name, replace(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextmanager
def round_trips() -> Iterator[list[int]]:
    """Count this thread's waits on PostgreSQL while the block runs: ``counted[0]``. A
    round trip is a wait of this thread's psycopg connection on its socket, for a
    statement's answer or a pipeline's at its synchronisation point; a statement queued
    in a pipeline is only sent, and a wait that needs no I/O sends nothing."""
    counted = [0]
    me = threading.get_ident()

    def counting(gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        try:
            waiting = next(gen)
        except StopIteration as done:  # finished without touching the socket
            return done.value
        counted[0] += 1
        while True:
            ready = yield waiting
            try:
                waiting = gen.send(ready)
            except StopIteration as done:
                return done.value

    def replace(original: Any) -> Any:
        def wait(self: Any, gen: Generator[Any, Any, Any], *args: Any, **kwargs: Any) -> Any:
            # A statement queued in a pipeline is only sent: its answer comes at the
            # pipeline's synchronisation point, whose wait is the round trip.
            if threading.get_ident() == me and not (
                    self._pipeline is not None and gen.__qualname__.endswith("._execute_gen")):
                gen = counting(gen)
            return original(self, gen, *args, **kwargs)
        return wait

    with _patched(psycopg.Connection, "wait", replace):
        yield counted


@contextmanager
def statements() -> Iterator[list[str]]:
    """The statements this thread sends to PostgreSQL while the block runs, in order."""
    sent: list[str] = []
    me = threading.get_ident()

    def replace(original: Any) -> Any:
        def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                sent.append(str(query))
            return original(self, query, *args, **kwargs)
        return execute

    with _patched(psycopg.Cursor, "execute", replace):
        yield sent


# Builds ask one ops approver (expiring in 1 h), releases two: the row a decision on PostgreSQL
# may write unread, and one it may not (tests/kernel/test_known_requests.py, test_read_first.py).
OPS_POLICY = """
[policy]
version = "{version}"
gated = ["execute"]

[workspace]
name = "ws"
root = "{root}"

[tools.execute]
shell = "command"

[[rules]]
id = "two-for-releases"
effect = "ask"
tool = "execute"
command = "make release*"
roles = ["ops"]
approvals = 2

[[rules]]
id = "ops-builds"
effect = "ask"
tool = "execute"
command = "make *"
roles = ["ops"]
expires = "1h"
"""
