"""How an asked MCP call waits for its human: the inbox always, elicitation when it can.

The request is in the inbox (and ``signoff requests``) from the moment it is
made. If the client declared the ``elicitation`` capability, the proxy also
asks the person at the client with ``elicitation/create``: the exact call —
summary, tool, risk, canonical arguments, request id — to accept or decline.
Both run at once and the first decision wins through the kernel's
compare-and-set; the other is then moot (the elicitation is cancelled, or its
late answer finds the request decided).

An elicitation answer is a decision like any other and needs an identity: the
``approver`` (by default ``local:<the OS user running the proxy>``, created on
first use with the roles the command line gives). A request that identity
could not settle alone — roles it lacks, a quorum above one, its own call, or
approvals that need a passkey (a dialog carries no assertion) — is not elicited at
all and waits in the inbox. ``decline`` rejects;
``cancel`` (the dialog dismissed) decides nothing and the call keeps waiting
for the inbox.

While it waits, a client that sent a ``progressToken`` gets progress
notifications; after ``wait_seconds`` (or as soon as the proxy stops) the call
returns an error result naming the request (still pending: the same call made again
joins it).
"""

from __future__ import annotations

import functools
import getpass
import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from signoff.adapters.mcp.relay import Relay
from signoff.adapters.mcp.stopping import Stopping
from signoff.errors import Conflict, Forbidden, NotFound, SignoffError
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.kernel.ownership import refusal
from signoff.model import ApprovalRequest, Decision, RequestStatus
from signoff.policy.definitions import DEFINITION_CHANGED
from signoff.reveal import reveal_plain

log = logging.getLogger("signoff.mcp")
ARGS_SHOWN = 4000  # characters of canonical arguments in the elicitation message
WAIT_SLICE = 2.0  # a waiting thread re-checks this often (and ends this soon when abandoned)


def default_approver() -> str:
    return f"local:{getpass.getuser()}"[:64]


@dataclass(frozen=True, slots=True)
class ApproverSpec:
    """Who an elicitation answer counts as: a user name and (on creation) its roles."""

    name: str
    roles: tuple[str, ...] = ()
    roles_given: bool = False


class Asker:
    def __init__(self, gate: Gate, *, wait_seconds: float, approver: ApproverSpec | None,
                 inbox_url: str | None = None, progress_every: float = 5.0,
                 stopping: Stopping | None = None) -> None:
        self.gate = gate
        self.stopping = stopping  # once the proxy stops, a wait ends with the request pending
        self.wait_seconds = wait_seconds
        self.approver = approver  # None: no elicitation
        self.inbox_url = inbox_url.rstrip("/") if inbox_url else None
        self.progress_every = progress_every
        self._identity: Identity | None = None

    def inbox_link(self, request_id: str) -> str | None:
        return f"{self.inbox_url}/requests/{request_id}" if self.inbox_url else None

    # ---- waiting -----------------------------------------------------------------------------

    async def wait(self, relay: Relay, message: JSONRPCRequest, request: ApprovalRequest, *,
                   elicit_here: bool = True) -> Outcome:
        """Until decided or ``wait_seconds``; ``elicit_here``: also ask through an
        ``elicitation/create`` request (handshake-era clients)."""
        decided: list[Outcome] = []
        started = time.monotonic()
        async with anyio.create_task_group() as tg:

            async def inbox() -> None:
                outcome = await self._inbox(request.id, started)
                decided.append(outcome)
                tg.cancel_scope.cancel()

            async def elicit() -> None:
                outcome = await self._elicit(relay, message, request)
                if outcome is not None:
                    decided.append(outcome)
                    tg.cancel_scope.cancel()

            async def stop() -> None:
                assert self.stopping is not None
                await self.stopping.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(inbox)
            if self.stopping is not None:
                tg.start_soon(stop)
            if elicit_here and self.approver is not None \
                    and takes_elicitation(relay.client_capabilities):
                tg.start_soon(elicit)
            token = relay.related_progress(message)
            if token is not None:
                tg.start_soon(self._progress, relay, message, request, token, started)
        if decided:
            return decided[0]
        return await anyio.to_thread.run_sync(self.gate.outcome, request.id)

    async def _inbox(self, request_id: str, started: float) -> Outcome:
        while True:
            left = self.wait_seconds - (time.monotonic() - started)
            slice_ = max(0.0, min(WAIT_SLICE, left))
            outcome = await anyio.to_thread.run_sync(
                functools.partial(self.gate.wait, request_id, timeout=slice_),
                abandon_on_cancel=True)
            if outcome.kind is not OutcomeKind.PENDING or left <= WAIT_SLICE:
                return outcome

    async def _progress(self, relay: Relay, message: JSONRPCRequest, request: ApprovalRequest,
                        token: Any, started: float) -> None:
        where = self.inbox_link(request.id)
        text = f"waiting for a human to approve request {request.id}" + (
            f" ({where})" if where else "")
        while True:
            elapsed = time.monotonic() - started
            await relay.to_client(JSONRPCNotification(
                jsonrpc="2.0", method="notifications/progress",
                params={"progressToken": token, "progress": round(elapsed, 3),
                        "total": self.wait_seconds, "message": text}), related=message.id)
            await anyio.sleep(self.progress_every)

    # ---- elicitation -------------------------------------------------------------------------

    async def _elicit(self, relay: Relay, message: JSONRPCRequest,
                      request: ApprovalRequest) -> Outcome | None:
        """Handshake era: an ``elicitation/create`` request to the client."""
        identity = await self.eligible(request)
        if identity is None:
            return None  # it could not settle this alone: the inbox decides
        reply = await relay.ask_client("elicitation/create", elicitation_params(
            request, self.inbox_link(request.id)), related=message.id)
        if not isinstance(reply, JSONRPCResponse):
            log.info("the client refused the elicitation: %s", reply.error.message)
            return None
        return await self.answer(request, identity, reply.result.get("action"),
                                 client=relay.client_info)

    async def eligible(self, request: ApprovalRequest) -> Identity | None:
        """The approver, if its answer alone can settle ``request`` (else ``None``)."""
        if self.approver is None:
            return None
        identity = await anyio.to_thread.run_sync(self._resolve_identity)
        if identity is None or refusal(request, identity) is not None \
                or request.approvals_required != 1 or request.passkey:
            return None
        return identity

    async def answer(self, request: ApprovalRequest, identity: Identity, action: object, *,
                     client: dict[str, Any]) -> Outcome | None:
        """Record the person's answer as ``identity``'s decision; the outcome, or ``None``
        while it stays undecided (dismissed, or the answer could not count)."""
        if action not in ("accept", "decline"):
            return None  # dismissed: no decision; the inbox may still decide
        name = str(client.get("name") or "the MCP client")[:80]
        # The answer binds to the arguments the dialog showed: an edit made in the inbox
        # meanwhile makes it count for nothing (args_changed), and the inbox decides.
        shown = request.run_hash
        if action == "accept":
            decision = Decision.approve(expected_args_hash=shown)
        else:
            decision = Decision.reject(f"declined by {identity.name} in {name}",
                                       expected_args_hash=shown)
        try:
            await anyio.to_thread.run_sync(lambda: self.gate.decide(
                request.id, decision, identity=identity, via="mcp-elicitation"))
        except Conflict:  # decided elsewhere first: that decision stands
            pass
        except (Forbidden, NotFound) as exc:
            log.warning("elicitation answer for %s not recorded: %s", request.id, exc)
            return None
        outcome = await anyio.to_thread.run_sync(self.gate.outcome, request.id)
        return None if outcome.kind is OutcomeKind.PENDING else outcome

    def _resolve_identity(self) -> Identity | None:
        """The approver's identity, created on first use (once, however many race)."""
        if self._identity is not None or self.approver is None:
            return self._identity
        spec = self.approver
        for _ in range(2):
            try:
                account = self.gate.user(spec.name)
            except NotFound:
                try:
                    identity, _token = self.gate.add_user(spec.name, roles=spec.roles,
                                                          actor=f"os:{getpass.getuser()}")
                except Conflict:
                    continue  # another proxy created it meanwhile: read it
                self._identity = identity
                return identity
            except SignoffError as exc:
                log.warning("cannot use approver %s: %s", spec.name, exc)
                return None
            identity = account.identity
            if account.removed_at is not None or not identity.may_decide:
                log.warning("approver %s is removed, disabled or an agent: asks go to the "
                            "inbox only", spec.name)
                return None
            if spec.roles_given and set(spec.roles) != set(identity.roles):
                held = ", ".join(identity.roles) or "(none)"
                given = ", ".join(spec.roles) or "(none)"
                raise Forbidden(f"approver {spec.name} exists with roles {held}, not {given}: "
                                "change them with `signoff users roles`",
                                code="approver_roles_differ")
            self._identity = identity
            return identity
        return None


def takes_elicitation(capabilities: dict[str, Any]) -> bool:
    """The client declared elicitation in form mode (an empty object means form)."""
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return False
    return not elicitation or "form" in elicitation


def elicitation_params(request: ApprovalRequest, inbox: str | None) -> dict[str, Any]:
    """The question put to the person at the client: the exact call, nothing paraphrased.
    Every character that would not show as itself (U+202E, U+200B, controls, …) is
    written as a labelled marker, as the inbox flags it (``reveal_plain``), and counted."""
    args = request.approved_args or request.args
    shown = args if len(args) <= ARGS_SHOWN else args[:ARGS_SHOWN] + " … (truncated; the " \
        "inbox shows all of it)"
    flagged = 0

    def plain(text: str) -> str:
        nonlocal flagged
        out, count = reveal_plain(text)
        flagged += count
        return out

    lines = [f"signoff: approve this call? {plain(request.summary)}",
             f"tool: {plain(request.tool)}    risk: {request.risk.value}",
             f"arguments (canonical JSON, sha256 {request.args_hash[-16:]}): {plain(shown)}",
             f"request: {request.id}" + (f" — also in the inbox: {inbox}" if inbox else "")]
    if request.description:
        lines.append(f"the agent says (not verified): {plain(request.description[:500])}")
    if any(reason.get("code") == DEFINITION_CHANGED for reason in request.reasons):
        lines.append("the tool's definition (description, input schema or annotations) "
                     "changed since this session first saw it")
    if request.status is not RequestStatus.PENDING:
        lines.append(f"status: {request.status.value}")
    if flagged:
        lines.insert(1, f"WARNING: {flagged} invisible, control or direction-changing "
                     "character(s) flagged below as ⟦U+…⟧")
    lines.append("Accept runs exactly this call, once. Decline rejects it.")
    return {"message": "\n".join(lines),
            "requestedSchema": {"type": "object", "properties": {}}}
