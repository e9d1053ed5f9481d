"""The same flow with the gate over HTTP: a ``Client`` to a real ``signoff serve`` (slow: a
server process). The stored run state resumes with a new ``Client`` and new agent objects."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import Agent, RunState
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


async def test_a_remote_gate_answers_a_hosted_mcp_call_once(tmp_path: Path) -> None:
    from lc_remote import RemoteGate
    from test_oai_hosted import ISSUE, agent, answers, asks, hosted, provider

    from signoff.adapters.openai_agents import gate_agent
    from signoff.errors import ConfigurationError
    from signoff.model import RequestStatus

    root = tmp_path / "ws"
    root.mkdir()
    text = POLICY.format(root=root)
    remote = RemoteGate(text, Policy.from_toml(text, source="oai.toml"), tmp_path)
    h = Harness(gate=remote, ledger=tmp_path / "ledger.txt",  # type: ignore[arg-type]
                alice=remote.alice, tmp=tmp_path, policy_text=text)
    try:
        token = remote.http.headers["Authorization"].removeprefix("Bearer ")
        with Client(remote.server.url, token) as blind, pytest.raises(ConfigurationError) as no:
            gate_agent(Agent(name="ops", tools=[hosted()]), blind, thread_id=THREAD)
        assert no.value.code == "no_policy"  # a hosted call's name needs the policy

        gated, _ = agent(h, [[asks("mcpr_1", "create_issue", ISSUE)]])
        result = await Runner.run(gated, "file it")
        [one] = await paused(result)
        assert one.request_id and one.tool == "gh__create_issue"
        stored = result.to_state().to_string()
        remote.decide(one.request_id, Decision.approve(), identity=remote.alice)
        with Client(remote.server.url, token, policy=remote.policy) as again:
            sent = []
            for _ in range(2):  # resumed twice: approved once
                fresh, model = agent(h, [provider()], gate=again)
                state = await RunState.from_string(fresh, stored)
                assert await apply_decisions(state) == []
                await Runner.run(fresh, state)
                sent += [a["approve"] for a in answers(model, "mcpr_1")]
        assert sent == [True, False]
        assert remote.get_request(one.request_id).status is RequestStatus.SUCCEEDED
        assert remote.store.verify_audit().ok
    finally:
        remote.close()
