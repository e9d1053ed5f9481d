"""A session's run as ``session.state`` keeps it (plain values: the framework serialises
the session), and its review mode fixed again at a resume.

The mode is fixed per run. One exception, as in the LangChain middleware: a mode chosen
for the thread *while this run waited on it* ("auto-approve this thread" on the approval
card) applies to the run it resumes — unless the application gave the run its mode."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode, RunContext


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
