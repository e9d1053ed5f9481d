"""Pydantic AI (``pydantic-ai-slim``): every tool call of an agent judged by signoff's gate,
an ask paused through Pydantic AI's deferred tools.

``Agent(model, tools=…, output_type=[str, DeferredToolRequests],
capabilities=[Signoff(gate)])``: allowed calls run, denied ones come back to the model
as failed tool returns, an ask ends the run with ``DeferredToolRequests`` naming signoff's
request ids. ``Paused`` stores the history and the requests; once a human decided,
``agent.run(**Paused.loads(text).resume_kwargs())`` resumes — in any process — and the
approved call runs exactly as approved, once. A run that should wait for the human in
place instead adds ``HandleDeferredToolCalls(handler=waiting_handler(gate))``. See
docs/pydantic-ai.md.
"""

from signoff.adapters.pydantic_ai.capability import Signoff
from signoff.adapters.pydantic_ai.pause import (
    Paused,
    request_ids,
    undecided,
    waiting_handler,
    wake,
)
from signoff.adapters.pydantic_ai.toolset import METADATA_KEY, SignoffToolset

__all__ = ["METADATA_KEY", "Paused", "Signoff", "SignoffToolset", "request_ids", "undecided",
           "waiting_handler", "wake"]
