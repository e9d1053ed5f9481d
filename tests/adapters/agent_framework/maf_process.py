"""One process of the restart test: ``pause DIR`` runs the agent until it pauses and
stores what an application keeps (the session, the requests); ``resume DIR`` is a new
process — a new gate over the same database, new agent objects — that resumes from it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agent_framework import AgentSession, Content
from maf_helpers import POLICY, Harness, ScriptedClient, call

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.agent_framework import request_ids, wake_up


def main(phase: str, where: Path) -> int:
    gate = Gate(Policy.from_toml(POLICY, source="maf.toml"), SqliteStore(where / "signoff.db"))
    h = Harness(gate=gate, ledger=where / "ledger.txt", alice=None, tmp=where)  # type: ignore[arg-type]
    try:
        if phase == "pause":
            agent = h.agent(ScriptedClient([[call("c1", "pay", to="bob", amount=5)]]))
            session = agent.create_session()
            paused = asyncio.run(agent.run("pay bob", session=session))
            (where / "session.json").write_text(json.dumps(session.to_dict()))
            (where / "requests.json").write_text(
                json.dumps([c.to_dict() for c in paused.user_input_requests]))
            print(" ".join(request_ids(paused)))
            return 0
        agent = h.agent(ScriptedClient([["paid after restart"]]))
        session = AgentSession.from_dict(json.loads((where / "session.json").read_text()))
        asked = [Content.from_dict(c) for c in json.loads((where / "requests.json").read_text())]
        done = asyncio.run(agent.run(wake_up(asked), session=session))
        print(done.text)
        return 0
    finally:
        gate.store.close()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], Path(sys.argv[2])))
