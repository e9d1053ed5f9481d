"""The bound: an auto reviewer never approves beyond what the policy lets it.

A call above the configured ``max_risk``, or carrying any concern the analysis
found (code run it does not declare, the network, a sensitive write, ...), is
beyond every auto reviewer: it goes to a human and the reviewer is not asked at
all — no model call, no cost, and nothing an argument could talk it into.
"""

from __future__ import annotations

from signoff.model import Risk
from signoff.review.base import ReviewOutcome, ReviewRequest


def beyond_reviewer(request: ReviewRequest, max_risk: Risk) -> ReviewOutcome | None:
    """An escalation when the call is beyond the reviewer, else ``None`` (ask it)."""
    if request.concerns:
        codes = ", ".join(dict.fromkeys(c.code or c.text for c in request.concerns))
        return ReviewOutcome(
            approve=False, reviewer="policy",
            reason=f"the call carries concerns ({codes}) no auto reviewer may approve: "
                   f"a human decides (the reviewer was not asked)")
    if request.risk.rank > max_risk.rank:
        return ReviewOutcome(
            approve=False, reviewer="policy",
            reason=f"risk {request.risk.value} is above the review bound (max_risk = "
                   f"{max_risk.value}): a human decides (the reviewer was not asked)")
    return None
