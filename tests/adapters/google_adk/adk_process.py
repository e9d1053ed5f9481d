"""One process of the restart test: ``pause DIR`` runs the agent until it pauses and prints
the request id; ``resume DIR`` — a new process, new gate, new agent and runner — resumes
the session from the session service's SQLite file and prints what ran."""

from __future__ import annotations

import sys
from pathlib import Path

from adk_helpers import POLICY, Harness, calls, run, stored_session, text, user

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.google_adk import pauses, resume_message


def main(phase: str, directory: Path) -> None:
    gate = Gate(Policy.from_toml(POLICY, source="adk.toml"), SqliteStore(directory / "signoff.db"),
                agent="agent-bot")
    h = Harness(gate=gate, ledger=directory / "ledger.txt", alice=None,  # type: ignore[arg-type]
                tmp=directory, sessions_db=directory / "sessions.db")
    if phase == "pause":
        runner, _ = h.runner([calls(("transfer", {"to": "bob", "amount": 5}, "c1"))])
        run(runner, user("pay bob"), create=True)
        (pause,) = pauses(stored_session(runner).events)
        print(pause.request_id)
    else:
        runner, _ = h.runner([text("paid")])
        run(runner, resume_message(stored_session(runner)))
        print("ran:", h.ran())
    gate.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
