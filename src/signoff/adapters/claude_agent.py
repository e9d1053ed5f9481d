"""The Claude Agent SDK (``claude-agent-sdk``): the tool calls of its agents judged by the gate.

The SDK runs the Claude Code CLI and asks this process about tool calls in two ways;
signoff answers either one through the harness-neutral ``signoff.adapters.hooks``, under
the agent name ``claude-agent-sdk``:

- ``signoff_hooks(gate)`` is the ``hooks`` of ``ClaudeAgentOptions``: ``PreToolUse``
  judges every call as ``signoff hook claude-code`` does (allow; deny with the reason; an
  ask waits up to ``wait_seconds`` for a human, inside the hook's timeout); ``PostToolUse``
  reports the result. An approver's edit is denied, naming the approved arguments.
- ``signoff_can_use_tool(gate)`` is a ``can_use_tool`` callback, given with its own
  ``.hooks``. The CLI asks ``can_use_tool`` only about calls its own rules would prompt
  for (a read or an ``ls`` never reaches it), so its ``PreToolUse`` hook answers "ask" for
  every call — the CLI then asks the callback, whatever its rules or permission mode — and
  tells the callback the call's session, which ``can_use_tool`` is not given. Its wait has
  no hook timeout to stay inside, and an approver's edit runs: the approved arguments,
  their hash checked against the approval, are the SDK's ``updated_input``.

The gate's blocking calls run in a worker thread, so a wait for a human never blocks the
SDK's event loop; a callback the SDK cancels stops waiting and claims nothing. Every
failure — input that does not read, a gate that fails, a callback without its hooks — is
a deny: what the gate cannot see, a human decides. See docs/coding-agents.md.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path
from typing import Any, cast

from signoff.adapters.claude_code.hook import decision, post_tool_use, read_event
from signoff.adapters.hooks.judging import Answer, HookOptions, judge
from signoff.canonical import parse_args
from signoff.extras import absent
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.kernel.protocol import GateProtocol

try:
    import anyio.to_thread
    from claude_agent_sdk import (
        HookContext,
        HookInput,
        HookJSONOutput,
        HookMatcher,
        PermissionResult,
        PermissionResultAllow,
        PermissionResultDeny,
        ToolPermissionContext,
    )
    from claude_agent_sdk.types import HookEvent
except ImportError as exc:
    raise absent("claude-agent", __name__, exc) from exc

AGENT = "claude-agent-sdk"
WAIT = 45.0  # signoff_hooks: inside the hook's timeout (HOOK_MARGIN more)
HOOK_MARGIN = 15.0
CAN_USE_TOOL_WAIT = 300.0  # signoff_can_use_tool: no hook timeout bounds it
_SLICE = 2.0  # a wait is checked for cancellation this often
_ANNOUNCED = 1024  # sessions of announced calls kept for can_use_tool at most

__all__ = ["AGENT", "SignoffCanUseTool", "signoff_can_use_tool", "signoff_hooks"]

Hooks = dict[HookEvent, list[HookMatcher]]


def signoff_hooks(gate: GateProtocol, *, principal: str | None = None,
                  wait_seconds: float = WAIT, inbox_url: str | None = None,
                  claims_dir: Path | None = None) -> Hooks:
    """``ClaudeAgentOptions(hooks=...)``: every call judged in ``PreToolUse`` (its
    timeout ``wait_seconds`` + 15 s), every result reported in ``PostToolUse``. An
    approver's edit runs as approved: the hook's ``updatedInput``, as
    ``signoff hook claude-code`` answers."""
    options = _options(gate, principal, wait_seconds, inbox_url, claims_dir, edits=True)

    async def pre_tool_use(data: HookInput, tool_use_id: str | None,
                           context: HookContext) -> HookJSONOutput:
        try:
            session, tool, args, _ = read_event(json.dumps(data), "PreToolUse")
        except Exception as exc:  # fail closed on any bad input
            return _hook_deny(f"signoff could not read the hook input ({exc}); the call was "
                              "not allowed")
        answer = await _judged(gate, session, tool, args, options)
        out = decision(answer.kind, answer.reason)
        if answer.kind == "allow" and answer.execution is not None \
                and answer.execution.args != args:  # an approver's edit: run as approved
            out["hookSpecificOutput"]["updatedInput"] = dict(answer.execution.args)
        return cast("HookJSONOutput", out)

    return {"PreToolUse": [HookMatcher(matcher="*", hooks=[pre_tool_use],
                                       timeout=wait_seconds + HOOK_MARGIN)],
            **_reporting(gate, options)}


def signoff_can_use_tool(gate: GateProtocol, *, principal: str | None = None,
                         wait_seconds: float = CAN_USE_TOOL_WAIT, inbox_url: str | None = None,
                         claims_dir: Path | None = None) -> SignoffCanUseTool:
    """``ClaudeAgentOptions(can_use_tool=permit, hooks=permit.hooks)``: every call judged
    by the callback; an approver's edit runs as approved."""
    return SignoffCanUseTool(gate, _options(gate, principal, wait_seconds, inbox_url,
                                            claims_dir, edits=True))


class SignoffCanUseTool:
    """A ``can_use_tool`` callback answered by the gate, and (``hooks``) the hooks that
    send every call to it with its session and report what it returned."""

    def __init__(self, gate: GateProtocol, options: HookOptions) -> None:
        self.gate, self.options = gate, options
        self.sessions: dict[str, str] = {}  # tool_use_id -> session, from PreToolUse
        self.hooks: Hooks = {"PreToolUse": [HookMatcher(matcher="*", hooks=[self.announce])],
                             **_reporting(gate, options)}

    async def announce(self, data: HookInput, tool_use_id: str | None,
                       context: HookContext) -> HookJSONOutput:
        """``PreToolUse``: note the call's session; "ask", so the CLI asks the callback."""
        try:
            session, _, _, event = read_event(json.dumps(data), "PreToolUse")
            use = event.get("tool_use_id") or tool_use_id
            if not isinstance(use, str) or not use:
                raise ValueError("the hook input has no tool_use_id")
        except Exception as exc:  # fail closed on any bad input
            return _hook_deny(f"signoff could not read the hook input ({exc}); the call was "
                              "not allowed")
        self.sessions[use] = session
        while len(self.sessions) > _ANNOUNCED:  # calls the CLI never asked about
            del self.sessions[next(iter(self.sessions))]
        return cast("HookJSONOutput", decision("ask", "signoff judges this call"))

    async def __call__(self, tool_name: str, tool_input: dict[str, Any],
                       context: ToolPermissionContext) -> PermissionResult:
        session = self.sessions.pop(context.tool_use_id or "", None)
        if session is None:
            return PermissionResultDeny(message=(
                "signoff's PreToolUse hook did not see this call (pass "
                "hooks=<the callback>.hooks with can_use_tool); the call was not allowed"))
        try:
            args = parse_args(tool_input)
        except Exception as exc:
            return PermissionResultDeny(message=f"signoff could not read the call's input "
                                        f"({exc}); the call was not allowed")
        answer = await _judged(self.gate, session, tool_name, args, self.options)
        if answer.kind != "allow":
            return PermissionResultDeny(message=answer.reason)
        # What runs is what was judged — for an approved request, exactly what was approved
        # (its hash checked when it was claimed): an approver's edit included.
        ran = answer.execution.args if answer.execution is not None else args
        return PermissionResultAllow(updated_input=dict(ran))


def _options(gate: GateProtocol, principal: str | None, wait_seconds: float,
             inbox_url: str | None, claims_dir: Path | None, *, edits: bool) -> HookOptions:
    if not 0 < wait_seconds <= 86400:
        raise ValueError("wait_seconds must be between 0 and 86400")
    # An in-process gate still under its default name proposes as this harness.
    if getattr(gate, "agent", None) in (None, "agent") and hasattr(gate, "agent"):
        gate.agent = AGENT
    return HookOptions(agent=AGENT, principal=principal, wait_seconds=wait_seconds,
                       inbox_url=inbox_url, claims_dir=claims_dir, runs_edits=edits)


def _reporting(gate: GateProtocol, options: HookOptions) -> Hooks:
    """``PostToolUse`` and ``PostToolUseFailure``: the result reported (``report``)."""

    async def post_tool_use_hook(data: HookInput, tool_use_id: str | None,
                                 context: HookContext) -> HookJSONOutput:
        try:
            await anyio.to_thread.run_sync(post_tool_use, gate,
                                           json.dumps(data, default=str), options)
        except Exception as exc:  # the call ran: a lost result is said, not hidden
            return {"systemMessage": f"signoff: the result of this call was not recorded "
                                     f"({type(exc).__name__}: {exc})"}
        return {}

    matcher = HookMatcher(matcher="*", hooks=[post_tool_use_hook])
    return {"PostToolUse": [matcher], "PostToolUseFailure": [matcher]}


def _hook_deny(reason: str) -> HookJSONOutput:
    return cast("HookJSONOutput", decision("deny", reason))


async def _judged(gate: GateProtocol, session: str, tool: str, args: dict[str, Any],
                  options: HookOptions) -> Answer:
    """``judge`` in a worker thread; cancelled, it stops waiting and claims nothing."""
    stopped = threading.Event()
    watched = cast("GateProtocol", _Watched(gate, stopped))
    try:
        return await anyio.to_thread.run_sync(
            functools.partial(judge, watched, session, tool, args, options),
            abandon_on_cancel=True)
    except Exception as exc:  # judge denies its own failures; this is the thread's
        return Answer("deny", f"signoff could not judge this call ({type(exc).__name__}: "
                      f"{exc}); it was not allowed")
    finally:
        stopped.set()


class _Abandoned(Exception):
    """The SDK stopped waiting for this answer."""


class _Watched:
    """The gate as one judging uses it: a wait comes in slices, and once the SDK has
    cancelled the callback, no wait goes on and no claim is made."""

    def __init__(self, gate: GateProtocol, stopped: threading.Event) -> None:
        self._gate, self._stopped = gate, stopped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gate, name)

    def _check(self) -> None:
        if self._stopped.is_set():
            raise _Abandoned("the SDK no longer waits for this call")

    def wait(self, request_id: str, *, timeout: float) -> Outcome:
        end = time.monotonic() + timeout
        while True:
            self._check()
            left = end - time.monotonic()
            outcome = self._gate.wait(request_id, timeout=max(0.0, min(_SLICE, left)))
            if outcome.kind is not OutcomeKind.PENDING or left <= _SLICE:
                return outcome

    def claim(self, request_id: str) -> Execution | Outcome:
        self._check()
        return self._gate.claim(request_id)
