"""A deepagents research agent whose tool calls go through signoff, in the three modes.

Run it:  .venv/bin/python examples/deepagents_agent.py   (needs 'signoff[deepagents]')

Shaped like the system of seed 000 (a research agent's web UI): `create_deep_agent`
over a `LocalShellBackend` in a temporary workspace, with `execute`, `run_in_background`
and `schedule_task` reviewed by mode and an `ask_user` clarification tool; its file tools
take virtual paths (`/notes.md`). The policy is `signoff init --preset deepagents`. The
models are scripted (no API key, deterministic). Three conversations, one per mode:

- manual: the model asks the user a question (answered), then wants to run a command:
  the run pauses until a person approves it (here a stand-in approver in a thread, as in
  the inbox or with `signoff requests approve`), then the command runs once;
- auto:   the same command is approved by the reviewer on the human's behalf (medium
  risk); scheduling a nightly job (high risk) still waits for a person;
- full:   `ask_user` is withdrawn from the model, and gated calls run without review;
  a `task` subagent does part of the work and its calls are judged like its parent's.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import LocalShellBackend
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.deepagents import gate_subagents
from signoff.adapters.langchain import SignoffContext, SignoffMiddleware, wait_and_resume
from signoff.policy.starter import starter_toml


class ScriptedModel(FakeMessagesListChatModel):
    """Replays the given messages; a stand-in for a real chat model. Records the tools it
    was offered, to show that full mode withdraws `ask_user`."""

    offered: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **_: Any) -> Any:  # type: ignore[override]
        self.offered.append(sorted(getattr(t, "name", "") for t in tools))
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id,
                                              "type": "tool_call"}])


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-deepagents-"))
    root = work / "ws"
    root.mkdir()
    (root / "notes.md").write_text("# experiment\nrun the baseline, then the ablation\n")
    gate = Gate(Policy.from_toml(starter_toml(str(root), "deepagents"), source="signoff.toml"),
                SqliteStore(work / "signoff.db"), agent="research-agent")
    _, token = gate.add_user("reviewer")
    reviewer = gate.authenticate(token)

    @tool
    def ask_user(question: str) -> str:
        """Ask the user a clarifying question and wait for the answer."""
        return "use the small dataset"

    @tool
    def run_in_background(command: str) -> str:
        """Start a long shell command in the background."""
        return f"started in the background: {command}"

    @tool
    def schedule_task(cron: str, command: str) -> str:
        """Schedule a command to run on a cron schedule."""
        return f"scheduled {command!r} at {cron!r}"

    tools = [ask_user, run_in_background, schedule_task]

    def conversation(mode: str, parent: list[AIMessage], child: list[AIMessage]) -> Any:
        backend = LocalShellBackend(root_dir=root)  # virtual paths, as deepagents defaults
        middleware = SignoffMiddleware(gate)
        model = ScriptedModel(responses=parent)
        agent = create_deep_agent(
            model=model, tools=tools, backend=backend, middleware=[middleware],
            subagents=gate_subagents(middleware, model=ScriptedModel(responses=child),
                                     tools=tools, backend=backend),
            checkpointer=InMemorySaver(), context_schema=SignoffContext)
        config: dict[str, Any] = {"configurable": {"thread_id": f"chat-{mode}"}}
        out = agent.invoke({"messages": [{"role": "user", "content": "run the experiment"}]},
                           config, context=SignoffContext(review_mode=mode))
        if "__interrupt__" in out:
            for request in gate.store.list_requests(thread_id=f"chat-{mode}"):
                print(f"  [{mode}] waiting for a person: {request.tool}: {request.summary} "
                      f"(risk {request.risk.value})")
            threading.Thread(target=approve_pending, args=(f"chat-{mode}",)).start()
            out = wait_and_resume(agent, gate, config, timeout=30)
        for message in out["messages"]:
            if isinstance(message, ToolMessage):
                print(f"  [{mode}] {message.name}: {str(message.content).splitlines()[0]!r}")
        print(f"  [{mode}] ask_user offered to the model: "
              f"{all('ask_user' in offered for offered in model.offered)}")
        return out

    def approve_pending(thread_id: str) -> None:  # what a person does in the inbox
        time.sleep(0.3)
        for request in gate.store.list_requests(thread_id=thread_id):
            gate.decide(request.id, Decision.approve(), identity=reviewer)

    print("manual:")
    conversation("manual", [
        call("ask_user", {"question": "which dataset?"}, "m1"),
        call("execute", {"command": "echo baseline > baseline.txt"}, "m2"),
        AIMessage(content="Baseline done.")], [])
    print("auto:")
    conversation("auto", [
        call("execute", {"command": "echo ablation > ablation.txt"}, "a1"),
        call("schedule_task", {"cron": "0 2 * * *", "command": "make report"}, "a2"),
        AIMessage(content="Ablation done, report scheduled.")], [])
    print("full:")
    conversation("full", [
        call("task", {"description": "summarise the notes",
                      "subagent_type": "general-purpose"}, "f1"),
        call("run_in_background", {"command": "make sweep"}, "f2"),
        AIMessage(content="Summary written, sweep started.")], [
        call("read_file", {"file_path": "/notes.md"}, "s1"),
        call("write_file", {"file_path": "/summary.md", "content": "baseline, ablation\n"},
             "s2"),
        AIMessage(content="wrote /summary.md")])

    print("workspace:", ", ".join(sorted(p.name for p in root.iterdir())))
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    gate.store.close()
    return 0 if verified.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
