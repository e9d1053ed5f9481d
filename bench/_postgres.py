"""PostgreSQL for the round-trip benchmark: reachability, a database of the run's own,
``xact_commit`` readings, and the floor of a durable cycle on this server."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class PgTarget:
    dsn: str
    bench_dsn: str
    database: str
    own_database: bool
    version_short: str
    version_num: int
    sync_commit: str
    settings: str
    xid_function: str

    def _read(self, conn: Any) -> int:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                           (self.database,)).fetchone()
        return int(row[0]) if row else 0

    def _settled(self, conn: Any, *, timeout: float = 20.0) -> int | None:
        """``xact_commit`` once it stops moving. Backends report their counts when they exit
        (and when idle, at most about once a second), and the report is asynchronous, so:
        close the connections first, then poll until three readings 100 ms apart agree."""
        deadline = time.monotonic() + timeout
        last, same = self._read(conn), 0
        while time.monotonic() < deadline:
            time.sleep(0.1)
            value = self._read(conn)
            same = same + 1 if value == last else 0
            last = value
            if same >= 3:
                return value
        return None

    def xact_commit_delta(self, action: Callable[[], None]) -> int | None:
        import psycopg

        # The monitor connects to the DSN's own database: when the bench has a database of
        # its own, the monitor's queries are not counted in it.
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            before = self._settled(conn)
            action()
            after = self._settled(conn)
        if before is None or after is None:
            return None
        return after - before

    def drop(self) -> None:
        if not self.own_database:
            return
        import psycopg
        from psycopg import sql

        force = sql.SQL(" WITH (FORCE)") if self.version_num >= 130000 else sql.SQL("")
        with contextlib.suppress(psycopg.Error), \
                psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}{}").format(
                sql.Identifier(self.database), force))


def show(conn: Any, *names: str) -> dict[str, str]:
    """The server's settings by name (``SHOW``), in the order asked."""
    from psycopg import sql

    values = {}
    for name in names:
        row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
        values[name] = str(row[0]) if row else "?"
    return values


def connect_pg(dsn: str) -> tuple[PgTarget | None, str]:
    """A ``PgTarget`` (creating a database for the run when allowed), or why not."""
    try:
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError as exc:
        return None, f"psycopg is not importable: {exc}"
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
            shown = show(conn, "server_version_num", "server_version", "synchronous_commit",
                         "fsync", "wal_sync_method", "commit_delay", "full_page_writes")
            version_num = int(shown.pop("server_version_num"))
            version = shown.pop("server_version")
            settings = shown
            database = "signoff_bench_" + uuid.uuid4().hex[:8]
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
                own = True
                bench_dsn = make_conninfo(dsn, dbname=database)
            except psycopg.Error:
                own = False
                database = str(conninfo_to_dict(dsn).get("dbname") or
                               conn.info.dbname)
                bench_dsn = dsn
    except Exception as exc:  # unreachable, refused, bad credentials: skip the row, say why
        return None, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    target = PgTarget(
        dsn=dsn, bench_dsn=bench_dsn, database=database, own_database=own,
        version_short=version.split()[0], version_num=version_num,
        sync_commit=settings["synchronous_commit"],
        settings=", ".join(f"{k}={v}" for k, v in settings.items()),
        xid_function=("pg_current_xact_id_if_assigned" if version_num >= 130000
                      else "txid_current_if_assigned"))
    return target, ""


def redact(dsn: str) -> str:
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "<dsn>"
    return (f"{parts.get('user', '?')}@{parts.get('host', 'localhost')}:"
            f"{parts.get('port', 5432)}/{parts.get('dbname', '?')}")


# The four durable steps of an approval cycle (propose, decide, claim, record) as the
# smallest SQL that could do them: one narrow request row, one audit row and the audit head
# per step, no logic, no hashing, no canonical JSON. Each step locks the audit head (and the
# request) before it writes, as any chained audit log must.
_FLOOR_SCHEMA = (
    "CREATE TABLE {s}.r (id TEXT PRIMARY KEY, status TEXT NOT NULL, version INT NOT NULL)",
    "CREATE INDEX ON {s}.r (status)",
    "CREATE TABLE {s}.a (idx BIGINT PRIMARY KEY, request_id TEXT, data TEXT, hash TEXT)",
    "CREATE INDEX ON {s}.a (request_id)",
    "CREATE TABLE {s}.h (id INT PRIMARY KEY, idx BIGINT NOT NULL)",
    "INSERT INTO {s}.h VALUES (1, 0)",
    """CREATE FUNCTION {s}.propose(rid TEXT) RETURNS void LANGUAGE plpgsql AS $$
       BEGIN PERFORM idx FROM {s}.h WHERE id = 1 FOR UPDATE;
       INSERT INTO {s}.r VALUES (rid, 'pending', 1);
       INSERT INTO {s}.a SELECT idx + 1, rid, '{{}}', 'h' FROM {s}.h WHERE id = 1;
       UPDATE {s}.h SET idx = idx + 1 WHERE id = 1; END $$""",
    """CREATE FUNCTION {s}.move(rid TEXT, target TEXT) RETURNS void LANGUAGE plpgsql AS $$
       BEGIN PERFORM r.version FROM {s}.r r, {s}.h h WHERE r.id = rid AND h.id = 1
       FOR UPDATE;
       UPDATE {s}.r SET status = target, version = version + 1 WHERE id = rid;
       INSERT INTO {s}.a SELECT idx + 1, rid, '{{}}', 'h' FROM {s}.h WHERE id = 1;
       UPDATE {s}.h SET idx = idx + 1 WHERE id = 1; END $$""",
)
_MOVES = ("approved", "executing", "succeeded")


@dataclass(frozen=True, slots=True)
class Floor:
    procedure_ms: float  # each step one call of a server-side function: one round trip
    pipelined_ms: float  # each step a locking read, then its writes and COMMIT pipelined


def pg_floor(target: PgTarget, cycles: int = 300, warmup: int = 50) -> Floor:
    """Median ms of the cycle's four durable steps as bare SQL on this server, two ways:

    * ``procedure``: each step is one call of a PL/pgSQL function (plans cached, one round
      trip, the commit as the call returns) — the floor of a kernel living in the database.
    * ``pipelined``: each step reads with a lock, then sends its writes and ``COMMIT`` in one
      pipeline (prepared statements) — the floor of a kernel that decides in the client
      between its read and its writes, as signoff's does.

    Everything a real cycle does beyond these commits and round trips is left out, so a real
    implementation of either kind can only be slower."""
    import psycopg
    from psycopg import sql

    schema = "floor_" + uuid.uuid4().hex[:8]
    with psycopg.connect(target.bench_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            for statement in _FLOOR_SCHEMA:
                admin.execute(statement.format(s=schema).encode())
            with psycopg.connect(target.bench_dsn, autocommit=True) as conn:
                def procedure() -> None:
                    rid = uuid.uuid4().hex
                    conn.execute(f"SELECT {schema}.propose(%s)", (rid,), prepare=True)
                    for status in _MOVES:
                        conn.execute(f"SELECT {schema}.move(%s, %s)", (rid, status),
                                     prepare=True)

                procedure_ms = _median_ms(procedure, cycles, warmup)
            with psycopg.connect(target.bench_dsn) as conn:
                cursor = conn.cursor()
                append = (f"INSERT INTO {schema}.a SELECT idx + 1, %s, '{{}}', 'h' "
                          f"FROM {schema}.h WHERE id = 1")
                head = f"UPDATE {schema}.h SET idx = idx + 1 WHERE id = 1"

                def pipelined() -> None:
                    rid = uuid.uuid4().hex
                    with conn.pipeline():
                        cursor.execute(f"SELECT idx FROM {schema}.h WHERE id = 1 FOR UPDATE")
                        cursor.fetchone()
                        cursor.execute(f"INSERT INTO {schema}.r VALUES (%s, 'pending', 1)",
                                       (rid,))
                        cursor.execute(append, (rid,))
                        cursor.execute(head)
                        conn.commit()
                        for status in _MOVES:
                            cursor.execute(f"SELECT r.version FROM {schema}.r r, {schema}.h h "
                                           "WHERE r.id = %s AND h.id = 1 FOR UPDATE", (rid,))
                            cursor.fetchone()
                            cursor.execute(f"UPDATE {schema}.r SET status = %s, "
                                           "version = version + 1 WHERE id = %s", (status, rid))
                            cursor.execute(append, (rid,))
                            cursor.execute(head)
                            conn.commit()

                pipelined_ms = _median_ms(pipelined, cycles, warmup)
            return Floor(procedure_ms=procedure_ms, pipelined_ms=pipelined_ms)
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _median_ms(cycle: Callable[[], None], cycles: int, warmup: int) -> float:
    for _ in range(warmup):
        cycle()
    samples = []
    for _ in range(cycles):
        start = time.perf_counter_ns()
        cycle()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1e6


# ---- round trips -----------------------------------------------------------------------------


class RoundTrips:
    """Counts psycopg's waits on the server's socket, in every thread or in one: each wait
    that has to wait for I/O at all is a message (or a pipeline, at its synchronisation
    point) sent and its answer awaited — a round trip. A statement queued in a pipeline is
    only sent, and a wait that needs no I/O (the pool's commit of an idle autocommit
    connection) sends nothing: neither is one. Installed on ``psycopg.Connection.wait`` for
    the ``with`` block only."""

    def __init__(self, *, thread: int | None = None) -> None:
        self.thread = thread
        self.count = 0
        self._original: Any = None

    def __enter__(self) -> RoundTrips:
        import psycopg

        self._original = original = psycopg.Connection.wait
        counter = self

        def counting(gen: Any) -> Any:
            try:
                waiting = next(gen)
            except StopIteration as done:
                return done.value
            counter.count += 1
            while True:
                ready = yield waiting
                try:
                    waiting = gen.send(ready)
                except StopIteration as done:
                    return done.value

        def wait(conn: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            sent_only = conn._pipeline is not None and gen.__qualname__.endswith("._execute_gen")
            if not sent_only and (counter.thread is None
                                  or threading.get_ident() == counter.thread):
                gen = counting(gen)
            return original(conn, gen, *args, **kwargs)

        psycopg.Connection.wait = wait
        return self

    def __exit__(self, *exc: object) -> None:
        import psycopg

        psycopg.Connection.wait = self._original


def round_trip_probe(dsn: str, samples: int = 300) -> tuple[float, float]:
    """Median µs of ``SELECT 1`` on an idle machine, then with one core kept busy by another
    process. On a virtual machine whose idle cores sleep, waking them costs more than the
    query: the first figure is what every round trip of a quiet moment pays."""
    import psycopg

    def median_us(conn: Any) -> float:
        times = []
        for _ in range(samples):
            start = time.perf_counter_ns()
            conn.execute("SELECT 1").fetchone()
            times.append(time.perf_counter_ns() - start)
        return statistics.median(times) / 1000

    with psycopg.connect(dsn, autocommit=True) as conn:
        median_us(conn)  # warm
        idle = median_us(conn)
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.2)
            busy = median_us(conn)
        finally:
            spinner.kill()
            spinner.wait()
    return idle, busy


def backend_cpu(admin_dsn: str, database: str) -> dict[int, float]:
    """CPU seconds (user + system, Linux ``/proc``) used so far by each backend connected to
    ``database``: PostgreSQL's own work for that database's sessions, whatever the client's.
    Empty where ``/proc`` cannot be read."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        pids = [int(r[0]) for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,)).fetchall()]
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    used: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    return used


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the backends used between two ``backend_cpu`` readings (a backend that
    connected in between counts from zero)."""
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())
