"""What a coding agent's hook command is, to ``signoff hook <harness>``.

Each harness reads its event on stdin and expects its answer in its own form: JSON on
stdout, an exit code, or both (Claude Code reads ``permissionDecision``; a harness may
block only on a given exit code). A harness module gives a ``Harness``: ``pre`` answers a
pre-call event, ``post`` reports a result, ``refuse`` is the answer when the gate cannot
even be opened — always a refusal, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from signoff.adapters.hooks.judging import HookOptions
from signoff.kernel.protocol import GateProtocol


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook process prints and how it exits."""

    stdout: str = ""
    exit_code: int = 0
    stderr: str = ""


class Harness(Protocol):
    agent: str  # the audit's name for it: claude-code, codex, gemini-cli

    def pre(self, gate: GateProtocol, raw: bytes, options: HookOptions) -> Reply: ...

    def post(self, gate: GateProtocol, raw: bytes, options: HookOptions) -> None: ...

    def refuse(self, reason: str) -> Reply: ...
