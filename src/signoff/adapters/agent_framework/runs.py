"""A session's run as ``session.state`` keeps it (plain values: the framework serialises
the session), and its review mode fixed again at a resume. ``Runs`` finds the run of a
model turn or a call: both parts of ``SignoffMiddleware`` need it, the model turn to know
whether a human may be asked (what the model is offered), the call to propose it.

The mode is fixed per run. One exception, as in the LangChain middleware: a mode chosen
for the thread *while this run waited on it* ("auto-approve this thread" on the approval
card) applies to the run it resumes — unless the application gave the run its mode."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from agent_framework import AgentSession

from signoff.adapters.agent_framework import child
from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode, RunContext

STATE_KEY = "signoff"  # session.state[STATE_KEY]: the run the session's calls belong to


class Runs:
    """The run of a session (or, without one, of the configured thread), started at its
    first model turn or call with the application's context; inside another gated call
    (a subagent), the parent's run (``child``)."""

    def __init__(self, gate: GateProtocol, *, principal: str | None,
                 interaction_mode: InteractionMode, review_mode: ReviewMode | None,
                 thread_id: str | None) -> None:
        self.gate = gate
        self.principal = principal
        self.interaction_mode = interaction_mode
        self.review_mode = review_mode
        self.thread_id = thread_id
        self._sessionless: dict[str | None, RunContext] = {}  # by thread
        self._starting = threading.Lock()

    def of(self, session: AgentSession | None, *, resumed: bool = False) -> RunContext:
        """The run, kept in ``session.state`` so a resume in a new process finds it; at a
        resume (``resumed``), its mode fixed again if one was chosen for it meanwhile."""
        inside = child.child_run()
        if inside is not None:
            return inside
        with self._starting:  # a turn's calls run at once: one run starts, not one each
            return self._of(session, resumed)

    def known(self, session: AgentSession | None, *, resumed: bool = False
              ) -> RunContext | None:
        """The run when nothing need be read or written for it (a subagent's, or a run
        already started and not being resumed), found on the event loop; ``None``: ``of``
        in a worker thread. Most calls of a run take this way, and a thread hop would cost
        more than the rest of the call's judging."""
        inside = child.child_run()
        if inside is not None:
            return inside
        if resumed:  # a mode chosen meanwhile may have to be fixed again (``refixed``)
            return None
        if session is None:
            return self._sessionless.get(self.thread_id)
        kept = session.state.get(STATE_KEY)
        if isinstance(kept, Mapping) and kept.get("run_id"):
            return run_of(kept, session.session_id)
        return None

    def _of(self, session: AgentSession | None, resumed: bool) -> RunContext:
        if session is None:
            run = self._sessionless.get(self.thread_id)
            if run is None:
                run = self._sessionless[self.thread_id] = self._start(self.thread_id)
            return run
        kept = session.state.get(STATE_KEY)
        if isinstance(kept, Mapping) and kept.get("run_id"):
            run = run_of(kept, session.session_id)
            again = refixed(self.gate, run, kept) if resumed else None
            if again is None:
                return run
            run, session.state[STATE_KEY] = again
            return run
        run = self._start(session.session_id)
        session.state[STATE_KEY] = entry(
            run, mode_from="explicit" if self.review_mode is not None else "thread")
        return run

    def _start(self, thread: str | None) -> RunContext:
        return self.gate.start_run(RunContext(
            thread_id=thread, run_id="run_" + uuid.uuid4().hex, review_mode=self.review_mode,
            interaction_mode=self.interaction_mode, principal=self.principal))


def entry(run: RunContext, *, mode_from: str, mode_at: float | None = None) -> dict[str, Any]:
    assert run.review_mode is not None
    return {"run_id": run.run_id, "review_mode": run.review_mode.value,
            "interaction_mode": run.interaction_mode.value, "principal": run.principal,
            "mode_from": mode_from, "mode_at": mode_at}


def run_of(kept: Mapping[str, Any], thread: str) -> RunContext:
    return RunContext(thread_id=thread, run_id=str(kept["run_id"]),
                      review_mode=ReviewMode(kept["review_mode"]),
                      interaction_mode=InteractionMode(kept["interaction_mode"]),
                      principal=kept.get("principal"))


def refixed(gate: GateProtocol, run: RunContext, kept: Mapping[str, Any]
            ) -> tuple[RunContext, dict[str, Any]] | None:
    """The run with its mode fixed again if the thread's mode was chosen for this run
    since it was last fixed; ``None`` if not."""
    if kept.get("mode_from", "thread") != "thread" or not run.thread_id or not run.run_id:
        return None
    memory = gate.thread_memory(run.thread_id)
    if memory.mode_run != run.run_id or memory.mode_at is None \
            or memory.mode_at == kept.get("mode_at"):
        return None
    fixed = gate.context_for(dataclasses.replace(run, review_mode=None, mode_setter=None))
    if fixed.review_mode is None:
        fixed = dataclasses.replace(fixed, review_mode=gate.config.default_review_mode)
    return fixed, entry(fixed, mode_from="thread", mode_at=memory.mode_at)
