"""Email as a channel: a message per event, or a digest per period, through SMTP.

Sent with the standard library's ``smtplib`` — STARTTLS (the default) or SMTPS
with certificate checks (``ca_file`` adds a private CA), login when a user
is configured. A message shows the request as the inbox does (summary, risk,
who asked, the exact arguments and their hash) and links to the request's
page: a link that opens the page, never one that decides — an email client
or a link scanner that follows it changes nothing. Each message's
``Message-ID`` is derived from the event, so a retried message is the same
message.

A digest list (``digest = "15m"``) holds its events until the end of the
period they fall in, then sends those due together in one message.
"""

from __future__ import annotations

import hashlib
import json
import math
import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from signoff.model import ApprovalRequest
from signoff.notify.channels import Attempt, OneByOne
from signoff.notify.config import EmailList, SmtpConfig
from signoff.store.deliveries import Delivery

_VERBS = {"request.created": "Approval needed", "request.decided": "Decided",
          "request.expired": "Expired", "request.cancelled": "Withdrawn",
          "request.invalidated": "Not run", "request.executed": "Ran",
          "request.failed": "Failed", "request.unknown": "Outcome unknown",
          "request.reminder": "Reminder: approval needed",
          "request.escalated": "Escalated: approval needed",
          "request.edited": "Edited: approval needed"}
ARGS_MAX = 20_000


def describe(payload: dict[str, Any]) -> tuple[str, str]:
    """The subject and the plain-text body of one event."""
    data = payload["data"]
    verb = _VERBS.get(payload["type"], payload["type"])
    if payload["type"] == "request.decided":
        verb = data["status"].capitalize()
    subject = f"[signoff] {verb}: {data['tool']} ({data['risk']} risk)"
    edited = "approved_args" in data  # an approver's edit: show what would run
    args = json.dumps(data["approved_args"] if edited else data["args"], indent=2,
                      ensure_ascii=True, sort_keys=True)
    if len(args) > ARGS_MAX:
        args = args[:ARGS_MAX] + "\n… (cut: the request's page shows them all)"
    lines = [f"{verb}: {data['tool']}", "", data["summary"], "",
             f"Risk:     {data['risk']}", f"Thread:   {data.get('thread_id') or '-'}",
             f"Asked by: {data.get('principal') or data.get('agent') or '-'}",
             f"Status:   {data['status']}"]
    if data.get("expires_at"):
        lines.append(f"Expires:  {data['expires_at']}")
    for decision in data.get("decisions", []):
        lines.append(f"{decision['kind']} by {decision['approver']}"
                     + (f": {decision['reason']}" if decision.get("reason") else ""))
    if data.get("description"):
        lines += ["", f"The agent says (unverified): {data['description']}"]
    lines += ["", ("Arguments as edited by an approver" if edited else "Arguments")
              + " (non-ASCII written as \\u escapes):", args, "",
              f"Hash: {data['approved_args_hash'] if edited else data['args_hash']}", "",
              f"Open the request: {data['url']}",
              "(the page shows the request; deciding takes a click there, signed in)"]
    return subject, "\n".join(lines) + "\n"


class EmailChannel(OneByOne):
    def __init__(self, email: EmailList, smtp: SmtpConfig, *, timeout: float) -> None:
        self.email = email
        self.smtp = smtp
        self.timeout = timeout

    @property
    def channel(self) -> str:
        return self.email.channel

    def wants(self, event_type: str, request: ApprovalRequest) -> bool:
        return self.email.filters.wants(event_type, risk=request.risk.value,
                                        tool=request.tool, thread_id=request.thread_id)

    def due_at(self, now: float) -> float:
        """A digest's events wait for the end of their period."""
        period = self.email.digest
        return now if not period else math.floor(now / period) * period + period

    @property
    def batched(self) -> bool:  # type: ignore[override]
        return bool(self.email.digest)

    def send(self, delivery: Delivery) -> Attempt:
        return self.send_batch([delivery])[0]

    def send_batch(self, deliveries: Sequence[Delivery]) -> list[Attempt]:
        """One message for ``deliveries`` (one, or a digest's); the same result for each."""
        payloads = [json.loads(d.payload) for d in deliveries]
        if len(payloads) == 1:
            subject, body = describe(payloads[0])
        else:
            subject = f"[signoff] {len(payloads)} notifications ({self.email.name})"
            body = "\n\n".join(f"{i}. " + describe(p)[1] for i, p in
                               enumerate(payloads, 1))
        message = EmailMessage()
        message["Subject"] = subject
        message["From"] = self.smtp.sender
        message["To"] = ", ".join(self.email.to)
        message["Date"] = formatdate(localtime=False)
        key = hashlib.sha256("|".join(d.id for d in deliveries).encode()).hexdigest()[:24]
        message["Message-ID"] = f"<{key}.{deliveries[0].event_id}@signoff.invalid>"
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(body)
        attempt = self._send(message)
        return [attempt for _ in deliveries]

    def _send(self, message: EmailMessage) -> Attempt:
        smtp = self.smtp
        context = ssl.create_default_context(cafile=smtp.ca_file)
        try:
            if smtp.security == "ssl":
                client: smtplib.SMTP = smtplib.SMTP_SSL(smtp.host, smtp.port,
                                                        timeout=self.timeout, context=context)
            else:
                client = smtplib.SMTP(smtp.host, smtp.port, timeout=self.timeout)
            with client:
                if smtp.security == "starttls":
                    client.starttls(context=context)
                if smtp.username is not None:
                    client.login(smtp.username, smtp.password or "")
                client.send_message(message, from_addr=smtp.sender,
                                    to_addrs=list(self.email.to))
        except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused,
                smtplib.SMTPAuthenticationError, smtplib.SMTPNotSupportedError) as exc:
            return Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:500], final=True)
        except (smtplib.SMTPException, OSError) as exc:
            return Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
        return Attempt(ok=True)
