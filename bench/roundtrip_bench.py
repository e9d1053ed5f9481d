"""One durable approval cycle: signoff (SQLite, PostgreSQL) beside LangGraph interrupt → resume.

Run from the repository root::

    .venv/bin/python bench/roundtrip_bench.py            # full run: 500 timed cycles per case
    .venv/bin/python bench/roundtrip_bench.py --quick    # 50 timed cycles per case, a smoke check

One signoff cycle is ``propose`` (an ``ask`` verdict: request row + audit event)
→ ``decide`` (approve) → ``resume`` (claim, run the tool, record the result).
One LangGraph cycle is ``graph.invoke(input)`` up to a node's ``interrupt()``
→ ``graph.invoke(Command(resume=...))`` to completion, checkpointed by
``SqliteSaver`` on a file database, with a fresh ``thread_id`` per cycle. The
tool's work is the same trivial string in both.

Every cycle is timed with ``time.perf_counter_ns()`` at its phase boundaries
(the cycle's time is the sum of its phases); the cases are interleaved in
blocks so a noisy moment on the machine lands on all of them. Commits are
counted in a separate, untimed pass over the same code (so counting adds
nothing to the timings): SQLite by tracing the statements the connections run,
PostgreSQL on the server. See bench/README.md for the method and how to read
the table.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import gc
import itertools
import math
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

import signoff
from _common import expect, version
from _postgres import (
    Floor,
    PgTarget,
    RoundTrips,
    backend_cpu,
    connect_pg,
    cpu_between,
    pg_floor,
    redact,
    round_trip_probe,
)
from signoff import Effect, Policy, RunContext, ToolCall, receipts
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind, ProposalKind
from signoff.keys import SigningKey
from signoff.model import Decision

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
SIGNING_KEY: SigningKey | None = None  # --sign: the gates sign audit checkpoints with it
COMMAND = "make build"

POLICY = """\
[policy]
version = "roundtrip-bench-1"
default_review_mode = "manual"
gated = ["deploy"]
unknown_tools = "ask"

[workspace]
name = "bench"
root = "{root}"

[tools.execute]
shell = "command"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "builds-need-a-human"
effect = "ask"
tool = "execute"
command = "make *"
"""


def work(command: str) -> str:
    """The tool's work, the same in both systems: trivial, so the cycle's overhead shows."""
    return f"ran: {command}"


# ----------------------------------------------------------------------------------------------
# Results.
# ----------------------------------------------------------------------------------------------


def nearest_rank(samples: Sequence[int], q: float) -> int:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(slots=True)
class Counts:
    """Per-phase counts from the untimed counting pass (totals over ``cycles``)."""

    cycles: int = 0
    commits: dict[str, int] = field(default_factory=dict)  # durable (write) commits
    readonly: dict[str, int] = field(default_factory=dict)  # read-only transactions' commits
    statements: dict[str, int] = field(default_factory=dict)
    wal_pages: dict[str, int] = field(default_factory=dict)  # SQLite: WAL frames appended
    # PostgreSQL: round trips on the cycle's own thread, and on every thread (``RoundTrips``)
    round_trips: dict[str, int] = field(default_factory=dict)
    round_trips_all: dict[str, int] = field(default_factory=dict)
    pg_cpu_ms: float | None = None  # PostgreSQL: the backends' CPU per cycle (``backend_cpu``)
    notes: list[str] = field(default_factory=list)

    def per_cycle(self, table: dict[str, int], phase: str | None = None) -> float:
        total = sum(table.values()) if phase is None else table.get(phase, 0)
        return total / self.cycles if self.cycles else float("nan")


@dataclass(slots=True)
class Samples:
    phases: tuple[str, ...]
    by_phase: dict[str, list[int]]
    total: list[int] = field(default_factory=list)

    def median_ms(self, phase: str | None = None) -> float:
        data = self.total if phase is None else self.by_phase[phase]
        return statistics.median(data) / 1e6

    def p99_ms(self, phase: str | None = None) -> float:
        data = self.total if phase is None else self.by_phase[phase]
        return nearest_rank(data, 0.99) / 1e6


# ----------------------------------------------------------------------------------------------
# The cases. ``cycle(i)`` is a generator: it yields a phase's name before doing that phase's
# work, so one driver times it (a clock read at each yield) and another counts it (counters
# read at each yield). ``check()`` verifies the last cycle's outcome outside the clock.
# ----------------------------------------------------------------------------------------------


class Case(abc.ABC):
    key: str
    system: str
    backend: str
    phases: tuple[str, ...]
    reference = False  # the LangGraph row the targets are judged against
    info = False  # shown for information only

    @abc.abstractmethod
    def cycle(self, i: str) -> Iterator[str]: ...

    @abc.abstractmethod
    def check(self) -> None: ...

    @abc.abstractmethod
    def count(self, cycles: int) -> Counts: ...

    def close(self) -> None:  # noqa: B027 (optional: most cases hold nothing to close)
        """Release what the case holds; nothing by default."""


def drive_timed(case: Case, i: str, samples: Samples) -> None:
    clock = time.perf_counter_ns
    stamps: list[tuple[str, int]] = []
    for phase in case.cycle(i):
        stamps.append((phase, clock()))
    end = clock()
    case.check()
    for (phase, start), (_, stop) in zip(stamps, [*stamps[1:], ("", end)], strict=True):
        samples.by_phase[phase].append(stop - start)
    samples.total.append(end - stamps[0][1])


def drive_counted(case: Case, i: str, snapshot: Callable[[], tuple[int, ...]],
                  into: list[dict[str, int]]) -> None:
    """Run one cycle, adding each phase's counter deltas to ``into`` (one dict per counter)."""
    marks: list[tuple[str, tuple[int, ...]]] = []
    for phase in case.cycle(i):
        marks.append((phase, snapshot()))
    end = snapshot()
    case.check()
    for (phase, before), (_, after) in zip(marks, [*marks[1:], ("", end)], strict=True):
        for table, b, a in zip(into, before, after, strict=True):
            table[phase] = table.get(phase, 0) + (a - b)


def count_round_trips(case: Case, cycles: int, counts: Counts, pg: PgTarget) -> None:
    """Round trips per phase (``_postgres.RoundTrips``): on the thread that runs the cycle,
    and on every thread (a background checkpoint writer, signoff's sealer and listener);
    and what the same cycles cost PostgreSQL's backends in CPU (``backend_cpu``)."""
    for n in range(2):  # the pools' first connections are not the cycle's
        for _ in case.cycle(f"warm-{uuid.uuid4().hex}-{n}"):
            pass
    before = backend_cpu(pg.dsn, pg.database)
    with RoundTrips() as everyone, RoundTrips(thread=threading.get_ident()) as caller:
        for n in range(cycles):
            drive_counted(case, f"trips-{uuid.uuid4().hex}-{n}",
                          lambda: (caller.count, everyone.count),
                          [counts.round_trips, counts.round_trips_all])
    if before:
        counts.pg_cpu_ms = cpu_between(before, backend_cpu(pg.dsn, pg.database)) \
            * 1000 / cycles


class Tracer:
    """Counts what ``sqlite3`` runs on the connections it is attached to (``set_trace_callback``).

    The callback sees every statement the library executes, including the ``BEGIN`` that
    the stdlib module issues implicitly and the ``COMMIT`` behind ``conn.commit()``. A
    ``COMMIT`` of a transaction that wrote is one durable commit (in WAL mode with
    synchronous=FULL: one fsync of the WAL). Reads outside a transaction are autocommit
    and issue no COMMIT. The stdlib reports each trigger subprogram again with the text
    of the statement that fired it; those repeats are not counted (the trigger runs
    inside that statement). Thread-safe: LangGraph writes checkpoints from a worker thread.
    """

    def __init__(self) -> None:
        self.commits = 0
        self.statements = 0
        self._last = ""
        self._lock = threading.Lock()

    def __call__(self, statement: str) -> None:
        with self._lock:
            if statement == self._last:
                return  # a trigger's subprogram, reported as the statement that fired it
            self._last = statement
            self.statements += 1
            if statement.lstrip().upper().startswith(("COMMIT", "END")):
                self.commits += 1

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.commits, self.statements


class WalMeter:
    """Pages a SQLite connection appends to its WAL (one frame per page written by a commit).

    For the counting pass only: checkpoint and truncate the WAL, turn automatic checkpoints
    off so the file only grows, and read its size; ``close()`` turns them back on."""

    def __init__(self, conn: sqlite3.Connection, db_path: str) -> None:
        self.conn = conn
        self.wal = Path(db_path + "-wal")
        self.frame = int(conn.execute("PRAGMA page_size").fetchone()[0]) + 24
        self.autocheckpoint = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA wal_autocheckpoint=0")

    def frames(self) -> int:
        try:
            size = self.wal.stat().st_size
        except FileNotFoundError:
            return 0
        return max(0, size - 32) // self.frame  # a 32-byte header, then the frames

    def close(self) -> None:
        self.conn.execute(f"PRAGMA wal_autocheckpoint={self.autocheckpoint}")


def count_sqlite(case: Case, cycles: int, connections: Sequence[sqlite3.Connection],
                 db_path: str) -> Counts:
    """Trace ``connections`` and meter the WAL while running ``cycles`` cycles of ``case``."""
    tracer = Tracer()
    meter = WalMeter(connections[0], db_path)
    for conn in connections:
        conn.set_trace_callback(tracer)
    counts = Counts(cycles=cycles)

    def snapshot() -> tuple[int, int, int]:
        commits, statements = tracer.snapshot()
        return commits, statements, meter.frames()

    try:
        for n in range(cycles):
            drive_counted(case, f"count-{uuid.uuid4().hex}-{n}", snapshot,
                          [counts.commits, counts.statements, counts.wal_pages])
    finally:
        for conn in connections:
            conn.set_trace_callback(None)
        meter.close()
    return counts


# ---- signoff ---------------------------------------------------------------------------------


class SignoffCase(Case):
    system = "signoff"
    phases = ("propose", "decide", "resume")

    signed = False  # a gate with a signing key: each approval signs a receipt

    def __init__(self, policy: Policy, store: Any) -> None:
        self.policy = policy
        self.store = store
        self.signing_key = SigningKey.generate() if self.signed else None
        self.last: str | None = None
        self.gate, self.approver = self._gate(store, add_user=True)
        self.outcome: Any = None
        call = ToolCall(id="probe", name="execute", args={"command": COMMAND})
        verdict = self.gate.check(call, RunContext(thread_id="probe"))
        expect(verdict.effect is Effect.ASK, f"the cycle's call must ask, got {verdict.effect}")

    def _gate(self, store: Any, *, add_user: bool) -> tuple[Gate, Identity]:
        self.gate_key = self.signing_key or SIGNING_KEY  # receipts and checkpoints
        gate = Gate(self.policy, store, signing_key=self.gate_key)
        if add_user:
            approver, _token = gate.add_user("alice", roles=[])
        else:
            approver = self.approver

        @gate.tool(name="execute")
        def execute(command: str) -> str:
            return work(command)

        return gate, approver

    def cycle(self, i: str) -> Iterator[str]:
        gate = self.gate
        yield "propose"
        proposal = gate.propose(ToolCall(id=f"call-{i}", name="execute",
                                         args={"command": COMMAND}),
                                RunContext(thread_id=f"thread-{i}"))
        request = proposal.request
        if request is None or proposal.kind is not ProposalKind.PENDING:
            raise SystemExit(f"benchmark setup is wrong: propose said {proposal.kind}")
        yield "decide"
        gate.decide(request.id, Decision.approve(), identity=self.approver)
        self.last = request.id
        yield "resume"
        self.outcome = gate.resume(request.id)

    def check(self) -> None:
        outcome = self.outcome
        expect(outcome.kind is OutcomeKind.EXECUTED and outcome.result == work(COMMAND),
                f"{self.key}: resume said {outcome.kind} {outcome.error or ''}")
        if self.signed and self.last is not None:  # the approval signed its receipt
            receipts.verify(self.gate.receipt(self.last), self.gate.jwks(), now=0.0)


class SignoffSqlite(SignoffCase):
    key = "signoff-sqlite"
    backend = "SQLite (WAL, synchronous=FULL)"

    def __init__(self, policy: Policy, path: Path) -> None:
        from signoff.store.sqlite import SqliteStore

        store = SqliteStore(path)
        conn = store._connection()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        expect(mode == "wal" and sync == 2, f"signoff's SQLite store runs {mode}/{sync}")
        super().__init__(policy, store)

    def count(self, cycles: int) -> Counts:
        # This process's connections to the store: the thread's reader and the writers'
        # shared one (signoff.store.groupcommit); the bench is single-threaded, but for the
        # checkpoint thread's reader when the gate signs (its commits, once a second, count).
        connections = list(self.store._connections)
        expected = 2 if self.gate_key is None else 3
        expect(len(connections) == expected,
               f"expected {expected} store connections, {len(connections)}")
        return count_sqlite(self, cycles, connections, self.store.path)

    def close(self) -> None:
        self.store.close()


class SignoffSqliteSigned(SignoffSqlite):
    """The SQLite cycle with a signing key: every approval signs and stores a receipt in
    its transaction. Timed in turn with the others; reported against the unsigned row."""

    key = "signoff-sqlite-receipts"
    backend = "SQLite, receipts signed"
    signed = True
    info = True


class SignoffPostgres(SignoffCase):
    key = "signoff-postgres"

    def __init__(self, policy: Policy, pg: PgTarget) -> None:
        from signoff.store.postgres import PostgresStore

        self.pg = pg
        self.schema = "bench_" + uuid.uuid4().hex[:12]
        self.backend = f"PostgreSQL {pg.version_short} (synchronous_commit={pg.sync_commit})"
        store = PostgresStore(pg.bench_dsn, schema=self.schema, setup=True)
        super().__init__(policy, store)

    def count(self, cycles: int) -> Counts:
        """Client side: every transaction the store opens, classified on the server as a write
        (it was given a transaction id: a commit record, a WAL flush) or read-only (no xid,
        no flush). Server side: ``xact_commit`` of the bench database, before/after."""
        from signoff.store.postgres import PostgresStore

        self.store.close()  # its backend exits and flushes its statistics
        overhead = self.pg.xact_commit_delta(lambda: PostgresStore(
            self.pg.bench_dsn, schema=self.schema).close())
        counts = Counts(cycles=cycles)

        def run() -> None:
            store = PostgresStore(self.pg.bench_dsn, schema=self.schema)
            try:
                self.gate, _ = self._gate(store, add_user=False)
                counter = _instrument_pg(store, self.pg.xid_function)
                for n in range(cycles):
                    drive_counted(self, f"count-{uuid.uuid4().hex}-{n}", counter.snapshot,
                                  [counts.commits, counts.readonly])
            finally:
                store.close()

        measured = self.pg.xact_commit_delta(run)
        store = PostgresStore(self.pg.bench_dsn, schema=self.schema)
        try:
            self.gate, _ = self._gate(store, add_user=False)
            count_round_trips(self, cycles, counts, self.pg)
        finally:
            store.close()
        if measured is None or overhead is None:
            counts.notes.append("xact_commit: the statistics did not settle; not reported")
            return counts
        server = (measured - overhead) / cycles
        client = counts.per_cycle(counts.commits) + counts.per_cycle(counts.readonly)
        where = "its own database" if self.pg.own_database else \
            "the DSN's database, SHARED with other sessions (may over-count)"
        counts.notes.append(
            f"server: pg_stat_database.xact_commit rose by {server:.2f} per cycle in {where} "
            f"(open/close overhead of {overhead} subtracted); the client saw "
            f"{client:.2f} transactions per cycle. The server's count also holds the "
            "counting probe after each autocommit read and one transaction per NOTIFY "
            "delivered to the store's listener (PostgreSQL reads its queue inside one)")
        return counts

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.store.close()
        with contextlib.suppress(Exception):
            from signoff.store.postgres import PostgresStore

            dropper = PostgresStore(self.pg.bench_dsn, schema=self.schema)
            dropper.drop_schema()
            dropper.close()


class SignoffPostgresSigned(SignoffPostgres):
    """The PostgreSQL cycle with a signing key (a schema of its own)."""

    key = "signoff-postgres-receipts"
    signed = True
    info = True


@dataclass(slots=True)
class _PgCounter:
    writes: int = 0
    readonly: int = 0

    def snapshot(self) -> tuple[int, int]:
        return self.writes, self.readonly


def _instrument_pg(store: Any, xid_function: str) -> _PgCounter:
    """Wrap this store instance's ``transaction``, ``_reader`` and ``finish_execution`` (the
    ways it opens a transaction). Just before each of the first two commits, ask the server
    whether the transaction was given a transaction id. Used in the untimed counting pass
    only."""
    counter = _PgCounter()
    probe = f"SELECT {xid_function}()"

    def wrap(opener: Callable[[], Any]) -> Callable[[], Any]:
        @contextmanager
        def counted() -> Iterator[Any]:
            with opener() as tx:
                yield tx
                if getattr(tx.cursor, "ended", False):
                    wrote = True  # committed with its last statement: a claim, which writes
                else:
                    wrote = tx.cursor.execute(probe).fetchone()[0] is not None
                if wrote:
                    counter.writes += 1
                else:
                    counter.readonly += 1

        return counted

    store.transaction = wrap(store.transaction)
    store._reader = wrap(store._reader)
    finish = store.finish_execution

    def finish_counted(*args: Any, **kwargs: Any) -> bool:
        # One autocommit statement: it wrote (a commit, a WAL flush) exactly when it moved.
        done = bool(finish(*args, **kwargs))
        if done:
            counter.writes += 1
        else:
            counter.readonly += 1
        return done

    store.finish_execution = finish_counted
    return counter


# ---- LangGraph -------------------------------------------------------------------------------


class _State(TypedDict, total=False):
    command: str
    result: str


def _approval_node(state: _State) -> _State:
    from langgraph.types import interrupt

    answer = interrupt({"tool": "execute", "args": {"command": state["command"]}})
    if answer.get("approved"):
        return {"result": work(state["command"])}
    return {"result": "rejected"}


def _approval_graph(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(_State)
    builder.add_node("execute", _approval_node)
    builder.add_edge(START, "execute")
    builder.add_edge("execute", END)
    return builder.compile(checkpointer=checkpointer)


class _LangGraphCycle(Case):
    """invoke up to the interrupt, then resume to the end, on a fresh thread each cycle."""

    system = "LangGraph"
    phases = ("invoke→interrupt", "resume→end")
    graph: Any
    durability: Durability | None = None
    interrupted: Any = None
    out: Any = None

    def cycle(self, i: str) -> Iterator[str]:
        from langgraph.types import Command

        config: Any = {"configurable": {"thread_id": f"thread-{i}"}}
        yield "invoke→interrupt"
        # durability=None is LangGraph's default (it then reads "async" from the config)
        self.interrupted = self.graph.invoke({"command": COMMAND}, config,
                                             durability=self.durability)
        yield "resume→end"
        resume: Any = Command(resume={"approved": True})
        self.out = self.graph.invoke(resume, config, durability=self.durability)

    def check(self) -> None:
        expect("__interrupt__" in self.interrupted,
                f"{self.key}: the first invoke did not stop at the interrupt")
        expect(self.out.get("result") == work(COMMAND), f"{self.key}: resume gave {self.out}")


class LangGraphCase(_LangGraphCycle):
    """The cycle checkpointed by ``SqliteSaver`` on a file: the reference."""

    def __init__(self, path: Path, stack: ExitStack, *, durability: Durability | None,
                 synchronous: str | None) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        saver = stack.enter_context(SqliteSaver.from_conn_string(str(path)))
        saver.setup()  # creates the tables and sets journal_mode=WAL
        if synchronous is not None:
            saver.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn: sqlite3.Connection = saver.conn
        self.path = str(path)
        self.journal = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        self.synchronous = _SYNC_NAMES.get(self.conn.execute("PRAGMA synchronous").fetchone()[0],
                                           "?")
        self.durability = durability
        self.library_default = synchronous is None
        how = "default" if synchronous is None else "set"
        mode = f"durability={durability}" if durability else "durability=async (default)"
        self.backend = (f"SqliteSaver {self.journal.upper()}, synchronous={self.synchronous} "
                        f"({how}), {mode}")
        self.key = f"langgraph-{durability or 'default'}-{synchronous or 'default'}"
        self.graph = _approval_graph(saver)

    def count(self, cycles: int) -> Counts:
        return count_sqlite(self, cycles, [self.conn], self.path)


class LangGraphPostgresCase(_LangGraphCycle):
    """The same cycle checkpointed by ``PostgresSaver`` on the PostgreSQL server signoff's
    PostgreSQL row uses: like for like with that row (for information)."""

    key = "langgraph-postgres"
    info = True

    def __init__(self, pg: PgTarget, stack: ExitStack) -> None:
        from langgraph.checkpoint.postgres import PostgresSaver

        self.pg = pg
        saver = stack.enter_context(PostgresSaver.from_conn_string(pg.bench_dsn))
        saver.setup()
        self.backend = (f"PostgresSaver, PostgreSQL {pg.version_short}, "
                        "durability=async (default)")
        self.graph = _approval_graph(saver)

    def count(self, cycles: int) -> Counts:
        """The server's ``xact_commit`` only: PostgresSaver's connection is autocommit, so
        every statement it sends, reads included, is a transaction of its own."""
        from langgraph.checkpoint.postgres import PostgresSaver

        counts = Counts(cycles=cycles)
        live = self.graph

        def run() -> None:
            with PostgresSaver.from_conn_string(self.pg.bench_dsn) as saver:
                self.graph = _approval_graph(saver)
                for n in range(cycles):
                    for _ in self.cycle(f"count-{uuid.uuid4().hex}-{n}"):
                        pass
                    self.check()

        measured = self.pg.xact_commit_delta(run)
        with PostgresSaver.from_conn_string(self.pg.bench_dsn) as saver:
            self.graph = _approval_graph(saver)
            count_round_trips(self, cycles, counts, self.pg)
        self.graph = live
        if measured is None:
            counts.notes.append("xact_commit: the statistics did not settle; not reported")
        else:
            counts.notes.append(f"server: pg_stat_database.xact_commit rose by "
                                f"{measured / cycles:.2f} per cycle (every statement of its "
                                "autocommit connection counts, reads too)")
        return counts


_SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
Durability = Literal["sync", "async", "exit"]


# ----------------------------------------------------------------------------------------------
# The run.
# ----------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def fsync_probe(directory: Path, rounds: int = 50) -> float:
    """Median µs of a 4 KiB append + ``fdatasync`` in ``directory`` (SQLite's WAL sync on Linux,
    and PostgreSQL's with wal_sync_method=fdatasync, are this call)."""
    sync = getattr(os, "fdatasync", os.fsync)
    path = directory / "fsync-probe"
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        block = b"x" * 4096
        for _ in range(rounds):
            start = time.perf_counter_ns()
            os.write(fd, block)
            sync(fd)
            samples.append(time.perf_counter_ns() - start)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(samples) / 1000


def run(cycles: int, warmup: int, count_cycles: int, pg_dsn: str | None,
        directory: str | None) -> int:
    print("signoff round-trip benchmark: one durable approval cycle")
    print(f"  python    {sys.version.split()[0]} ({platform.python_implementation()}), "
          f"{platform.platform()}")
    load = ", load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) \
        if hasattr(os, "getloadavg") else ""
    print(f"  machine   {platform.machine()}, {os.cpu_count()} CPUs, {_cpu_model()}{load}")
    print(f"  packages  signoff {signoff.__version__}, langgraph {version('langgraph')}, "
          f"langgraph-checkpoint {version('langgraph-checkpoint')}, "
          f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, "
          f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}, "
          f"psycopg {version('psycopg')}, sqlite {sqlite3.sqlite_version}")

    try:
        import langgraph  # noqa: F401
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"LangGraph is needed (pip install -e '.[bench]'): {exc}") from exc

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="signoff-rt-",
                                                                   dir=directory)))
        print(f"  storage   {tmp} ; 4 KiB append+fdatasync median "
              f"{fsync_probe(tmp):.0f} µs")
        pg: PgTarget | None = None
        pg_problem = "disabled with --no-pg"
        if pg_dsn is not None:
            pg, pg_problem = connect_pg(pg_dsn)
            if pg is not None:
                stack.callback(pg.drop)
                where = (f"own database {pg.database} (dropped after)" if pg.own_database
                         else f"database {pg.database} (shared: CREATE DATABASE refused)")
                print(f"  postgres  {pg.version_short} at {redact(pg_dsn)}, {where}; "
                      f"{pg.settings}")
                idle, busy = round_trip_probe(pg.bench_dsn)
                print(f"  round trip SELECT 1 median {idle:.0f} µs on the idle machine, "
                      f"{busy:.0f} µs with one core kept busy by another process")
            else:
                print(f"  postgres  SKIPPED: not reachable at {redact(pg_dsn)} ({pg_problem})")
        print(f"  method    {warmup} warm-up cycles, then {cycles} timed cycles per case, "
              f"taking turns every {BLOCK} cycles; perf_counter_ns at phase boundaries; gc enabled "
              f"(collected between blocks); commits counted in a separate untimed pass of "
              f"{count_cycles} cycles")
        print()

        root = tmp / "workspace"
        root.mkdir()
        policy = Policy.from_toml(POLICY.format(root=root), source="roundtrip-bench.toml")

        cases: list[Case] = []
        sq = SignoffSqlite(policy, tmp / "signoff.db")
        stack.callback(sq.close)
        cases.append(sq)
        if pg is not None:
            pgc = SignoffPostgres(policy, pg)
            stack.callback(pgc.close)
            cases.append(pgc)
        signed: list[Case] = [SignoffSqliteSigned(policy, tmp / "signoff-signed.db")]
        if pg is not None:
            signed.append(SignoffPostgresSigned(policy, pg))
        for case in signed:
            stack.callback(case.close)
        lg_default = LangGraphCase(tmp / "langgraph.db", stack, durability=None,
                                   synchronous=None)
        lg_cases: list[LangGraphCase] = [lg_default]
        if lg_default.synchronous != "FULL":
            # Not FULL by default: measure it again matched to signoff's synchronous=FULL,
            # and judge the target against the matched row.
            matched = LangGraphCase(tmp / "langgraph-full.db", stack, durability=None,
                                    synchronous="FULL")
            matched.reference = True
            lg_default.info = True
            lg_cases.append(matched)
        else:
            lg_default.reference = True
        durabilities: tuple[Durability, ...] = ("sync", "exit")
        for durability in durabilities:
            extra = LangGraphCase(tmp / f"langgraph-{durability}.db", stack,
                                  durability=durability,
                                  synchronous=None if lg_default.synchronous == "FULL"
                                  else "FULL")
            extra.info = True
            lg_cases.append(extra)
        cases.extend(lg_cases)
        if pg is not None:
            cases.append(LangGraphPostgresCase(pg, stack))
        reported = list(cases)
        cases.extend(signed)  # timed in turn with the rest; reported in their own block

        # ---- warm-up, then interleaved timed blocks ----------------------------------------
        ids = (f"{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count())
        samples = {c.key: Samples(c.phases, {p: [] for p in c.phases}) for c in cases}
        for case in cases:
            for _ in range(warmup):
                drive_timed(case, next(ids), Samples(case.phases,
                                                     {p: [] for p in case.phases}))
        blocks = max(1, cycles // BLOCK)
        sizes = [cycles // blocks + (1 if b < cycles % blocks else 0) for b in range(blocks)]
        for b, size in enumerate(sizes):
            order = cases[b % len(cases):] + cases[:b % len(cases)]
            for case in order:
                gc.collect()
                for _ in range(size):
                    drive_timed(case, next(ids), samples[case.key])

        # ---- counting pass (untimed) -------------------------------------------------------
        counts = {c.key: c.count(count_cycles) for c in reported}

        # ---- what no client of this PostgreSQL server could beat -------------------------
        floor = pg_floor(pg) if pg is not None else None

    report(reported, samples, counts, cycles, pg_problem if pg is None else None, floor=floor)
    report_receipts(cases, samples)
    return 0


RECEIPT_GOAL = 1.2  # a cycle whose approval signs a receipt: at most this × the unsigned one


def report_receipts(cases: Sequence[Case], samples: dict[str, Samples]) -> None:
    """Each signed row against its unsigned twin, measured in the same run, in turn."""
    print()
    print(f"Receipts (a gate with a signing key: each approval signs an Ed25519 receipt and "
          f"stores it in its transaction; goal ≤ {RECEIPT_GOAL:g}× the cycle without):")
    by_key = {c.key: c for c in cases}
    for case in cases:
        if not getattr(case, "signed", False):
            continue
        plain = by_key.get(case.key.removesuffix("-receipts"))
        if plain is None:
            continue
        s, p = samples[case.key], samples[plain.key]
        ratio = s.median_ms() / p.median_ms()
        phases = ", ".join(f"{phase} {p.median_ms(phase):.2f} → {s.median_ms(phase):.2f}"
                           for phase in case.phases)
        print(f"  {plain.backend:<46} {p.median_ms():.2f} ms → {s.median_ms():.2f} ms with "
              f"receipts: {ratio:.3f}× ({'met' if ratio <= RECEIPT_GOAL else 'MISSED'})")
        print(f"  {'':<46} per phase, ms: {phases}")


BLOCK = 10  # cycles per case per block: the cases take turns every BLOCK cycles
TARGET_RATIO = 3.0
PG_PEER_TARGET = 2.0  # signoff/PostgreSQL against PostgresSaver on the same server (issue 17)
TARGET_COMMITS = 4


def report(cases: Sequence[Case], samples: dict[str, Samples], counts: dict[str, Counts],
           cycles: int, pg_skipped: str | None, *, floor: Floor | None) -> None:
    reference = next(c for c in cases if c.reference)
    ref_median = samples[reference.key].median_ms()
    bw = max(len(c.backend) for c in cases)
    header = (f"{'system':<10} {'backend':<{bw}} {'median ms':>9} {'p99 ms':>8} "
              f"{'commits/cycle':>13} {'LG ÷ this':>9}")
    print(header)
    print("-" * len(header))
    for case in cases:
        s, k = samples[case.key], counts[case.key]
        commits = f"{k.per_cycle(k.commits):g}" if k.commits else "see below"
        if k.readonly:
            commits += f" (+{k.per_cycle(k.readonly):g} ro)"
        tag = "  ← reference" if case.reference else ("  (info)" if case.info else "")
        print(f"{case.system:<10} {case.backend:<{bw}} {s.median_ms():>9.2f} {s.p99_ms():>8.2f} "
              f"{commits:>13} {ref_median / s.median_ms():>8.2f}×{tag}")
    if pg_skipped is not None:
        print(f"{'signoff':<10} {'PostgreSQL':<{bw}} SKIPPED: {pg_skipped}")
    print()
    print(f"LG ÷ this = the reference LangGraph row's median ÷ this row's median: above 1× this "
          f"row is that many times faster. p99 is nearest-rank over {cycles} cycles.")
    default = next(c for c in cases if isinstance(c, LangGraphCase)
                   and c.durability is None and c.library_default)
    print(f"SqliteSaver sets journal_mode=WAL and leaves synchronous at the SQLite library's "
          f"default, which is {default.synchronous} here"
          + (": the same as signoff's FULL, so no extra row is needed."
             if default.synchronous == "FULL" else
             f"; the reference row sets synchronous=FULL to match signoff, the "
             f"{default.synchronous} row is for information."))
    print("commits/cycle = durable commits (a transaction that wrote; one WAL flush each). "
          "\"ro\" = read-only transactions the PostgreSQL store opens and commits (no "
          "transaction id, no WAL flush, but a BEGIN/COMMIT round trip each); SQLite reads "
          "are autocommit statements and commit nothing.")
    print()

    print("Per phase: median ms / commits (c) / SQL statements / WAL pages (pg, 4 KiB each) "
          "/ PostgreSQL round trips (rt: on the cycle's thread; all threads in brackets) "
          "per cycle, the counts from the counting passes:")
    width = max(len(f"{c.system} {c.key}") for c in cases)
    for case in cases:
        s, k = samples[case.key], counts[case.key]
        parts = []
        for phase in case.phases:
            text = f"{phase} {s.median_ms(phase):.2f} ms"
            if k.commits:
                text += f" / {k.per_cycle(k.commits, phase):g} c"
            if k.readonly:
                text += f" +{k.per_cycle(k.readonly, phase):g} ro"
            if k.statements:
                text += f" / {k.per_cycle(k.statements, phase):g} stmts"
            if k.wal_pages:
                text += f" / {k.per_cycle(k.wal_pages, phase):g} pg"
            if k.round_trips:
                text += (f" / {k.per_cycle(k.round_trips, phase):g} rt"
                         f" ({k.per_cycle(k.round_trips_all, phase):g} all threads)")
            parts.append(text)
        print(f"  {case.key:<{width}}  " + " | ".join(parts))
        if k.pg_cpu_ms is not None:
            print(f"  {'':<{width}}  PostgreSQL's backends: {k.pg_cpu_ms:.2f} ms of CPU per "
                  "cycle (every backend of the bench database, sealer and listener included)")
        for note in k.notes:
            print(f"  {'':<{width}}  {note}")
    print()

    print(f"Targets (median at least {TARGET_RATIO:g}× faster than the reference LangGraph "
          f"cycle, {reference.backend}; at most {TARGET_COMMITS} commits per cycle):")
    for case in cases:
        if case.system != "signoff":
            continue
        s, k = samples[case.key], counts[case.key]
        ratio = ref_median / s.median_ms()
        durable = k.per_cycle(k.commits)
        speed = "met" if ratio >= TARGET_RATIO else "MISSED"
        commit_verdict = "met" if durable <= TARGET_COMMITS else "MISSED"
        print(f"  {case.backend:<46} speed {ratio:5.2f}× {speed:<7} "
              f"commits {durable:g} {commit_verdict}")
        if k.readonly:
            total = durable + k.per_cycle(k.readonly)
            print(f"  {'':<46} (counting read-only transactions too: {total:g} per cycle, "
                  f"{'within' if total <= TARGET_COMMITS else 'over'} {TARGET_COMMITS})")
    if pg_skipped is not None:
        print(f"  PostgreSQL: not measured ({pg_skipped})")
    fastest = min((c for c in cases if isinstance(c, LangGraphCase)),
                  key=lambda c: samples[c.key].median_ms())
    if fastest is not reference:
        ratio = samples[fastest.key].median_ms() / samples["signoff-sqlite"].median_ms()
        print(f"  (LangGraph's fastest mode here is {fastest.backend}: "
              f"{samples[fastest.key].median_ms():.2f} ms; against it signoff/SQLite is "
              f"{ratio:.2f}× {'faster' if ratio >= 1 else 'as fast, i.e. slower'}.)")
    if floor is not None:
        report_postgres(cases, samples, reference, floor)


def report_postgres(cases: Sequence[Case], samples: dict[str, Samples], reference: Case,
                    floor: Floor) -> None:
    """What the PostgreSQL row could reach at best on this server, and its like-for-like
    peer: a client-server database pays a round trip and a server-side WAL flush per
    durable step, which an in-process SQLite checkpointer does not."""
    ref = samples[reference.key].median_ms()
    ours = next((c for c in cases if c.key == "signoff-postgres"), None)
    peer = next((c for c in cases if isinstance(c, LangGraphPostgresCase)), None)
    print()
    print("PostgreSQL floors on this server (bench/_postgres.py: the cycle's four durable steps "
          "as bare SQL with narrow rows; no logic, hashing or canonical JSON):")
    print(f"  one server-side function call per step          {floor.procedure_ms:.2f} ms → "
          f"at best {ref / floor.procedure_ms:.2f}× the reference")
    print(f"  a locking read, then writes + COMMIT pipelined  {floor.pipelined_ms:.2f} ms → "
          f"at best {ref / floor.pipelined_ms:.2f}× the reference (a kernel deciding in "
          "the client)")
    if ours is not None and peer is not None:
        mine, theirs = samples[ours.key].median_ms(), samples[peer.key].median_ms()
        ratio = theirs / mine
        print(f"  like for like: signoff/PostgreSQL {mine:.2f} ms vs LangGraph PostgresSaver "
              f"{theirs:.2f} ms on the same server → {ratio:.2f}× faster "
              f"(issue 17 asks ≥ {PG_PEER_TARGET:g}×: "
              f"{'met' if ratio >= PG_PEER_TARGET else 'MISSED'})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="50 timed cycles per case")
    parser.add_argument("--cycles", type=int, help="timed cycles per case (default 500)")
    parser.add_argument("--warmup", type=int, help="warm-up cycles per case (default 20)")
    parser.add_argument("--count-cycles", type=int,
                        help="cycles in the untimed commit-counting pass (default 50)")
    parser.add_argument("--pg", default=os.environ.get("SIGNOFF_BENCH_PG", DEFAULT_PG),
                        help="PostgreSQL DSN (default $SIGNOFF_BENCH_PG, else %(default)s)")
    parser.add_argument("--no-pg", action="store_true", help="skip the PostgreSQL row")
    parser.add_argument("--dir", help="where the SQLite files go (default: the temp dir)")
    parser.add_argument("--sign", action="store_true", help="signoff's gates sign audit "
                        "checkpoints (a fresh key): what a server with a key does")
    args = parser.parse_args(argv)
    global SIGNING_KEY  # noqa: PLW0603 (one switch for every case the run builds)
    SIGNING_KEY = SigningKey.generate() if args.sign else None
    cycles = args.cycles or (50 if args.quick else 500)
    warmup = args.warmup if args.warmup is not None else (5 if args.quick else 20)
    count_cycles = args.count_cycles or (10 if args.quick else 50)
    if cycles < 10:
        parser.error("--cycles must be at least 10")
    return run(cycles, warmup, count_cycles, None if args.no_pg else args.pg, args.dir)


if __name__ == "__main__":
    raise SystemExit(main())
