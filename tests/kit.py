"""What tests share besides fixtures: the kernel policy, the PostgreSQL address and a store
maker. A plain module (``from kit import …``): importing from ``conftest`` breaks as soon as
a test folder has a conftest of its own."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from signoff import Policy, ReviewMode, RunContext, ToolCall, Verdict
from signoff.store.base import Store

PG_DSN = os.environ.get("SIGNOFF_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

# The browser the inbox tests drive (Playwright, never a downloaded browser): Debian's
# chromium package by default, any other Chromium by its path in SIGNOFF_CHROMIUM.
CHROMIUM = Path(os.environ.get("SIGNOFF_CHROMIUM") or "/usr/bin/chromium")
NO_CHROMIUM = (f"no Chromium at {CHROMIUM}: `apt-get install chromium`, or set "
               "SIGNOFF_CHROMIUM to a Chromium's path")

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


def redacted_dsn(dsn: str = PG_DSN) -> str:
    """``dsn`` without its password, fit to print."""
    from signoff.store.postgres import redacted

    return redacted(dsn)


def postgres_available(dsn: str = PG_DSN, *, busy_wait: float = 60.0) -> str | None:
    """``None`` if PostgreSQL answers, else why not. A server at its connection limit is
    there, only busy (other tests' pools closing, another suite beside this one): it is
    asked again for up to ``busy_wait`` seconds, never taken for an absent one — that
    would turn its tests into skips."""
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




# Migrating a PostgreSQL schema costs about half a second, and ~450 tests each want a fresh
# one. A schema a test has finished with is emptied (TRUNCATE) and given to the next test of
# this process instead, but only if its structure is still exactly what migration made
# (its fingerprint, taken right after migrating): a test that altered, dropped or
# un-migrated anything leaves a schema that is dropped, never reused.
_SPARE: list[str] = []
_FRESH: dict[str, Fresh] = {}  # schema -> what it was right after migration

_FINGERPRINT = """
SELECT md5(string_agg(item, ' | ' ORDER BY item)) FROM (
  SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || COALESCE(c.relacl::text, '')
         || ' ' || pg_get_userbyid(c.relowner) AS item
    FROM pg_class c WHERE c.relnamespace = to_regnamespace(%(s)s)
  UNION ALL
  SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || ' ' || a.attnotnull::text || ' ' || a.attidentity::text || ' '
         || COALESCE(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = to_regnamespace(%(s)s) AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'trg ' || t.tgname || ' ' || t.tgenabled::text || ' ' || pg_get_triggerdef(t.oid)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = to_regnamespace(%(s)s) AND NOT t.tgisinternal
  UNION ALL
  SELECT 'fn ' || p.proname || ' ' || md5(pg_get_functiondef(p.oid))
    FROM pg_proc p WHERE p.pronamespace = to_regnamespace(%(s)s)
  UNION ALL
  SELECT 'con ' || n.conname || ' ' || pg_get_constraintdef(n.oid)
    FROM pg_constraint n WHERE n.connamespace = to_regnamespace(%(s)s)
  UNION ALL
  SELECT 'idx ' || i.indexdef FROM pg_indexes i WHERE i.schemaname = %(s)s
  UNION ALL
  SELECT 'nsp ' || COALESCE(nspacl::text, '') || ' ' || pg_get_userbyid(nspowner)
    FROM pg_namespace WHERE nspname = %(s)s
) AS shape
"""


def _fingerprint(conn: psycopg.Connection[Any], schema: str) -> str:
    """The structure of ``schema`` and which migrations it records, as one hash."""
    row = conn.execute(_FINGERPRINT, {"s": schema}).fetchone()
    migrations = conn.execute(sql.SQL(
        "SELECT string_agg(version::text || name, ',' ORDER BY version) FROM {}.signoff_migrations"
    ).format(sql.Identifier(schema))).fetchone()
    return f"{row[0] if row else None}/{migrations[0] if migrations else None}"


def make_store(backend: str, tmp_path: Path, *, reuse: bool = False) -> Store:
    """A store with an empty, migrated database: a SQLite file in ``tmp_path``, or a
    PostgreSQL schema of its own (with ``reuse``, a spare one put back as migration left
    it, when this process has one; ``release_store`` makes spares)."""
    if backend == "sqlite":
        from signoff.store.sqlite import SqliteStore

        return SqliteStore(tmp_path / "signoff.db")
    from signoff.store.postgres import PostgresStore

    if reuse and _SPARE:
        return _when_not_busy(lambda: PostgresStore(PG_DSN, schema=_SPARE[-1]), pop=True)
    schema = "t_" + uuid.uuid4().hex[:12]
    store = _when_not_busy(lambda: PostgresStore(PG_DSN, schema=schema, setup=True))
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        _FRESH[schema] = Fresh(_fingerprint(conn, schema), _seeds(conn, schema),
                               _sequences(conn, schema))
    return store


def _when_not_busy(open_: Callable[[], Store], *, pop: bool = False,
                   wait: float = 120.0) -> Store:
    """``open_()``, tried again while the shared server is at its connection limit
    (``store_busy``: other suites' pools) for up to ``wait`` seconds: a test's store
    opens late on a busy server, it never fails to open. ``pop``: the spare is taken."""
    from signoff.errors import StoreError

    deadline = time.monotonic() + wait
    while True:
        try:
            store = open_()
        except StoreError as exc:
            if exc.code != "store_busy" or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
            continue
        if pop:
            _SPARE.pop()
        return store


@dataclass(frozen=True)
class Fresh:
    """A schema right after migration: its fingerprint and the rows the migrations wrote."""

    fingerprint: str
    seeds: dict[str, tuple[list[str], list[tuple[Any, ...]]]]  # table -> columns, rows
    # sequence -> the value ``setval`` puts back and whether it counts as used
    sequences: dict[str, tuple[int, bool]]


def _tables(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %s "
        "AND tablename <> 'signoff_migrations' ORDER BY tablename", (schema,))]


def _seeds(conn: psycopg.Connection[Any], schema: str) -> dict[
        str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The rows the migrations wrote (the fencing counter, the audit head), table by table."""
    seeds = {}
    for table in _tables(conn, schema):
        cur = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(schema, table)))
        rows = cur.fetchall()
        if rows:
            seeds[table] = ([c.name for c in cur.description or ()], rows)
    return seeds


def _sequences(conn: psycopg.Connection[Any], schema: str) -> dict[str, tuple[int, bool]]:
    """Where each sequence of ``schema`` stands (identity columns' included)."""
    return {name: (int(last) if last is not None else int(start), last is not None)
            for name, last, start in conn.execute(
                "SELECT sequencename, last_value, start_value FROM pg_sequences "
                "WHERE schemaname = %s", (schema,))}


def release_store(store: Store) -> None:
    """Close a ``make_store`` store; a PostgreSQL schema whose structure is untouched is
    emptied and kept for the next test, any other is dropped."""
    store.close()
    schema = getattr(store, "schema", None)
    if schema is None:
        return
    if schema in _FRESH and _reset(schema, _FRESH[schema]):
        _SPARE.append(schema)
        return
    _FRESH.pop(schema, None)
    store.drop_schema()  # type: ignore[attr-defined]


def _reset(schema: str, fresh: Fresh) -> bool:
    """Put ``schema`` back as migration left it (every table emptied, the migrations' own
    rows written again) if its structure is still ``fresh``'s; false, touching nothing,
    if it is not, or if anything holds it."""
    try:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            if _fingerprint(conn, schema) != fresh.fingerprint:
                return False
            tables = [sql.Identifier(schema, name) for name in _tables(conn, schema)]
            with conn.transaction():
                # The audit's append-only triggers refuse TRUNCATE: they are the product's
                # guard against tampering, not against a test's clean-up.
                conn.execute("SET LOCAL session_replication_role = replica")
                conn.execute("SET LOCAL lock_timeout = '2s'")
                # DELETE, not TRUNCATE: a test leaves a few rows, and TRUNCATE's new files
                # cost ~90 ms a schema (hundreds of tests); the sequences are put back too.
                for table in tables:
                    conn.execute(sql.SQL("DELETE FROM {}").format(table))
                for name, (value, called) in fresh.sequences.items():
                    conn.execute("SELECT setval(%s::regclass, %s, %s)",
                                 (sql.Identifier(schema, name).as_string(conn), value, called))
                for table, (columns, rows) in fresh.seeds.items():
                    with conn.cursor() as cur:
                        cur.executemany(sql.SQL(
                            "INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE VALUES ({})").format(
                            sql.Identifier(schema, table),
                            sql.SQL(", ").join(map(sql.Identifier, columns)),
                            sql.SQL(", ").join(sql.Placeholder() * len(columns))), rows)
            return True
    except psycopg.Error:
        return False


def drop_spare_schemas() -> None:
    """At the end of the session: drop the schemas kept for reuse."""
    if not _SPARE:
        return
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        while _SPARE:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(_SPARE.pop())))


def until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``condition`` came true within ``seconds`` (polled every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


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
# may write unread, and one it may not (tests/kernel/test_decide_changed_since_proposal.py and
# test_decide_changed_after_read.py).
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
