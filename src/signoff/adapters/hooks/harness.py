"""What a coding agent's hook command is, to ``signoff hook <harness>``.

Each harness reads its event on stdin and expects its answer in its own form: JSON on
stdout, an exit code, or both (Claude Code reads ``permissionDecision``; a harness may
block only on a given exit code). A harness module gives a ``Harness``: ``pre`` answers a
pre-call event, ``post`` reports a result, ``refuse`` is the answer when the gate cannot
even be opened — always a refusal, never a pass. ``harness_named`` finds one by the name
the command line and the server's hook route use; each is imported only when named, so a
hook process loads one harness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from signoff.adapters.hooks.judging import HookGate, HookOptions
from signoff.errors import NotFound


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook process prints and how it exits."""

    stdout: str = ""
    exit_code: int = 0
    stderr: str = ""


class Harness(Protocol):
    agent: str  # the audit's name for it: claude-code, codex, gemini-cli

    def pre(self, gate: HookGate, raw: bytes, options: HookOptions) -> Reply: ...

    def post(self, gate: HookGate, raw: bytes, options: HookOptions) -> None: ...

    def refuse(self, reason: str) -> Reply: ...


def _claude_code() -> Harness:
    from signoff.adapters.claude_code import ClaudeCode  # noqa: PLC0415

    return ClaudeCode()


def _codex() -> Harness:
    from signoff.adapters.codex import Codex  # noqa: PLC0415

    return Codex()


def _gemini() -> Harness:
    from signoff.adapters.gemini import Gemini  # noqa: PLC0415

    return Gemini()


# Each harness by its command-line name.
HARNESSES: dict[str, Callable[[], Harness]] = {"claude-code": _claude_code, "codex": _codex,
                                               "gemini": _gemini}


def harness_named(name: str) -> Harness:
    """The harness called ``name`` (``NotFound``, code ``unknown_harness``, otherwise)."""
    make = HARNESSES.get(name)
    if make is None:
        raise NotFound(f"no coding-agent harness {name!r}: one of "
                       f"{', '.join(sorted(HARNESSES))}", code="unknown_harness")
    return make()
