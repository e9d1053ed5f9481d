"""A real restart: the run pauses in one process, a human approves with
``signoff requests approve`` in another, and a third — a new gate, new agent objects, the
session and requests the first one stored — resumes it; the call runs once, and a second
resume process runs nothing (slow: three Python processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from maf_helpers import POLICY, harness

from signoff import Gate, Policy, SqliteStore
from signoff.model import RequestStatus

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def process(*argv: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(HERE)]),
           "ENABLE_INSTRUMENTATION": "false", "SIGNOFF_DB": str(cwd / "signoff.db")}
    done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.slow
def test_a_new_process_resumes_after_a_decision_in_another(tmp_path: Path) -> None:
    h = harness(tmp_path)  # the database, and alice with the finance role
    h.gate.store.close()
    script = str(HERE / "maf_process.py")
    rid = process(script, "pause", str(tmp_path), cwd=tmp_path)
    assert rid.startswith("req_")
    process("-m", "signoff.cli", "requests", "approve", rid, "--token", h.token, cwd=tmp_path)
    assert process(script, "resume", str(tmp_path), cwd=tmp_path) == "paid after restart"
    process(script, "resume", str(tmp_path), cwd=tmp_path)  # the same resume again
    assert h.ledger.read_text().splitlines() == ["pay bob 5"]
    again = Gate(Policy.from_toml(POLICY, source="maf.toml"), SqliteStore(tmp_path / "signoff.db"))
    try:
        assert again.get_request(rid).status is RequestStatus.SUCCEEDED
        assert again.store.verify_audit().ok
    finally:
        again.store.close()
