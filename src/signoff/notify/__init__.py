"""Reaching approvers where they are: webhooks (Standard Webhooks), and the outbox that
drives every channel from the audit log (docs/notifications.md).

* ``config`` — the ``[notify]`` table: channels, filters, retries.
* ``events`` — which audit events are notified, and the payload.
* ``outbox`` — fan-out, claims under a lease, settling attempts (database only).
* ``channels`` — what a channel is; ``webhook`` — the signed POST.
* ``notifier`` — the thread in ``signoff serve`` that moves the outbox.
"""
