"""``Policy``: a loaded ``signoff.toml`` plus the memory and reviewer it consults.

``Policy.evaluate(call, context)`` is the one entry point: a call and its run
context in, one explained ``Verdict`` out. The order of evaluation lives in
``evaluation.py``, asking by mode in ``asking.py``, and the shortcut for tools
whose arguments cannot change the verdict in ``quick.py``. Evaluation touches no
database and runs no tool: memory of rejections and grants comes in through
``DecisionMemory``, and the one thing it may call out to is the auto reviewer it
holds (``reviewing.py``, the port): in ``auto`` mode, for a gated call within the
bound. That may be a model over the network; every other mode calls nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from signoff.model import Reason, RunContext, Step, ToolCall, Verdict
from signoff.policy.config import load_policy_file, parse_policy
from signoff.policy.evaluation import Evaluation
from signoff.policy.hints import HintBook
from signoff.policy.matching import ToolView, build_view
from signoff.policy.memory import DecisionMemory, Memory
from signoff.policy.quick import quick_verdict
from signoff.policy.reviewing import Reviewer, configured_reviewer
from signoff.policy.spec import PolicyConfig, Rule
from signoff.policy.workspace import Workspace

_DEFAULT_CONTEXT = RunContext()
_MAX_VIEWS = 4096


class Policy:
    """A loaded policy plus the memory and reviewer it consults. Safe to share between threads."""

    def __init__(
        self,
        config: PolicyConfig,
        *,
        memory: DecisionMemory | None = None,
        reviewer: Reviewer | None = None,
        clock: Callable[[], float] = time.time,
        hints: HintBook | None = None,
    ) -> None:
        self.config = config
        # What an MCP server's annotations add (signoff.policy.hints); shared by the
        # policies of one gate, filled by the MCP proxy from the server's tool list.
        self.hints = hints if hints is not None else HintBook()
        self._hints_seen = self.hints.generation
        self.memory: DecisionMemory = memory if memory is not None else Memory()
        # None: the reviewer [review] names, built now so a missing key or package shows at load.
        self.reviewer: Reviewer = reviewer if reviewer is not None else configured_reviewer(
            config.review)
        self.clock = clock
        self.workspace: Workspace | None = None
        if config.workspace is not None:
            ws = config.workspace
            self.workspace = Workspace(ws.root, name=ws.name, allowlist=ws.allowlist)
        self._views: dict[str, ToolView] = {}
        self._reasons: dict[tuple[int, Step, str], Reason] = {}
        # (tool, argv, literal) -> the first rule admitting that command (evaluation.py)
        self._command_rules: dict[tuple[str, tuple[str, ...], tuple[bool, ...]],
                                  tuple[Rule | None, bool, tuple[str, ...]]] = {}

    @property
    def version(self) -> str:
        return self.config.version

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Policy:
        return cls(load_policy_file(path), **kwargs)

    @classmethod
    def from_toml(cls, text: str, *, source: str = "<policy>", **kwargs: Any) -> Policy:
        return cls(parse_policy(text, source=source), **kwargs)

    def view(self, tool: str) -> ToolView:
        if self._hints_seen != self.hints.generation:  # the server listed its tools anew
            self._hints_seen = self.hints.generation
            self._views = {}
        view = self._views.get(tool)
        if view is None:
            view = build_view(self.config, tool, self.hints.get(tool))
            if len(self._views) >= _MAX_VIEWS:
                self._views.clear()
            self._views[tool] = view
        return view

    def evaluate(self, call: ToolCall, context: RunContext | None = None) -> Verdict:
        context = context or _DEFAULT_CONTEXT
        # A tool whose arguments cannot change the verdict skips the steps that read them.
        return quick_verdict(self, call, context) or Evaluation(self, call, context).run()

    def evaluate_turn(
        self, calls: Sequence[ToolCall], context: RunContext | None = None
    ) -> list[Verdict]:
        """Evaluate one model turn; calls sharing an id are all denied (no decision could bind)."""
        counts: dict[object, int] = {}
        for call in calls:
            counts[call.id] = counts.get(call.id, 0) + 1
        out = []
        context = context or _DEFAULT_CONTEXT
        for call in calls:
            if isinstance(call.id, str) and call.id and counts[call.id] > 1:
                out.append(Evaluation(self, call, context).deny(
                    Step.WELL_FORMED, "duplicate_call_id",
                    f"Tool call id {call.id!r} appears {counts[call.id]} times in one turn; "
                    "no decision can be bound to it, so none of those calls was run."))
            else:
                out.append(self.evaluate(call, context))
        return out
