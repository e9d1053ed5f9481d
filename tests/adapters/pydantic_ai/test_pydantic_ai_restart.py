"""A real restart: one process pauses and stores the run, ``signoff requests approve`` (its
own process) decides, a third process resumes it — the approved call runs there, once;
a fourth resume of the same stored run runs nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyd_helpers import POLICY

pytestmark = pytest.mark.slow

HELPERS = Path(__file__).resolve().parents[1]
SRC = Path(__file__).resolve().parents[3] / "src"

PROCESS = """
import json, sys
from pathlib import Path
sys.path.insert(0, {helpers!r})
from pyd_helpers import calls, harness_at, text
from signoff.adapters.pydantic_ai import Paused, request_ids

h = harness_at(Path({tmp!r}))
step = sys.argv[1]
if step == "pause":
    agent, _ = h.agent([calls(("deploy", {{"env": "prod"}}, "d1"))])
    paused = Paused.of(agent.run_sync("ship it"))
    Path({tmp!r}, "paused.json").write_text(paused.dumps())
    print(json.dumps(request_ids(paused.requests)))
else:
    agent, script = h.agent([text("shipped")])
    result = agent.run_sync(**Paused.loads(Path({tmp!r}, "paused.json").read_text())
                            .resume_kwargs())
    print(json.dumps({{"output": result.output, "d1": script.returns()["d1"]}}))
h.gate.close()
"""


def test_pause_approve_resume_in_separate_processes(tmp_path: Path) -> None:
    (tmp_path / "signoff.toml").write_text(POLICY, "utf-8")
    script = tmp_path / "agent_process.py"
    script.write_text(PROCESS.format(helpers=str(HELPERS), tmp=str(tmp_path)), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(SRC), "SIGNOFF_DB": str(tmp_path / "signoff.db")}

    def run(*argv: str) -> str:
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    ids = json.loads(run(sys.executable, str(script), "pause"))
    token = (tmp_path / "alice.token").read_text().strip()
    run(sys.executable, "-c", "from signoff.cli import main; raise SystemExit(main())",
        "requests", "approve", ids["d1"], "--token", token)
    first = json.loads(run(sys.executable, str(script), "resume"))
    assert first == {"output": "shipped", "d1": "deployed latest to prod"}
    again = json.loads(run(sys.executable, str(script), "resume"))
    assert again == first  # the stored result, read back
    assert (tmp_path / "ledger.txt").read_text().splitlines() == ["deploy prod latest"]
