"""The install extras are enough for what their docs promise: a fresh virtual environment
with only ``pip install 'signoff[langchain]'`` runs examples/langchain_agent.py, and one
with ``signoff[deepagents]`` runs examples/deepagents_agent.py (docs/langchain.md), and one
with ``signoff[mcp]`` runs examples/mcp_proxy.py through ``signoff mcp-proxy`` (docs/mcp.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
@pytest.mark.parametrize(("extra", "example", "says"), [
    ("langchain", "langchain_agent.py", "audit verified: True"),
    ("deepagents", "deepagents_agent.py", "[full] ask_user offered to the model: False"),
    ("mcp", "mcp_proxy.py", "todo.md still there: False"),
])
def test_a_fresh_venv_with_only_the_extra_runs_its_example(
        tmp_path: Path, extra: str, example: str, says: str) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"{ROOT}[{extra}]"], capture_output=True, text=True, timeout=900, check=False)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # The extra brings nothing of the dev tools: the example runs on what it installed.
    dev = subprocess.run([str(python), "-c", "import pytest"], capture_output=True,
                         timeout=60, check=False)
    assert dev.returncode != 0
    done = subprocess.run([str(python), str(ROOT / "examples" / example)],
                          capture_output=True, text=True, timeout=300, check=False,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert says in done.stdout
