"""Google ADK (``google-adk``): the tool calls of an ADK app judged by signoff.

``App(name=…, root_agent=…, plugins=[SignoffPlugin(gate)])`` is the one line: every tool
call of every agent the runner runs goes through ``gate.propose``; an ask pauses the run
with ADK's own tool confirmation, stored by the session service (``SqliteSessionService``
for a pause that outlives the process), and ``resume_message(session)`` wakes it once people
decided in signoff. See docs/google-adk.md.
"""

from __future__ import annotations

from signoff.extras import absent

try:
    import google.adk  # noqa: F401
except ImportError as exc:
    raise absent("google-adk", __name__, exc) from exc

from signoff.adapters.google_adk.confirmations import Pause, pauses, resume_message
from signoff.adapters.google_adk.plugin import SignoffPlugin

__all__ = ["Pause", "SignoffPlugin", "pauses", "resume_message"]
