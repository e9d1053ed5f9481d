"""The built-in auto reviewer: approve low and medium risk, send high and critical to a human."""

from __future__ import annotations

from signoff.model import Risk
from signoff.policy.reviewing import ReviewOutcome, ReviewRequest


class RiskReviewer:
    """Judges by the verdict's risk alone; risk comes from rules, scope and the classifier."""

    def __init__(self, threshold: Risk = Risk.MEDIUM) -> None:
        self.threshold = threshold

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        if request.risk.rank <= self.threshold.rank:
            return ReviewOutcome(
                approve=True, reason=f"risk {request.risk.value} is within the auto threshold"
            )
        return ReviewOutcome(
            approve=False,
            reason=f"risk {request.risk.value} is above {self.threshold.value}: a human decides",
        )
