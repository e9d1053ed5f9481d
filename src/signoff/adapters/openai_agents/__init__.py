"""The OpenAI Agents SDK (``openai-agents``): every function-tool call judged by the gate,
through the SDK's own approval mechanism.

``gate_agent(agent, gate, thread_id=…)`` is the one line an application adds: a clone of
the agent (and of the agents it hands off to) whose function tools answer the SDK's
``needs_approval`` with the policy's verdict and run through signoff. An ask pauses the
run with the SDK's interruptions (``ToolApprovalItem``); ``paused(state)`` names the
signoff request of each, ``apply_decisions(state)`` maps what people decided in the store
onto the SDK's ``state.approve`` / ``state.reject`` before ``Runner.run(agent, state)``
resumes it — in this process or, from ``RunState.to_string()``, in a new one. An approved
call runs under the gate's claim: exactly the approved arguments (an approver's edit
included), at most once. A hosted MCP tool's calls (``HostedMCPTool``) go the same way
through the provider's approval requests: judged, paused, and approved once for exactly
the proposed arguments (an edit cannot be carried there, so it is refused). See
docs/openai-agents.md.
"""

from __future__ import annotations

from signoff.extras import absent

try:
    import agents  # noqa: F401
except ImportError as exc:
    raise absent("openai-agents", __name__, exc) from exc

from signoff.adapters.openai_agents.agent import gate_agent
from signoff.adapters.openai_agents.resume import Paused, apply_decisions, paused
from signoff.adapters.openai_agents.scope import RUN_KEY, THREAD_KEY

__all__ = ["RUN_KEY", "THREAD_KEY", "Paused", "apply_decisions", "gate_agent", "paused"]
