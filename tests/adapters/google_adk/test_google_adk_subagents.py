"""An agent run as a tool (ADK's ``AgentTool``) under ``SignoffPlugin``: its calls are its
parent call's subagent's — proposed on the parent's thread, labelled ``parent_call`` — and
its ask waits in place: an approval within ``subagent_wait`` runs the call there, once. The
parent's own calls after it carry no parent label (what the plugin held ends with the call)."""

from __future__ import annotations

import threading
import time

import pytest
from adk_helpers import APP, SESSION, Harness, ScriptedLlm, calls, run, stored_session, text, user
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.agent_tool import AgentTool

from signoff import Decision
from signoff.adapters.google_adk import SignoffPlugin, pauses
from signoff.model import RequestStatus

# ADK's AgentTool starts its child's Runner with the deprecated ``plugins=`` itself.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The `plugins` argument is deprecated:DeprecationWarning")


def approve_when_asked(h: Harness, deadline: float = 20.0) -> threading.Thread:
    """Alice, approving the thread's first pending request as soon as it is there."""
    def approve() -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            pending = h.gate.pending_on_thread(SESSION)
            if pending:
                h.gate.decide(pending[0].id, Decision.approve(), identity=h.alice)
                return
            time.sleep(0.02)
    worker = threading.Thread(target=approve)
    worker.start()
    return worker


def test_an_agent_tools_ask_waits_in_place_and_an_approval_runs_it_once(h: Harness) -> None:
    helper = LlmAgent(name="helper", description="Pays.", tools=h.tools(),
                      model=ScriptedLlm(turns=[calls(("transfer", {"to": "bob", "amount": 5},
                                                      "k1")), text("paid bob")]))
    root = LlmAgent(name="root", tools=[AgentTool(helper), *h.tools()],
                    model=ScriptedLlm(turns=[calls(("helper", {"request": "pay bob"}, "p1")),
                                             calls(("transfer", {"to": "eve", "amount": 7},
                                                    "c2"))]))
    runner = Runner(app=App(name=APP, root_agent=root,
                            plugins=[SignoffPlugin(h.gate, subagent_wait=20)]),
                    session_service=SqliteSessionService(str(h.sessions_db)))
    worker = approve_when_asked(h)
    run(runner, user("pay"), create=True)
    worker.join()
    assert h.ran() == ["transfer bob 5"]  # in place, during the parent's call
    asked = {r.call_id: r for r in h.gate.thread_requests(SESSION)}
    child, parent = asked["k1"], asked["c2"]
    assert (child.call_id, child.parent_call, child.status) == (
        "k1", "p1", RequestStatus.SUCCEEDED)
    # The parent's next call is its own: not labelled, and it pauses the session as usual.
    assert (parent.call_id, parent.parent_call, parent.status) == (
        "c2", None, RequestStatus.PENDING)
    [pause] = pauses(stored_session(runner).events)
    assert pause.request_id == parent.id
