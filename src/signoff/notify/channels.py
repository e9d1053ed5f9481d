"""What every notification channel is: a name, a filter, and one attempt at sending.

A channel never decides anything by sending: it tells. The outbox
(``signoff.notify.outbox``) decides what each channel is told and retries what
failed; a channel only reports how one attempt went.
"""

from __future__ import annotations

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

    def wants(self, event_type: str, request: ApprovalRequest) -> bool: ...

    def send(self, delivery: Delivery) -> Attempt: ...
