"""Microsoft Agent Framework (``agent-framework-core``): every function call judged by the gate.

``Agent(..., middleware=[SignoffMiddleware(gate)])`` is the one line an application adds: an
agent middleware that gives each run a function middleware (every call judged) and a chat
middleware (what the model is offered: no clarification tool when nobody would answer).
Allowed calls run; denied and blocked ones answer the model with the verdict's message; an
ask pauses the run through the framework's own approval flow — the function middleware's
result is a ``function_approval_request`` carrying signoff's request id, which the framework
surfaces in ``AgentResponse.user_input_requests`` and records in the session. The
application stores ``session.to_dict()``; once a human has decided (inbox, API, ``signoff
requests approve``) it runs the agent again with ``wake_up(requests)``, in this process or a
new one. The wake-up's "approved" is never the decision: the decision is read from the
store, and an approved call (as an approver edited it, if they did) runs through the gate's
claim, at most once. See docs/agent-framework.md.
"""

from __future__ import annotations

from signoff.extras import absent

try:
    import agent_framework  # noqa: F401 (the extra's library; its absence is said here)
except ImportError as exc:
    raise absent("agent-framework", __name__, exc) from exc

from signoff.adapters.agent_framework.middleware import AGENT, SignoffMiddleware
from signoff.adapters.agent_framework.resume import (
    REQUEST_KEY,
    request_ids,
    wait_and_resume,
    wake_up,
)

__all__ = ["AGENT", "REQUEST_KEY", "SignoffMiddleware", "request_ids", "wait_and_resume",
           "wake_up"]
