"""A subagent's live request dies with the worker waiting on it (issue 13, bug 6):
cancellation, expiry, ownership loss or a worker restart invalidates these live requests.

Real processes: a worker proposes a child's call and waits on it; it is killed with SIGKILL;
the restarted worker's ``recover()`` withdraws the request at once instead of leaving the
thread blocked until the request expires. A worker still alive keeps its wait.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit import KERNEL_POLICY
from signoff import Gate, Policy, RunContext, SqliteStore
from signoff.errors import Conflict
from signoff.kernel.recovery import waiter_gone, worker_id
from signoff.model import RequestStatus

CHILD = """
import sys
from signoff import Gate, Policy, RunContext, SqliteStore, ToolCall
policy = Policy.from_toml(open(sys.argv[2]).read())
gate = Gate(policy, SqliteStore(sys.argv[1]))
proposal = gate.propose(ToolCall(id=sys.argv[4], name="deploy", args={"env": "prod"}),
                        RunContext(thread_id=sys.argv[3], run_id="child-run",
                                   parent_call="parent-1"))
print(proposal.request.id, flush=True)
gate.wait(proposal.request.id, timeout=120)
"""


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    root = tmp_path / "ws"
    root.mkdir()
    policy = tmp_path / "signoff.toml"
    policy.write_text(KERNEL_POLICY.format(root=root))
    db = tmp_path / "signoff.db"
    SqliteStore(db).close()
    yield db, policy


def start_child(db: Path, policy: Path, thread: str, call: str) -> tuple[subprocess.Popen[str],
                                                                         str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(policy), thread, call],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    request_id = proc.stdout.readline().strip()
    assert request_id.startswith("req_"), request_id
    return proc, request_id


def test_a_killed_workers_child_request_is_withdrawn_on_recover(
        setup: tuple[Path, Path]) -> None:
    db, policy = setup
    dead, dead_id = start_child(db, policy, "t-dead", "c1")
    alive, alive_id = start_child(db, policy, "t-alive", "c2")
    try:
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait(timeout=10)
        assert dead.stdout is not None
        dead.stdout.close()
        gate = Gate(Policy.load(policy), SqliteStore(db))
        # Before recovery the dead worker's request still blocks its thread.
        with pytest.raises(Conflict):
            gate.start_run(RunContext(thread_id="t-dead", run_id="next"))
        report = gate.recover()
        assert report.withdrawn == 1
        withdrawn = gate.get_request(dead_id)
        assert withdrawn.status is RequestStatus.CANCELLED
        assert withdrawn.outcome_code == "worker_restarted"
        assert gate.get_request(alive_id).status is RequestStatus.PENDING  # its worker lives
        gate.start_run(RunContext(thread_id="t-dead", run_id="next"))  # no longer waiting
        kinds = [e.kind for e in gate.store.audit_events() if e.request_id == dead_id]
        assert kinds[-1] == "request.cancelled"
        gate.close()
    finally:
        alive.kill()
        alive.wait(timeout=10)
        for proc in (dead, alive):
            if proc.stdout is not None:
                proc.stdout.close()


def test_a_restart_under_the_same_pid_is_a_restart() -> None:
    me = worker_id()
    host, pid, _ = me.rsplit(":", 2)
    assert waiter_gone(f"{host}:{pid}:0123456789ab", me)  # pid 1 in a container, rebooted
    assert not waiter_gone(me, me)  # this very process
    assert not waiter_gone(f"elsewhere:{pid}:0123456789ab", me)  # another host's worker
    assert not waiter_gone(None, me)
