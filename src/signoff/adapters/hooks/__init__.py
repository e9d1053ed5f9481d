"""What every coding agent's hooks share: a call judged by the gate into an ``Answer``
(``judging``), and the claim an approved call runs under, kept between the pre-call and
post-call hook processes (``claims``). Each harness's package writes the answer in its
own hook format."""

from signoff.adapters.hooks.judging import Answer, HookOptions, call_id_for, judge, report

__all__ = ["Answer", "HookOptions", "call_id_for", "judge", "report"]
