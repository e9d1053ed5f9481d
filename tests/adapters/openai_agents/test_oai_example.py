"""examples/openai_agents_agent.py runs offline and says what it shows."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[3] / "examples" / "openai_agents_agent.py"


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE), run_name="example")["main"]
    assert main() == 0
    out = capsys.readouterr().out
    assert "paused, waiting on 2 request(s)" in out
    assert "tool output: 'ran: make test'" in out
    assert "ran: make deploy ENV=staging\\n[signoff] A human reviewer edited" in out
    assert "arguments before it ran: staging first" in out
    assert "model: Tested, and deployed to staging." in out
    assert "audit verified: True" in out
