"""Child processes for the concurrency and crash tests, and the helpers both sides share.

A child is a fresh interpreter (``sys.executable``) running this file. It opens its own
store and builds its own ``Gate``: nothing is shared with the parent but the database and
the side-effect ledger file, so nothing survives a ``fork`` by accident.

    python tests/kernel/_worker.py MODE '<json config>'

The config names the store (``where``: ``backend`` plus ``path``, or ``dsn`` and
``schema``), the policy file, the ledger file and the mode's own fields. An approver's
token comes in the environment (``SIGNOFF_WORKER_TOKEN``), never on the command line.

Racing modes run a list of steps; before each step the child prints ``READY`` and waits
for a line on stdin, so the parent can release all children at once (a barrier across
processes); after each step it prints ``RESULT <json>``. The ``crash`` mode proposes,
approves and resumes one call, and kills itself with ``SIGKILL`` at the named point.

The ledger is the oracle: the registered tools append the request id (their idempotency
key) to it with ``O_APPEND`` and ``fsync`` before they return, so a line in the ledger is
a side effect that happened, whatever the database says.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from signoff.errors import SignoffError
from signoff.kernel.execution import Hooks
from signoff.kernel.gate import Gate
from signoff.model import Decision, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

T = TypeVar("T")
WORKER = Path(__file__).resolve()
TOKEN_ENV = "SIGNOFF_WORKER_TOKEN"
HOOK_POINTS = ("after_insert", "after_decision", "after_claim", "before_result")
CRASH_POINTS = ("after_insert", "after_decision", "after_claim", "in_tool", "before_result")


# ---- the ledger ---------------------------------------------------------------------------------


def ledger_append(path: str | Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def ledger_lines(path: str | Path) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []


def die(_request_id: str = "") -> None:
    os.kill(os.getpid(), signal.SIGKILL)


# ---- stores and gates ---------------------------------------------------------------------------


def where_of(store: Store) -> dict[str, Any]:
    """How another process opens the same database."""
    if store.backend == "sqlite":
        return {"backend": "sqlite", "path": str(store.path)}  # type: ignore[attr-defined]
    return {"backend": "postgres", "dsn": store.dsn,  # type: ignore[attr-defined]
            "schema": store.schema}  # type: ignore[attr-defined]


# How long a racer waits for a PostgreSQL connection (the store's default: 5 s, then
# ``store_busy``). Thirty-odd racers open their connections at once on a server that other
# suites share, up to its connection limit: under load that takes longer than 5 s, and a
# racer told ``store_busy`` would fail a test about decisions, not about pools.
POOL_WAIT = 120.0


def open_store(where: Mapping[str, Any], *, max_size: int = 8, min_size: int = 1) -> Store:
    if where["backend"] == "sqlite":
        from signoff.store.sqlite import SqliteStore

        return SqliteStore(where["path"])
    from signoff.store.postgres import PostgresStore

    return PostgresStore(where["dsn"], schema=where["schema"], max_size=max_size,
                         min_size=min_size, timeout=POOL_WAIT)


# One test at a time, server-wide, opens dozens of PostgreSQL connections (a 40-connection
# racing pool, or 32 children with a few each): two at once do not fit in a stock server's
# 100, and each would wait for the other's. An advisory lock on the server orders them, in
# this run (parallel workers) and in any other suite sharing the server.
MANY_CONNECTIONS = 0x5160C0AA
_held = [0]  # this process holds the lock (re-entrant here)


@contextlib.contextmanager
def many_connections(where: Mapping[str, Any], *, wait: float = 1800.0) -> Iterator[None]:
    """Hold the server-wide turn to open many connections while the block runs."""
    if where.get("backend") != "postgres" or _held[0]:
        _held[0] += 1
        try:
            yield
        finally:
            _held[0] -= 1
        return
    import time

    import psycopg

    deadline = time.monotonic() + wait
    while True:
        try:
            conn = psycopg.connect(where["dsn"], autocommit=True, connect_timeout=10)
            break
        except psycopg.OperationalError:  # at the server's connection limit: wait for a slot
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    with conn:
        while not conn.execute("SELECT pg_try_advisory_lock(%s)",
                               (MANY_CONNECTIONS,)).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "no turn to open many connections"
            time.sleep(0.2)
        _held[0] += 1
        try:
            yield
        finally:
            _held[0] -= 1
            conn.execute("SELECT pg_advisory_unlock(%s)", (MANY_CONNECTIONS,))


@dataclass
class Site:
    """Everything a process needs to act on one test database."""

    where: dict[str, Any]
    policy: str  # path of the policy file
    ledger: str  # path of the ledger file
    calls: list[str] = field(default_factory=list)  # tool runs in *this* process

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "policy": self.policy, "ledger": self.ledger}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Site:
        return cls(where=dict(data["where"]), policy=data["policy"], ledger=data["ledger"])


def build_gate(site: Site, *, store: Store | None = None, hooks: Hooks | None = None,
               lease: float = 300.0, verify: bool = False, tools: bool = True,
               die_in_tool: bool = False, executor_id: str | None = None) -> Gate:
    """A gate on ``site`` with the ledger tools ``execute`` and ``deploy`` (unless ``tools``
    is false). ``verify`` registers a hook that settles a dead run from the ledger."""
    policy = Policy.from_toml(Path(site.policy).read_text(), source=site.policy)
    # A child process opens its connections on demand, two at most per pool: 32 racing
    # children must fit in a stock server's 100 connections beside the rest of the suite.
    own = store if store is not None else open_store(site.where, min_size=0, max_size=2)
    gate = Gate(policy, own, lease=lease, hooks=hooks, executor_id=executor_id)
    if not tools:
        return gate
    ledger = site.ledger
    lock = threading.Lock()

    def happened(_args: Mapping[str, Any], request_id: str) -> bool:
        return request_id in ledger_lines(ledger)

    def run(request_id: str) -> str:
        ledger_append(ledger, request_id)
        with lock:
            site.calls.append(request_id)
        if die_in_tool:
            die()
        return request_id

    @gate.tool(name="execute", verify=happened if verify else None)
    def execute(command: str, idempotency_key: str) -> str:
        return run(idempotency_key)

    @gate.tool(name="deploy", verify=happened if verify else None)
    def deploy(target: str, idempotency_key: str) -> str:
        return run(idempotency_key)

    return gate


def execute_call(call_id: str) -> ToolCall:
    """A call the kernel policy asks one approver (any role) about."""
    return ToolCall(id=call_id, name="execute", args={"command": f"echo {call_id}"})


def deploy_call(call_id: str) -> ToolCall:
    """A call the kernel policy asks two ``ops`` approvers about."""
    return ToolCall(id=call_id, name="deploy", args={"target": call_id})


# ---- the parent's side: start threads or children, release them together ----------------------


def race(count: int, action: Callable[[int], T]) -> list[T]:
    """Run ``action(0..count-1)`` in ``count`` threads released by one barrier."""
    barrier = threading.Barrier(count)

    def run(index: int) -> T:
        barrier.wait(timeout=60)
        return action(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))



class Children:
    """Child processes in lock-step: ``step()`` waits until every child is READY, releases
    them all at once and collects one RESULT from each. A watchdog kills every child
    after ``timeout`` seconds so a deadlock fails the test instead of hanging it."""

    def __init__(self, mode: str, configs: Sequence[Mapping[str, Any]], *,
                 tokens: Sequence[str | None] | None = None, timeout: float = 300.0) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        self._turn = contextlib.ExitStack()
        where = configs[0].get("where", {}) if configs else {}
        self._turn.enter_context(many_connections(where))
        tokens = tokens if tokens is not None else [None] * len(configs)
        for config, token in zip(configs, tokens, strict=True):
            env = dict(os.environ)
            env.pop(TOKEN_ENV, None)
            if token is not None:
                env[TOKEN_ENV] = token
            self.procs.append(subprocess.Popen(
                [sys.executable, str(WORKER), mode, json.dumps(config)], env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True))
        self.timed_out = False
        self._watchdog = threading.Timer(timeout, self._kill_all)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _kill_all(self) -> None:
        self.timed_out = True
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _line(self, proc: subprocess.Popen[str], expected: str) -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith(expected):
            self._kill_all()
            errors = self._finish()
            raise AssertionError(f"child {proc.pid} said {line!r}, expected {expected}"
                                 f"{' (timed out)' if self.timed_out else ''}; stderr:\n"
                                 + "\n".join(e for e in errors if e))
        return line[len(expected):].strip()

    def step(self) -> list[dict[str, Any]]:
        for proc in self.procs:
            self._line(proc, "READY")
        for proc in self.procs:  # release them together
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        return [json.loads(self._line(proc, "RESULT ")) for proc in self.procs]

    def _finish(self) -> list[str]:
        """Reap every child and close its pipes, whatever state it is in: a child that
        broke a pipe, outlived the wait or was reaped already must not leave open files
        behind (their ResourceWarning would fail whichever later test collects them)."""
        errors = []
        for proc in self.procs:
            err: str | None = ""
            try:
                _, err = proc.communicate(timeout=60)
            except (BrokenPipeError, ValueError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            finally:
                for pipe in (proc.stdin, proc.stdout, proc.stderr):
                    if pipe is not None:
                        with contextlib.suppress(OSError):
                            pipe.close()
                proc.wait()
            errors.append(err or "")
        self._watchdog.cancel()
        self._turn.close()
        return errors

    def close(self) -> None:
        errors = self._finish()
        bad = [(p.pid, p.returncode, e) for p, e in zip(self.procs, errors, strict=True)
               if p.returncode != 0]
        assert not bad, f"children failed: {bad}"

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self._kill_all()
            self._finish()
        else:
            self.close()


def make_site(store: Store, directory: Path, policy_text: str) -> Site:
    """Write the policy where children can read it; the ledger lives beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "policy.toml"
    policy.write_text(policy_text)
    return Site(where=where_of(store), policy=str(policy), ledger=str(directory / "ledger"))


def crash_child(site: Site, *, point: str, thread_id: str, call_id: str, token: str,
                lease: float, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run one ``crash`` child to its death."""
    env = dict(os.environ)
    env[TOKEN_ENV] = token
    config = {**site.to_json(), "point": point, "thread_id": thread_id, "call_id": call_id,
              "lease": lease}
    return subprocess.run([sys.executable, str(WORKER), "crash", json.dumps(config)], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


# ---- the child's side -------------------------------------------------------------------------


def _steps(items: Sequence[Any]) -> Iterator[Any]:
    for item in items:
        print("READY", flush=True)
        if sys.stdin.readline().strip() != "GO":
            raise SystemExit(3)
        yield item


def _emit(result: Mapping[str, Any]) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def mode_decide(config: Mapping[str, Any]) -> None:
    """Decide each of ``request_ids`` in turn (``kind``: approve or reject)."""
    site = Site.from_json(config)
    gate = build_gate(site, tools=False)
    try:
        identity = gate.authenticate(os.environ[TOKEN_ENV])
        decision = Decision.approve() if config["kind"] == "approve" else \
            Decision.reject("racing reject", ["ask again later"])
        key = config.get("idempotency_key")
        for request_id in _steps(config["request_ids"]):
            try:
                result = gate.decide(request_id, decision, identity=identity,
                                     idempotency_key=key)
            except SignoffError as exc:
                _emit({"ok": False, "code": exc.code, "error": type(exc).__name__})
            else:
                _emit({"ok": True, "transitioned": result.transitioned,
                       "approvals": result.approvals, "replayed": result.replayed,
                       "status": result.request.status.value})
    finally:
        gate.store.close()


def mode_resume(config: Mapping[str, Any]) -> None:
    """Resume each of ``request_ids`` in turn; report the outcome and whether we ran it."""
    site = Site.from_json(config)
    gate = build_gate(site)
    try:
        for request_id in _steps(config["request_ids"]):
            before = len(site.calls)
            try:
                outcome = gate.resume(request_id)
            except SignoffError as exc:
                _emit({"kind": None, "code": exc.code, "ran": len(site.calls) - before})
            else:
                _emit({"kind": outcome.kind.value, "code": outcome.code,
                       "ran": len(site.calls) - before})
    finally:
        gate.store.close()


def mode_executor(config: Mapping[str, Any]) -> None:
    """Run approved requests until none is left with ``Gate.work()`` (rows taken with
    ``SKIP LOCKED`` on PostgreSQL, claimed in the same transaction)."""
    site = Site.from_json(config)
    gate = build_gate(site, executor_id=f"executor-{config['seed']}")
    errors: dict[str, int] = {}
    worked = 0
    try:
        for _ in _steps([None]):
            try:
                worked = gate.work()
            except SignoffError as exc:
                errors[exc.code] = errors.get(exc.code, 0) + 1
            _emit({"ran": len(site.calls), "ran_ids": site.calls,
                   "outcomes": {"executed": worked}, "errors": errors, "rounds": 1})
    finally:
        gate.store.close()


def mode_recover(config: Mapping[str, Any]) -> None:
    """Run ``recover()`` once, released together with the other recoverers."""
    site = Site.from_json(config)
    gate = build_gate(site, verify=bool(config.get("verify")))
    try:
        for _ in _steps([None]):
            try:
                report = gate.recover()
            except SignoffError as exc:
                _emit({"ok": False, "code": exc.code, "error": f"{type(exc).__name__}: {exc}",
                       "ran_ids": site.calls})
            else:
                _emit({"ok": True, **report.to_dict(), "ran_ids": site.calls})
    finally:
        gate.store.close()


def mode_crash(config: Mapping[str, Any]) -> None:
    """Propose, approve and resume one call; SIGKILL ourselves at ``point``."""
    site = Site.from_json(config)
    point = config["point"]
    hooks = Hooks(**{point: die}) if point in HOOK_POINTS else Hooks()
    gate = build_gate(site, hooks=hooks, lease=float(config["lease"]),
                      die_in_tool=point == "in_tool")
    identity = gate.authenticate(os.environ[TOKEN_ENV])
    proposal = gate.propose(execute_call(config["call_id"]),
                            RunContext(thread_id=config["thread_id"]))
    assert proposal.request is not None
    gate.decide(proposal.request.id, Decision.approve(), identity=identity)
    outcome = gate.resume(proposal.request.id)
    # Still alive: the crash point was never reached. Say so; the parent fails the test.
    print(json.dumps({"survived": True, "kind": outcome.kind.value}), flush=True)
    gate.store.close()


MODES = {"decide": mode_decide, "resume": mode_resume, "executor": mode_executor,
         "recover": mode_recover, "crash": mode_crash}


def main(argv: Sequence[str]) -> int:
    mode, config = argv[1], json.loads(argv[2])
    MODES[mode](config)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
