"""A decision delivered by a channel that may deliver it again, taken at most once.

A LangGraph resume is handed to its node every time the node re-runs; a Slack click may
arrive twice. ``OnceDecider.decide_once`` takes such a decision through ``Decider.decide``
once per delivery key, and records a refusal under the same key (``decision.refused`` in
the audit, with the channel), so that the same delivery is never judged again later,
when the rules might have changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from signoff import inputs
from signoff.audit import AuditKind, to_us
from signoff.errors import (
    Conflict,
    Expired,
    Forbidden,
    InvalidDecision,
    InvalidInput,
    NotFound,
    SignoffError,
    Unauthenticated,
)
from signoff.identity import Identity
from signoff.kernel.deciding import Decider, DecisionResult, scoped
from signoff.model import Decision


@dataclass(frozen=True, slots=True, kw_only=True)
class Once:
    """What ``decide_once`` did: took the decision (``result``), or refused it (``code``,
    ``message``); ``replayed`` when this delivery was judged before and nothing was done
    now."""

    result: DecisionResult | None = None
    code: str | None = None
    message: str = ""
    replayed: bool = False

    @property
    def refused(self) -> bool:
        return self.result is None


class OnceDecider:
    """Decisions taken at most once per delivery, on top of the decider."""

    def __init__(self, decider: Decider) -> None:
        self.decider = decider

    def decide_once(self, request_id: str, decision: Decision, *, user: str, key: str,
                    via: str, precheck: Callable[[], None] | None = None) -> Once:
        """A decision that arrived by a channel which may deliver it again (a LangGraph
        resume is handed to its node every time the node re-runs): taken at most once per
        ``key``, its refusal included. ``user`` names the deciding identity; it is read
        from the store under the request's lock (a disabled, removed or agent identity is
        refused), through every rule ``decide`` applies. Never raises a refusal: it is
        returned, and recorded (``decision.refused`` in the audit, with ``via``) so that the
        same delivery is not judged again later, when the rules might have changed.
        ``precheck``: the channel's own check (raises ``InvalidDecision``), refused alike."""
        inputs.identifier("user", user)
        key_of_user = scoped(user, key)
        with self.decider.store.transaction() as tx:
            stored = tx.idempotent_response(key_of_user)
        if stored is not None:
            data = json.loads(stored[2])
            if "refused" in data:
                return Once(replayed=True, code=str(data["refused"]),
                            message=str(data.get("message") or ""))
        try:
            if precheck is not None:
                precheck()
            result = self.decider.decide(request_id, decision, identity=Identity(name=user),
                                         idempotency_key=key, via=via)
        except (Forbidden, Conflict, InvalidDecision, Expired, NotFound, Unauthenticated,
                InvalidInput) as exc:
            self._note_refusal(request_id, decision, user=user, key=key_of_user, via=via,
                               error=exc)
            return Once(code=exc.code, message=exc.message)
        return Once(result=result, replayed=result.replayed)

    def _note_refusal(self, request_id: str, decision: Decision, *, user: str, key: str,
                      via: str, error: SignoffError) -> None:
        now = self.decider.clock()
        with self.decider.store.transaction() as tx:
            if tx.idempotent_response(key) is not None:  # a concurrent delivery, or a key
                return                                       # used for another decision
            known = tx.get_request(request_id) is not None
            tx.put_idempotent_response(
                key, request_id=request_id, body_hash="refused",
                response=json.dumps({"refused": error.code, "message": error.message}), at=now)
            tx.append_audit(AuditKind.DECISION_REFUSED, at_us=to_us(now),
                            request_id=request_id if known else None, actor=user, data={
                                "kind": decision.kind.value, "code": error.code,
                                "message": error.message, "via": via,
                                **({} if known else {"request": request_id})})
