"""The harness of real servers works on both backends: users made by the CLI sign in over
HTTP, and a second server on the same database answers for the same users."""

from __future__ import annotations

import pytest
from procs import Live


@pytest.mark.slow
def test_a_real_server_answers_the_users_the_cli_made(live: Live) -> None:
    with live.client("boss") as boss, live.client() as anonymous:
        assert boss.get("/api/v1/requests").status_code == 200
        assert anonymous.get("/api/v1/requests").status_code == 401
    other = live.start()
    with other.client(live.tokens["ann"]) as ann:
        assert ann.get("/api/v1/requests").status_code == 200
    assert live.server.start_line["backend"] == live.backend


@pytest.mark.slow
def test_a_real_server_names_its_policy_on_both_backends(live: Live) -> None:
    """Issue 12, item 1, on PostgreSQL as on SQLite: the start-up line and /healthz name
    the policy the server judges by, and its version."""
    assert live.server.start_line["policy"] == "signoff.toml"
    assert live.server.start_line["policy_version"]
    with live.client() as anonymous:
        health = anonymous.get("/healthz").json()
    assert (health["policy"], health["policy_version"], health["backend"]) == (
        "signoff.toml", live.server.start_line["policy_version"], live.backend)
