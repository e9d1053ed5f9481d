"""``signoff serve`` runs only on a policy it could read, and says which (issue 12, item 1).

Before, a server started in a directory without ``signoff.toml`` judged every call with
an empty policy: ``rm -rf /`` came back ``ask``/medium. Now it refuses to start, naming
the file it looked for, and a running server prints and reports its policy and version.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

EXE = Path(sys.executable).with_name("signoff")


@pytest.mark.slow
def test_serve_refuses_to_start_without_a_policy(tmp_path: Path) -> None:
    done = subprocess.run([str(EXE), "serve", "--port", "0", "--db", str(tmp_path / "x.db")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "[policy_unreadable]" in done.stderr and "signoff.toml" in done.stderr
    assert "signoff init signoff.toml" in done.stderr
    missing = subprocess.run([str(EXE), "serve", "--port", "0", "--policy", "team.toml"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2 and "team.toml" in missing.stderr
    assert not (tmp_path / "x.db").exists()  # nothing was opened or created


@pytest.mark.slow
def test_serve_prints_and_reports_its_policy(tmp_path: Path) -> None:
    subprocess.run([str(EXE), "init", "policy.toml", "--root", str(tmp_path)], cwd=tmp_path,
                   check=True, capture_output=True, timeout=60)
    with subprocess.Popen([str(EXE), "serve", "--port", "0", "--policy", "policy.toml",
                           "--db", str(tmp_path / "x.db"), "--json"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            assert proc.stdout is not None
            start = json.loads(proc.stdout.readline())
            assert start["policy"] == "policy.toml" and start["policy_version"] == "1"
            deadline = time.monotonic() + 10
            while True:
                try:
                    health = httpx.get(start["url"] + "/healthz", timeout=2)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the server did not answer"
                    time.sleep(0.1)
            assert health.status_code == 200
            body = health.json()
            assert body["policy"] == "policy.toml" and body["policy_version"] == "1"
        finally:  # a failed assertion must not leave the server running
            proc.terminate()
            proc.wait(timeout=10)
