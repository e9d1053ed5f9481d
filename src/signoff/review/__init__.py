"""Auto reviewers: who answers a gated call in ``auto`` mode on the human's behalf.

A reviewer sees the call, the run's stated intent and what the policy found;
it has no tools and cannot act. It answers approve or escalate. Anything else
— an exception, a malformed answer — is treated as doubt and escalates to a
human: an auto reviewer can only ever *save* a human a click, never overrule one.
"""

from signoff.review.base import Reviewer, ReviewOutcome, ReviewRequest
from signoff.review.rules import RiskReviewer

__all__ = ["ReviewOutcome", "ReviewRequest", "Reviewer", "RiskReviewer"]
