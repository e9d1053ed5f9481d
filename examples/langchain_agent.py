"""A LangChain v1 agent whose tool calls go through signoff.

Run it:  .venv/bin/python examples/langchain_agent.py

The model is scripted (no API key, deterministic): it reads a file, then wants to
run two shell commands in one turn. The read is allowed by the policy and runs at
once; the two commands need a human, so the run pauses once, showing both request
ids. Here a stand-in approver (in a thread) approves one and edits the other, as
a person would in the inbox (`signoff serve`) or with `signoff requests approve`;
`wait_and_resume` wakes the run when both are decided. The edited command is what
runs, and the AIMessage is rewritten to say so.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.langchain import (
    SignoffContext,
    SignoffMiddleware,
    pending_request_ids,
    wait_and_resume,
)

POLICY = """
[policy]
gated = ["execute"]

[workspace]
name = "example"
root = "{root}"

[tools.read_file]
paths = ["path"]
[tools.execute]
shell = "command"
"""


class ScriptedModel(FakeMessagesListChatModel):
    """Replays the given messages; a stand-in for a real chat model."""

    def bind_tools(self, tools: Any, **_: Any) -> Any:  # type: ignore[override]
        return self


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-example-"))
    (work / "ws").mkdir()
    (work / "ws" / "README.md").write_text("# example\n")
    gate = Gate(Policy.from_toml(POLICY.format(root=work / "ws"), source="example.toml"),
                SqliteStore(work / "signoff.db"), agent="example-agent")
    _, token = gate.add_user("reviewer")
    reviewer = gate.authenticate(token)

    @tool
    def read_file(path: str) -> str:
        """Read a file in the workspace."""
        return (work / "ws" / path).read_text()

    @tool
    def execute(command: str) -> str:
        """Run a shell command (here: only pretend)."""
        return f"ran: {command}"

    model = ScriptedModel(responses=[
        AIMessage(content="", tool_calls=[
            {"name": "read_file", "args": {"path": "README.md"}, "id": "call_1"}]),
        AIMessage(content="", tool_calls=[
            {"name": "execute", "args": {"command": "make build"}, "id": "call_2"},
            {"name": "execute", "args": {"command": "make deploy"}, "id": "call_3"}]),
        AIMessage(content="Built, and deployed to staging."),
    ])
    checkpoints = sqlite3.connect(work / "checkpoints.db", check_same_thread=False)
    agent = create_agent(model, tools=[read_file, execute],
                         middleware=[SignoffMiddleware(gate)],
                         checkpointer=SqliteSaver(checkpoints), context_schema=SignoffContext)
    config: dict[str, Any] = {"configurable": {"thread_id": "example-thread"}}

    out = agent.invoke({"messages": [{"role": "user", "content": "build and deploy"}]},
                       config, context=SignoffContext(principal="dev@example.com"))
    paused = pending_request_ids(agent, config)
    print(f"paused once, waiting on {len(paused)} request(s):")
    for request_id in paused:
        request = gate.store_get(request_id)
        print(f"  {request_id}  {request.tool}  {request.summary}")

    def reviewer_decides() -> None:  # what a person does in the inbox
        time.sleep(0.5)
        for request_id in paused:
            request = gate.store_get(request_id)
            if "deploy" in request.args:
                gate.decide(request_id, Decision.edit({"command": "make deploy ENV=staging"},
                                                      reason="staging first"),
                            identity=reviewer)
            else:
                gate.decide(request_id, Decision.approve(), identity=reviewer)

    threading.Thread(target=reviewer_decides).start()
    out = wait_and_resume(agent, gate, config, timeout=30)
    assert out is not None
    for message in out["messages"]:
        if isinstance(message, ToolMessage):
            print(f"tool {message.name}: {message.content!r}")
    print(f"model: {out['messages'][-1].content}")
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    checkpoints.close()
    gate.store.close()
    return 0 if verified.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
