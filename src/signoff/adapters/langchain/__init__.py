"""signoff inside LangChain v1 agents: ``SignoffMiddleware`` and the helpers that resume
a paused run (docs/langchain.md).

``middleware`` holds the two hooks; ``run`` a run's context, its pause and its resume;
``hitl`` LangChain's human-in-the-loop shapes; ``messages`` the ToolMessages the model
reads; ``resume`` a decision carried by a resume value; ``child`` subagents.
"""

from signoff.extras import absent

try:
    from signoff.adapters.langchain.middleware import SignoffMiddleware, SignoffState
    from signoff.adapters.langchain.run import (
        SignoffContext,
        adecide_and_resume,
        await_and_resume,
        decide_and_resume,
        pending_request_ids,
        resume_command,
        wait_and_resume,
    )
except ImportError as exc:
    raise absent("langchain", __name__, exc) from exc

__all__ = ["SignoffContext", "SignoffMiddleware", "SignoffState", "adecide_and_resume",
           "await_and_resume", "decide_and_resume", "pending_request_ids", "resume_command",
           "wait_and_resume"]
