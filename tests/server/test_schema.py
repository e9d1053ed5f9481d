"""schemathesis against the running server's own ``/openapi.json``: generated requests —
valid and invalid — must never get a 5xx, nor an answer its schema does not allow.

Run on SQLite (an in-process server) and on PostgreSQL (a real ``signoff serve``),
through schemathesis's own command line (its pytest plugin does not load on
this pytest) against a real uvicorn. Checks: every one but
``positive_data_acceptance``: the API deliberately refuses some schema-valid
bodies — arguments with integers beyond ±(2^53−1), lone surrogates or more
than 64 levels, which JSON Schema cannot express — with 422 and a stable code.
The events stream is left out (it never ends by design; it has its own test).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from procs import database, prepare, start_server
from server_helpers import Served, propose_make, serve


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, long_poll_max=0.2)


def _schemathesis(url: str, token: str, tmp_path: Path) -> None:
    st = Path(sys.executable).with_name("schemathesis")
    result = subprocess.run(
        [str(st), "run", f"{url}/openapi.json",
         "--header", f"Authorization: Bearer {token}",
         "--max-examples", "20", "--seed", "20261130", "--exclude-path", "/api/v1/events",
         "--exclude-checks", "positive_data_acceptance",
         "--report", "junit", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": ""})
    tail = "\n".join(result.stdout.splitlines()[-60:])
    assert result.returncode == 0, tail
    assert "Server error" not in result.stdout
    # Every operation the document lists was run (but the excluded event stream).
    paths = httpx.get(f"{url}/openapi.json", timeout=30).json()["paths"]
    operations = sum(len(item) for path, item in paths.items() if path != "/api/v1/events")
    assert f"Tested: {operations}" in result.stdout, tail


@pytest.mark.slow
def test_api_conforms_to_its_schema(live: Served, tmp_path: Path) -> None:
    propose_make(live, "t-schema")  # a real pending request among the made-up ids
    _schemathesis(live.url, live.admin, tmp_path)


@pytest.mark.slow
def test_api_conforms_to_its_schema_on_postgresql(tmp_path: Path) -> None:
    """The same run against a real ``signoff serve`` on PostgreSQL, where NUL bytes and
    oversized ids used to surface as 500s and 503s."""
    with database("postgres", tmp_path) as db:
        tokens = prepare("postgres", db, tmp_path)
        with (tmp_path / "signoff.toml").open("a", encoding="utf-8") as policy:
            policy.write("\n[server]\nlong_poll_max = 0.2\n")
        server = start_server(db, tmp_path)
        try:
            with server.client(tokens["bot"]) as bot:
                answer = bot.post("/api/v1/calls", json={
                    "tool": "execute", "args": {"command": "make build"}, "call_id": "c1",
                    "context": {"thread_id": "t-schema"}}).json()
                assert answer["status"] == "pending", answer
            _schemathesis(server.url, tokens["boss"], tmp_path)
        finally:
            server.stop()
