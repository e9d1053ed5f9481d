"""The clarification tool is withdrawn when nobody would answer it (full review mode, an
unattended run): not offered to the model, the system prompt says why, a forced call is
refused by the gate; and a resume stays in the signoff run its prompt started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyd_helpers import POLICY, Harness, calls, text
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.pydantic_ai import Paused, Signoff, request_ids
from signoff.adapters.telling import FULL_MODE_NOTE
from signoff.decisions import Decision

ASKING = POLICY.replace('version = "pyd-1"', 'version = "pyd-1"\nclarification_tool = "ask_user"'
                        ) + "\n[tools.ask_user]\n"


class Seen:
    """A scripted model that keeps the tools and the instructions of each call."""

    def __init__(self, turns: list[ModelResponse]) -> None:
        self.turns = turns
        self.tools: list[list[str]] = []
        self.instructions: list[str | None] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tools.append([t.name for t in info.function_tools])
        self.instructions.append(info.instructions)
        return self.turns.pop(0) if self.turns else text("(script ended)")


def asking_agent(gate: Gate, seen: Seen, **options: Any) -> tuple[Agent[None, Any], list[str]]:
    asked: list[str] = []

    def ask_user(question: str) -> str:
        """Ask the user a clarifying question."""
        asked.append(question)
        return "main"

    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    agent: Agent[None, Any] = Agent(FunctionModel(seen), output_type=[str, DeferredToolRequests],
                                    capabilities=[Signoff(gate, **options)],
                                    tools=[ask_user, read_file])
    return agent, asked


@pytest.fixture
def gate(tmp_path: Path) -> Any:
    made = Gate(Policy.from_toml(ASKING, source="asking.toml"), SqliteStore(tmp_path / "s.db"))
    yield made
    made.close()


@pytest.mark.parametrize("options", [{"interaction_mode": "scheduled"}, {"review_mode": "full"}])
def test_nobody_to_answer_withdraws_the_clarification_tool(gate: Gate,
                                                           options: dict[str, str]) -> None:
    seen = Seen([calls(("ask_user", {"question": "which?"}, "q1")), text("ok")])
    agent, asked = asking_agent(gate, seen, **options)
    result = agent.run_sync("go")
    assert result.output == "ok" and asked == []  # forced anyway: refused, not run
    assert all("ask_user" not in tools and "read_file" in tools for tools in seen.tools)
    assert all(FULL_MODE_NOTE in (i or "") for i in seen.instructions)
    [answer] = [p for m in result.all_messages() for p in getattr(m, "parts", ())
                if getattr(p, "tool_call_id", None) == "q1" and hasattr(p, "outcome")]
    assert answer.outcome == "failed" and "no one will answer" in str(answer.content)


def test_the_thread_mode_an_operator_set_withdraws_it(gate: Gate) -> None:
    gate.set_thread_mode("conv-full", "full")
    seen = Seen([text("ok")])
    agent, _ = asking_agent(gate, seen)
    agent.run_sync("go", conversation_id="conv-full")
    assert seen.tools == [["read_file"]] and FULL_MODE_NOTE in (seen.instructions[0] or "")


def test_someone_to_answer_keeps_it(gate: Gate) -> None:
    seen = Seen([calls(("ask_user", {"question": "which?"}, "q1")), text("ok")])
    agent, asked = asking_agent(gate, seen)
    assert agent.run_sync("go").output == "ok"
    assert asked == ["which?"] and "ask_user" in seen.tools[0]
    assert not any(FULL_MODE_NOTE in (i or "") for i in seen.instructions)


def test_a_resume_stays_in_the_run_its_prompt_started(h: Harness) -> None:
    """Pydantic AI gives each resume a new run id; signoff's run is the prompt's, so a
    request made after a resume belongs to the run that paused, as the first one did."""
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1"))])
    first = Paused.of(agent.run_sync("ship it"))
    rid = request_ids(first.requests)["d1"]
    again = Paused.of(agent.run_sync(**first.resume_kwargs()))  # undecided: paused again
    assert request_ids(again.requests) == {"d1": rid}
    h.gate.decide(rid, Decision.approve(), identity=h.alice)
    resumed, _ = h.agent([calls(("transfer", {"amount": 1, "to": "bob"}, "t1"))])
    later = Paused.of(resumed.run_sync(**again.resume_kwargs()))
    run = h.gate.get_request(rid).run_id
    assert run and h.gate.get_request(request_ids(later.requests)["t1"]).run_id == run
