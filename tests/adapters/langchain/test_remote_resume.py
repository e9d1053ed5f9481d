"""A resume value never approves through a remote gate: with a ``Client``, approvers decide
through the server's API, so ``resume_decisions_as`` is refused when the middleware is
built — before any request is sent — and a name spelled to slip past a check is refused
on an in-process gate too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from lc_helpers import POLICY

from signoff import Gate, Policy
from signoff.adapters.langchain import SignoffMiddleware
from signoff.errors import ConfigurationError, InvalidInput
from signoff.remote import Client
from signoff.store.sqlite import SqliteStore


def _no_network(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"no request may be sent: {request.method} {request.url}")


def test_resume_decisions_are_refused_with_a_remote_gate(tmp_path: Path) -> None:
    policy = Policy.from_toml(POLICY.format(root=tmp_path), source="lc.toml")
    with Client("http://127.0.0.1:9", "so_agent", policy=policy,
                transport=httpx.MockTransport(_no_network)) as client, \
            pytest.raises(ConfigurationError) as refused:
        SignoffMiddleware(client, resume_decisions_as="alice")
    assert refused.value.code == "resume_needs_local_gate"


@pytest.mark.parametrize("name", ["alice\n", "alice\x00", "a" * 8192])
def test_a_resume_identity_spelled_otherwise_is_refused(tmp_path: Path, name: str) -> None:
    policy = Policy.from_toml(POLICY.format(root=tmp_path), source="lc.toml")
    gate = Gate(policy, SqliteStore(tmp_path / "signoff.db"), agent="agent-bot")
    try:
        gate.add_user("alice")
        with pytest.raises(InvalidInput):
            SignoffMiddleware(gate, resume_decisions_as=name)
    finally:
        gate.close()
