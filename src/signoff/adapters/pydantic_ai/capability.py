"""``Signoff``: the capability that puts an agent's tools behind the gate — the one line
an application adds (``Agent(..., capabilities=[Signoff(gate)])``).

Once per run (``for_run``) it fixes the run as signoff sees it: the thread is the
conversation (``conversation_id``, which the message history carries, so a resume in
another process stays on it) unless the application names one; the run id is Pydantic
AI's. A run given a new prompt starts a signoff run — refused (``thread_waiting``) while
the thread waits on a decision; a resume (no prompt) only reads the thread's review mode.
Interaction mode, principal and review mode come from the application's code, never from
the conversation. An agent started inside a gated tool call is that call's subagent
(``parent_call``): its asks wait in place, as it cannot pause its parent's run. A resume
keeps the signoff run of the prompt that started it (the history carries that run's id;
Pydantic AI gives every resume a new one), so its own paused requests never make its
thread look busy with another run's.

In full review mode and in unattended runs nobody answers a clarifying question: the
policy's clarification tool is withdrawn from the tools the model is offered
(``before_model_request``) and the system prompt says so (``get_instructions``); a call
the model makes to it anyway still reaches the gate, which refuses it.

Each model turn (``after_model_request``) loses the tool calls whose ids cannot be
bound to a decision (``ids``). Then (``get_wrapper_toolset``) it wraps the run's
assembled toolset — function tools, MCP servers, other capabilities' tools — in
``SignoffToolset``. Output tools are not
wrapped: producing the run's output runs nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from signoff.adapters.pydantic_ai.ids import strip_bad_ids, used_ids
from signoff.adapters.pydantic_ai.toolset import SignoffToolset, running_call
from signoff.adapters.telling import FULL_MODE_NOTE
from signoff.errors import ConfigurationError
from signoff.extras import absent
from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode, RunContext
from signoff.policy.modes import clamp, parse_interaction_mode, parse_review_mode

try:
    import anyio.to_thread
    from pydantic_ai import RunContext as AgentContext
    from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.toolsets import AbstractToolset
except ImportError as exc:
    raise absent("pydantic-ai", __name__, exc) from exc

INTENT_MAX = 2000


class Signoff(AbstractCapability[Any]):
    """Every tool call of the agent's runs judged by ``gate`` (``signoff.Gate`` or a
    ``signoff.remote.Client``); asks pause the run with ``DeferredToolRequests``."""

    def __init__(self, gate: GateProtocol, *, thread_id: str | None = None,
                 interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE,
                 review_mode: ReviewMode | str | None = None, principal: str | None = None,
                 subagent_wait: float = 300.0, context: RunContext | None = None) -> None:
        """``thread_id``: the signoff thread (default: the run's ``conversation_id``).
        ``subagent_wait``: how long an ask of this agent run as a subagent waits in place
        before it is withdrawn and fails closed. ``context``: this run's fixed context
        (set by ``for_run``; not for applications)."""
        super().__init__()
        if not 0 < subagent_wait <= 86400:
            raise ConfigurationError("subagent_wait must be between 0 and 86400 seconds",
                                     code="invalid_wait")
        self.gate = gate
        self.thread_id = thread_id
        self.interaction_mode = parse_interaction_mode(interaction_mode)
        self.review_mode = parse_review_mode(review_mode) if review_mode else None
        self.principal = principal
        self.subagent_wait = subagent_wait
        self.context = context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from code with a gate, never from an agent spec

    def get_ordering(self) -> CapabilityOrdering | None:
        """Innermost, whatever the list order: the toolset signoff wraps is the one that
        runs the tools, so no other capability's wrapper sits between what was judged
        and what runs; and the model's turn reaches the id check first."""
        return CapabilityOrdering(position="innermost")

    async def for_run(self, ctx: AgentContext[Any]) -> AbstractCapability[Any]:
        running = running_call.get()
        parent, outer = running if running is not None else (None, None)
        prompt = ctx.prompt
        # A subagent never runs laxer than its parent: unattended inside an unattended run,
        # and its parent's principal and review mode where it was given none.
        interaction, principal, review = self.interaction_mode, self.principal, self.review_mode
        if outer is not None:
            if outer.interaction_mode.unattended:
                interaction = outer.interaction_mode
            principal = principal or outer.principal
            review = review or outer.review_mode
        context = RunContext(
            thread_id=self.thread_id or ctx.conversation_id,
            run_id=ctx.run_id if prompt is not None else started_by(ctx.messages, ctx.run_id),
            review_mode=review, interaction_mode=interaction,
            principal=principal, parent_call=parent,
            intent=prompt[:INTENT_MAX] if isinstance(prompt, str) and prompt else None)
        if prompt is not None and not parent:  # new input: a run starts
            fixed = await anyio.to_thread.run_sync(self.gate.start_run, context)
        else:  # a resume, or a subagent: part of a run already started
            fixed = await anyio.to_thread.run_sync(self.gate.context_for, context)
        return Signoff(self.gate, thread_id=self.thread_id,
                       interaction_mode=self.interaction_mode, review_mode=self.review_mode,
                       principal=self.principal, subagent_wait=self.subagent_wait,
                       context=fixed)

    def get_instructions(self) -> str | None:
        """The run's system prompt says nobody answers questions, when nobody does."""
        return FULL_MODE_NOTE if self.clarification_withdrawn() else None

    async def before_model_request(self, ctx: AgentContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        """The clarification tool is not offered when nobody would answer it."""
        if not self.clarification_withdrawn():
            return request_context
        name = self.gate.config.clarification_tool
        parameters = request_context.model_request_parameters
        offered = [t for t in parameters.function_tools if t.name != name]
        if len(offered) == len(parameters.function_tools):
            return request_context
        return dataclasses.replace(request_context, model_request_parameters=dataclasses.replace(
            parameters, function_tools=offered))

    def clarification_withdrawn(self) -> bool:
        """Full review mode (as the operator's ceiling lets it be) or an unattended run, in a
        policy that names a clarification tool: nobody will answer it."""
        context = self.context
        if context is None or not self.gate.config.clarification_tool:
            return False
        config = self.gate.config
        mode = clamp(context.review_mode or config.default_review_mode, config.ceiling)
        return mode is ReviewMode.FULL or context.interaction_mode.unattended

    async def after_model_request(self, ctx: AgentContext[Any], *,
                                  request_context: ModelRequestContext,
                                  response: ModelResponse) -> ModelResponse:
        """Calls whose ids cannot be bound to a decision leave the turn, named in it."""
        return strip_bad_ids(response, used_ids(ctx.messages, but=response))

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        if self.context is None:  # for_run always sets it; fail closed if it did not
            return SignoffToolset(wrapped=toolset, gate=None)
        return SignoffToolset(wrapped=toolset, gate=self.gate, context=self.context,
                              subagent_wait=self.subagent_wait)


def started_by(messages: Sequence[ModelMessage], default: str | None) -> str | None:
    """The run id of the latest request that carried a user prompt: the signoff run a
    resume (no prompt) goes on with; ``default`` when the history has none."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and any(
                isinstance(p, UserPromptPart) for p in message.parts):
            return message.run_id or default
    return default
