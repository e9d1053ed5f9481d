"""``signoff requests approve``: one request, or several after one confirmation (bulk
approval, ``signoff.kernel.bulk``); on the database (``--db``, through the ``Gate``) or on
a ``signoff serve`` (``--url``, through ``signoff.remote.Client``).

With several REQUEST_IDs the command reads each request and prints every call as it would
be approved — tool, risk, thread, asker, the arguments that would run (an approver's edit,
if any) as canonical JSON with hidden characters escaped, their hash, what its writes
change — then asks (on a terminal; ``--yes`` without one) and sends exactly those ids,
each with exactly the hash it printed, to ``approve_many``. A call proposed after the
listing is not in it; one whose arguments changed since is refused (``args_changed``).
Each listed call is approved once by its own decision, under every rule of a one-by-one
approval; what was refused is said call by call.

Exit status with several: 0, every listed call approved (or, for a quorum, its vote
recorded); 1, the approval was sent and some listed call was refused (the others stand);
2, an error, and nothing was approved (a usage error, a listing refused whole —
``mixed_shapes``, ``duplicate_listed``, ``agent_cannot_decide`` … —, no terminal and no
``--yes``, or the question answered no).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Protocol

from signoff import inputs
from signoff.canonical import parse_args
from signoff.cli.common import emit, open_gate, token_of
from signoff.cli.kernel import (
    _change_lines,
    _decide,
    _decided_text,
    _inbox_url,
    _inert,
    _shown_args,
)
from signoff.errors import (
    ConfigurationError,
    InvalidArguments,
    InvalidDecision,
    InvalidInput,
    SignoffError,
    Unauthenticated,
)
from signoff.identity import Identity
from signoff.kernel.bulk import BULK_MAX, BulkResult
from signoff.kernel.gate import Gate
from signoff.model import ApprovalRequest, Decision, DecisionKind, RequestStatus
from signoff.shown import shown_hash

if TYPE_CHECKING:  # the client is imported when --url is given
    from signoff.remote import Client

# Flags of the one-request form, and why they mean nothing for several.
_ONE_ONLY = (
    ("thread_grant", "--thread-grant", "approving for the thread grants one call's "
     "arguments"),
    ("auto_thread", "--auto-thread", "auto-approving a thread starts from one request "
     "(name the pause's other calls with --also)"),
    ("also", "--also", "--also names the other calls of one request's pause"),
    ("expect_hash", "--expect-hash", "--expect-hash is one request's hash; several are each "
     "bound to the hash the confirmation prints"),
    ("idempotency_key", "--idempotency-key", "a bulk approval takes no idempotency key: "
     "approving a call again is refused (already_decided, already_voted)"),
)


def cmd_requests_approve(args: argparse.Namespace) -> int:
    ids: list[str] = args.request_ids
    if args.url and (args.db or args.policy):
        args.usage("--url approves on a signoff serve, which has its own database and "
                   "policy: give --db/--policy or --url, not both")
    if len(ids) > 1:
        return _approve_several(args, ids)
    args.request_id = ids[0]
    scope = "auto_thread" if args.auto_thread else "thread" if args.thread_grant else "once"
    listed = [(item.partition("=")[0], item.partition("=")[2]) for item in args.also]
    decision = Decision.approve(scope=scope, listed=listed)
    if args.url:
        return decide_remote(args, decision)
    return _decide(args, decision)


# ---- where the decision is taken -----------------------------------------------------------------

class Approver(Protocol):
    """What approving several needs, from the gate or from a server: the same names and
    types (``Gate.get_request``/``approve_many``, ``Client.get_request``/``approve_many``)."""

    def get_request(self, request_id: str) -> ApprovalRequest: ...

    def approve_many(self, listed: Sequence[tuple[str, str]]) -> BulkResult: ...


@dataclass(frozen=True, slots=True)
class _Local:
    """The gate on ``--db``, deciding as the identity holding the token."""

    gate: Gate
    identity: Identity

    def get_request(self, request_id: str) -> ApprovalRequest:
        return self.gate.request(request_id)

    def approve_many(self, listed: Sequence[tuple[str, str]]) -> BulkResult:
        return self.gate.approve_many(listed, identity=self.identity)


@contextlib.contextmanager
def _client(args: argparse.Namespace) -> Iterator[Client]:
    """A ``Client`` of the server at ``--url``, holding the approver's token."""
    url = args.url
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"--url {url}: give the server's http:// or https:// "
                                 "address (as signoff serve prints it)", code="invalid_url")
    token = token_of(args)
    if not token:
        raise Unauthenticated("a token is required (--token-file, --token or "
                              "$SIGNOFF_TOKEN)", code="unauthenticated")
    from signoff.remote import Client  # noqa: PLC0415 (only with --url)

    with Client(url, token) as client:
        yield client


@contextlib.contextmanager
def _approver(args: argparse.Namespace) -> Iterator[Approver]:
    if args.url:
        with _client(args) as client:
            yield client
        return
    gate = open_gate(args)
    gate.passkeys.inbox_url = lambda: _inbox_url(args)  # a passkey refusal says where
    yield _Local(gate, gate.authenticate(token_of(args)))


def decide_remote(args: argparse.Namespace, decision: Decision) -> int:
    """One decision (approve, reject, edit, respond) over ``--url``: the server's answer,
    printed as ``_decide`` prints the gate's. Edited arguments are read here as the gate
    reads them (strict JSON, an object, within the limits): ``invalid_edit`` before any
    request is sent."""
    if args.db or args.policy:
        args.usage("--url decides on a signoff serve, which has its own database and "
                   "policy: give --db/--policy or --url, not both")
    expected = None if args.expect_hash is None else \
        shown_hash("--expect-hash", args.expect_hash)
    edited = None
    if decision.kind is DecisionKind.EDIT:
        try:
            edited = parse_args(decision.args)
        except InvalidArguments as exc:
            raise InvalidDecision(f"edited arguments: {exc.message}",
                                  code="invalid_edit") from exc
    with _client(args) as client:
        body = client.decide(args.request_id, decision.kind.value, reason=decision.reason,
                             alternatives=decision.alternatives, args=edited,
                             message=decision.message, scope=decision.scope.value,
                             listed=decision.listed, expected_args_hash=expected,
                             idempotency_key=args.idempotency_key)
        thread = client.get_request(args.request_id).thread_id \
            if body.get("review_mode") is not None else None
    emit(args, body, _decided_text(body, thread))
    return 0


# ---- several -------------------------------------------------------------------------------------

def _approve_several(args: argparse.Namespace, ids: list[str]) -> int:
    for name, flag, why in _ONE_ONLY:
        if getattr(args, name):
            args.usage(f"{flag} is for one REQUEST_ID ({why}); several REQUEST_IDs are "
                       "each approved once")
    checked = _listed_ids(ids)
    if not args.yes and not sys.stdin.isatty():
        raise ConfigurationError(
            f"approving {len(checked)} calls asks first, and there is no terminal to ask: "
            "add --yes (the calls are listed all the same)", code="confirmation_required")
    # The listing goes where the answer does not: --json keeps standard output for it.
    shown_on: IO[str] = sys.stderr if args.json else sys.stdout
    with _approver(args) as approver:
        requests = [approver.get_request(request_id) for request_id in checked]
        print(listing(requests) + "\n", file=shown_on, flush=True)
        if not args.yes and not _confirmed(len(requests), shown_on):
            raise SignoffError("nothing approved: the approval was not confirmed",
                               code="not_confirmed")
        # Each id with the hash printed beside it: a call changed since is refused.
        result = approver.approve_many([(r.id, r.run_hash) for r in requests])
    emit(args, result.to_dict(), answer(checked, result))
    return 1 if result.refused else 0


def _listed_ids(ids: list[str]) -> list[str]:
    """The ids as given, refused whole as ``approve_many`` would refuse them, before any is
    read: a malformed id, one given twice, more than it takes."""
    checked = [inputs.identifier("REQUEST_ID", request_id) for request_id in ids]
    if len(set(checked)) != len(checked):
        raise InvalidInput("a REQUEST_ID is given twice", code="duplicate_listed",
                           field="REQUEST_ID")
    if len(checked) > BULK_MAX:
        raise InvalidInput(f"at most {BULK_MAX} calls are approved together",
                           code="too_many_listed", field="REQUEST_ID")
    return checked


def listing(requests: list[ApprovalRequest]) -> str:
    """Every call as it would be approved: what runs (an edit's arguments, if edited) and
    the hash that is sent back for it; nothing a terminal would act on."""
    lines = [f"Approve once each of these {len(requests)} calls, with exactly these "
             "arguments:"]
    for request in requests:
        thread = request.thread_id or "-"
        asker = request.principal or request.agent or "-"
        lines.append("")
        lines.append(f"{request.id}  {request.tool}  risk {request.risk.value}  "
                     f"thread {thread}  asked by {_inert(asker)}")
        lines.append(f"  args ({request.run_hash}): {_shown_args(request.run_args)}")
        if request.approved_args is not None:
            lines.append(f"  edited by an approver; the agent proposed ({request.args_hash}): "
                         f"{_shown_args(request.args)}")
        if request.description:
            lines.append(f"  agent-supplied description: {_inert(repr(request.description))}")
        if request.status is not RequestStatus.PENDING:
            lines.append(f"  {request.status.value}: it no longer waits, and will be refused")
        lines.extend(_change_lines(request))
    return "\n".join(lines)


def _confirmed(count: int, shown_on: IO[str]) -> bool:
    print(f"Approve these {count} calls? [y/N] ", end="", file=shown_on, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def answer(ids: list[str], result: BulkResult) -> str:
    """Call by call, in the order given: approved, a vote recorded, or refused and why."""
    decided = {r.request.id: r for r in result.decided}
    refused = {r.request_id: r for r in result.refused}
    lines = []
    for request_id in ids:
        if request_id in decided:
            done = decided[request_id]
            what = "approved" if done.request.status is RequestStatus.APPROVED else \
                "vote recorded, more approvals needed"
            lines.append(f"{request_id}: {what} ({done.approvals}/{done.required} approvals)")
        elif request_id in refused:
            why = refused[request_id]
            lines.append(f"{request_id}: refused [{why.code}]: {_inert(why.message)}")
    shape = f" ({result.shape.describe()})" if result.shape else ""
    lines.append(f"{len(result.approved)} approved, {len(result.recorded)} vote(s) "
                 f"recorded, {len(result.refused)} refused{shape}")
    return "\n".join(lines)
