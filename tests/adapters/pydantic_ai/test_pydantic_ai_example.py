"""examples/pydantic_ai_agent.py runs offline and does what its docstring says."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[3] / "examples" / "pydantic_ai_agent.py"


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE))["main"]
    assert main() == 0
    out = capsys.readouterr().out
    assert "paused once, waiting on 2 request(s); ran so far: ['read_file README.md']" in out
    assert "edited this call's arguments before it ran: staging first" in out
    assert "ran: ['read_file README.md', 'pay INV-7 120', 'deploy staging']" in out \
        or "ran: ['read_file README.md', 'deploy staging', 'pay INV-7 120']" in out
    assert "audit verified: True" in out
