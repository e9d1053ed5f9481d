"""The main flow with the gate over HTTP: ``SignoffMiddleware`` on a ``signoff.remote.Client``
to a real ``signoff serve`` (a subprocess: slow). The ask pauses the framework's run, the
approver decides through the API with her own token, a new client and new agent objects
resume from the stored session, the call runs once, and a replayed wake-up runs nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lc_remote import RemoteGate
from maf_helpers import POLICY, Harness, ScriptedClient, call, restored, stored

from signoff import Policy
from signoff.adapters.agent_framework import request_ids, wake_up
from signoff.decisions import Decision
from signoff.model import RequestStatus
from signoff.remote import Client


@pytest.mark.slow
def test_an_ask_over_http_pauses_and_a_new_client_resumes_it_once(tmp_path: Path) -> None:
    remote = RemoteGate(POLICY, Policy.from_toml(POLICY, source="maf.toml"), tmp_path)
    try:
        h = Harness(gate=remote, ledger=tmp_path / "ledger.txt",  # type: ignore[arg-type]
                    alice=remote.alice, tmp=tmp_path)
        client = ScriptedClient([[call("c1", "balance", account="A"),
                                  call("c2", "pay", to="bob", amount=5),
                                  call("c3", "wipe", account="A")]])
        agent = h.agent(client)
        session = agent.create_session()
        paused = asyncio.run(agent.run("go", session=session))
        (rid,) = request_ids(paused)
        assert h.lines() == ["balance A"]  # the read ran, the wipe was denied
        kept, asked = stored(session), list(paused.user_input_requests)
        finance, _ = remote.add_user("fin", roles=["finance"])
        remote.decide(rid, Decision.approve(), identity=finance)

        token = remote.http.headers["Authorization"].split()[1]  # the agent's own
        with Client(remote.server.url, token, policy=remote.policy) as fresh:
            h2 = Harness(gate=fresh, ledger=h.ledger,  # type: ignore[arg-type]
                         alice=remote.alice, tmp=tmp_path)
            client2 = ScriptedClient([["paid"], ["again"]])
            agent2 = h2.agent(client2)
            session2 = restored(kept)
            done = asyncio.run(agent2.run(wake_up(asked), session=session2))
            assert done.text == "paid"
            assert h.lines() == ["balance A", "pay bob 5"]
            asyncio.run(agent2.run(wake_up(asked), session=restored(kept)))  # replayed
            assert h.lines() == ["balance A", "pay bob 5"]
        assert remote.store.get_request(rid).status is RequestStatus.SUCCEEDED
    finally:
        remote.close()
