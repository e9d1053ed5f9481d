"""What every notification channel is: a name, a filter, and one attempt at sending.

A channel never decides anything by sending: it tells. The outbox
(``signoff.notify.outbox``) decides what each channel is told and retries what
failed; a channel only reports how one attempt went.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from signoff.model import ApprovalRequest
from signoff.store.deliveries import Delivery


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    ok: bool
    status: int | None = None  # the receiver's HTTP status, if it answered
    error: str | None = None  # what went wrong, for the delivery log
    final: bool = False  # no retry can help (e.g. the channel is gone): dead at once


class Channel(Protocol):
    @property
    def channel(self) -> str:
        """The channel's name in the delivery log: ``webhook:<name>``, ``slack``, …"""
        ...

    @property
    def batched(self) -> bool:
        """Whether due deliveries are handed over together (``send_batch``)."""
        ...

    def wants(self, event_type: str, request: ApprovalRequest) -> bool: ...

    def due_at(self, now: float) -> float:
        """When a delivery fanned out at ``now`` is first due."""
        ...

    def send(self, delivery: Delivery) -> Attempt: ...

    def send_batch(self, deliveries: Sequence[Delivery]) -> list[Attempt]: ...


class OneByOne:
    """The defaults of a channel that sends each delivery as soon as it is made."""

    batched = False

    def due_at(self, now: float) -> float:
        return now

    def send(self, delivery: Delivery) -> Attempt:
        raise NotImplementedError

    def send_batch(self, deliveries: Sequence[Delivery]) -> list[Attempt]:
        return [self.send(d) for d in deliveries]
