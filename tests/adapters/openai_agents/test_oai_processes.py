"""A real process restart (slow: two interpreters): one process runs until the pause and
stores the run state; a person decides; another process — its own gate over the same
SQLite file, its own agent objects — resumes it. Run again, it runs nothing twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from signoff import Decision

pytestmark = pytest.mark.slow

SCRIPT = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from agents import RunState
from oai_helpers import Harness, Runner, call, done, harness
from signoff import Gate, Policy, SqliteStore

tmp, step = Path(sys.argv[2]), sys.argv[3]
text = (tmp / "policy.toml").read_text()
gate = Gate(Policy.from_toml(text, source="oai.toml"), SqliteStore(tmp / "signoff.db"),
            agent="agent-bot")
h = Harness(gate=gate, ledger=tmp / "ledger.txt", alice=None, tmp=tmp, policy_text=text)

async def main():
    from signoff.adapters.openai_agents import apply_decisions, paused
    if step == "pause":
        agent, _ = h.agent([[call("deploy", {"env": "prod"}, "c1")]])
        result = await Runner.run(agent, "ship")
        [one] = await paused(result)
        (tmp / "state.txt").write_text(result.to_state().to_string())
        print(one.request_id)
    else:
        agent, _ = h.agent([done("Deployed.")])
        state = await RunState.from_string(agent, (tmp / "state.txt").read_text())
        assert await apply_decisions(state) == []
        print((await Runner.run(agent, state)).final_output)

asyncio.run(main())
gate.store.close()
"""


def _run(here: Path, tmp: Path, step: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(here), str(tmp), step],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_new_process_resumes_the_stored_state_once_a_human_decided(tmp_path: Path) -> None:
    from oai_helpers import harness

    h = harness(tmp_path)
    (tmp_path / "policy.toml").write_text(h.policy_text)
    here = Path(__file__).parent
    h.gate.store.close()
    request_id = _run(here, tmp_path, "pause")
    assert not h.ledger.exists()

    h.reopen().decide(request_id, Decision.approve(), identity=h.alice)
    assert _run(here, tmp_path, "resume") == "Deployed."
    assert _run(here, tmp_path, "resume") == "Deployed."  # resumed again: nothing runs twice
    assert h.ran() == ["deploy prod"]
    assert h.gate.store.verify_audit().ok
    h.gate.store.close()
