"""The same flow with the gate over HTTP: a ``Client`` to a real ``signoff serve`` (slow: a
server process). The stored run state resumes with a new ``Client`` and new agent objects."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import RunState
from oai_helpers import POLICY, THREAD, Harness, Runner, call, done, outputs

from signoff import Decision, Policy
from signoff.adapters.openai_agents import apply_decisions, paused
from signoff.remote import Client

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def test_a_remote_gate_pauses_resumes_and_runs_once(tmp_path: Path) -> None:
    from lc_remote import RemoteGate

    root = tmp_path / "ws"
    root.mkdir()
    text = POLICY.format(root=root)
    remote = RemoteGate(text, Policy.from_toml(text, source="oai.toml"), tmp_path)
    h = Harness(gate=remote, ledger=tmp_path / "ledger.txt",  # type: ignore[arg-type]
                alice=remote.alice, tmp=tmp_path, policy_text=text)
    try:
        agent, _ = h.agent([[call("read_file", {"path": "a.txt"}, "c0"),
                             call("deploy", {"env": "prod"}, "c1")]])
        result = await Runner.run(agent, "ship")
        assert h.ran() == ["read_file a.txt"]
        [one] = await paused(result)
        assert one.pending and one.request_id
        stored = result.to_state().to_string()
        remote.decide(one.request_id, Decision.edit({"env": "staging"}, reason="first"),
                      identity=remote.alice)
        token = remote.http.headers["Authorization"].removeprefix("Bearer ")
        # a new process's client to the same server
        with Client(remote.server.url, token, policy=remote.policy) as again:
            for _ in range(2):  # resumed twice: it runs once
                fresh, _ = h.agent([done("Deployed.")], gate=again)
                state = await RunState.from_string(fresh, stored)
                assert await apply_decisions(state) == []
                final = await Runner.run(fresh, state)
                assert outputs(final)["c1"].startswith("deployed staging")
        assert h.ran() == ["read_file a.txt", "deploy staging"]
        assert remote.store.verify_audit().ok
        assert [r.thread_id for r in remote.thread_requests(THREAD)] == [THREAD]
    finally:
        remote.close()
