"""The kernel's commands: ``requests``, ``audit``, ``recover`` (``db``: ``cli.db``;
``users``: ``cli.users``). What they share — the database, the token, the output — is
``cli.common``'s."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import replace
from typing import Any

from signoff import inputs
from signoff.audit import Verification
from signoff.cli.common import common_args, emit, leaf, open_gate, token_of
from signoff.cli.trust import trust_args, trust_of
from signoff.errors import InvalidInput
from signoff.model import ApprovalRequest, Decision, DecisionRecord, RequestStatus, Risk
from signoff.reveal import HIDDEN, escape_json
from signoff.settled import settled
from signoff.shown import shown_hash
from signoff.store.pages import RequestQuery, cursor_of, parse_cursor
from signoff.times import TIME_HELP, parse_time, shown

REQUEST_ID_HELP = "the request's id (req_…, as requests list prints it)"


def add_commands(commands: Any) -> None:
    requests = commands.add_parser("requests", help="list, show and decide approval requests",
                                   description="Approval requests: list, show, approve, reject, "
                                   "edit, respond, cancel.")
    sub = requests.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    listing = leaf(sub, "list", "list approval requests", cmd_requests_list)
    listing.add_argument("--status", choices=[s.value for s in RequestStatus],
                         help="only requests in this status")
    listing.add_argument("--thread", help="only requests of this thread")
    listing.add_argument("--risk", choices=[r.value for r in Risk],
                         help="only requests of this risk")
    listing.add_argument("--tool", help="only requests for this tool")
    listing.add_argument("--requester", help="only requests this principal or agent asked for")
    listing.add_argument("--since", metavar="WHEN",
                         help=f"only requests created at or after this time: {TIME_HELP}")
    listing.add_argument("--until", metavar="WHEN",
                         help=f"only requests created before this time: {TIME_HELP}")
    listing.add_argument("--search", help="text in the id, tool, summary, description or "
                         "thread id (case-insensitive)")
    listing.add_argument("--cursor", help="the next page: the cursor the last page printed")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (50)")
    show = leaf(sub, "show", "show one request with its decisions", cmd_requests_show)
    show.add_argument("request_id", help=REQUEST_ID_HELP)
    approve = leaf(sub, "approve", "approve a request, or several of one shape after one "
                   "confirmation (as the identity holding the token)",
                   cmd_requests_approve, decides=True)
    approve.add_argument("request_ids", nargs="+", metavar="REQUEST_ID",
                         help=REQUEST_ID_HELP + "; several: each is approved once, in bulk, "
                         "after a confirmation that lists every call")
    approve.add_argument("--yes", action="store_true",
                         help="several REQUEST_IDs: approve what the confirmation lists "
                         "without asking (required without a terminal)")
    how = approve.add_mutually_exclusive_group()
    how.add_argument("--thread-grant", action="store_true",
                     help="approve for this thread: also grant identical calls in it")
    how.add_argument("--auto-thread", action="store_true",
                     help="auto-approve this thread: switch it to auto; with --also, approve "
                     "those other calls of this pause too")
    approve.add_argument("--also", action="append", default=[], metavar="ID=HASH",
                         help="with --auto-thread: another call of the pause you looked at, "
                         "with the arguments hash requests show printed (repeatable); it is "
                         "approved only if it still waits with that hash")
    reject = leaf(sub, "reject", "reject a request with a reason the agent will read",
                  cmd_requests_reject, decides=True)
    reject.add_argument("request_id", help=REQUEST_ID_HELP)
    reject.add_argument("--reason", required=True, help="why; the agent receives it")
    reject.add_argument("--alternative", action="append", default=[],
                        help="an alternative the agent may try instead (repeatable)")
    edit = leaf(sub, "edit", "approve with changed arguments (re-checked against the policy)",
                cmd_requests_edit, decides=True)
    edit.add_argument("request_id", help=REQUEST_ID_HELP)
    edit.add_argument("--args", required=True, help="the new arguments, a JSON object")
    edit.add_argument("--reason", help="why; the agent receives it with the outcome")
    respond = leaf(sub, "respond", "answer the agent instead of running the call",
                   cmd_requests_respond, decides=True)
    respond.add_argument("request_id", help=REQUEST_ID_HELP)
    respond.add_argument("--message", required=True, help="the answer the agent receives")
    for deciding in (approve, reject, edit, respond):
        deciding.add_argument("--expect-hash", metavar="HASH", help="the arguments hash you "
                              "were shown (requests show): refused with args_changed if "
                              "other arguments would run now")
        deciding.add_argument("--url", help="decide on this signoff serve (its HTTP API, "
                              "http://HOST:PORT) instead of opening a database")
        deciding.set_defaults(usage=deciding.error)
    cancel = leaf(sub, "cancel", "withdraw a request (its asker, or an admin)",
                  cmd_requests_cancel, decides=True, idempotent=False)
    cancel.add_argument("request_id", help=REQUEST_ID_HELP)
    cancel.add_argument("--reason", required=True, help="why; the waiting agent receives it")

    audit = commands.add_parser("audit", help="verify or export the audit log",
                                description="The hash-chained audit log.")
    audit_sub = audit.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    verify = leaf(audit_sub, "verify", "check the hash chain and its signed checkpoints; "
                  "names the first bad index", cmd_audit_verify)
    trust_args(verify)
    export = leaf(audit_sub, "export", "print the audit events", cmd_audit_export)
    export.add_argument("--after", type=int, default=0, help="only events after this index")

    recover = commands.add_parser(
        "recover", help="after a crash: expire overdue requests, mark dead runs unknown",
        description="Expire pending requests past their expiry and mark executions whose lease "
        "ran out as unknown (never re-run). Approved requests whose tool is not loaded here "
        "are left approved and counted.")
    common_args(recover)
    recover.set_defaults(handler=cmd_recover)



def _line(request: ApprovalRequest) -> str:
    thread = request.thread_id or "-"
    return (f"{request.id}  {request.status.value:<11} {request.risk.value:<8} "
            f"{request.tool:<16} thread {thread}  {request.summary}")


def cmd_requests_list(args: argparse.Namespace) -> int:
    for flag, value in (("--thread", args.thread), ("--requester", args.requester)):
        inputs.optional_identifier(flag, value)
    if args.tool is not None:
        inputs.tool_name("--tool", args.tool)
    search = inputs.optional_text("--search", args.search, inputs.SEARCH_MAX)
    if not 1 <= args.limit <= 10_000:
        raise InvalidInput("--limit must be between 1 and 10000", code="invalid_limit",
                           field="--limit")
    after = parse_cursor(args.cursor) if args.cursor is not None else None
    now = time.time()
    since, until = (None if value is None else parse_time(flag, value, now=now)
                    for flag, value in (("--since", args.since), ("--until", args.until)))
    gate = open_gate(args)
    query = RequestQuery(status=RequestStatus(args.status) if args.status else None,
                         thread_id=args.thread, risk=Risk(args.risk) if args.risk else None,
                         tool=args.tool, requester=args.requester, since=since,
                         until=until, text=search or None)
    found = gate.list_requests(query=query, after=after, limit=args.limit + 1)
    page = found[:args.limit]
    more = cursor_of(page[-1]) if len(found) > args.limit else None
    text = "\n".join(_line(r) for r in page) or "no requests"
    if more is not None:
        text += f"\nmore: --cursor {more}"
    emit(args, [r.to_dict() for r in page], text)
    if more is not None and args.json:  # the JSON stays a list: the cursor goes beside it
        print(f"next_cursor: {more}", file=sys.stderr)
    return 0


def cmd_requests_show(args: argparse.Namespace) -> int:
    inputs.identifier("REQUEST_ID", args.request_id)
    gate = open_gate(args)
    request = gate.request(args.request_id)
    decisions = gate.decisions(request.id)
    data = {**request.to_dict(), "decisions": [
        {"kind": d.kind.value, "approver": d.approver, "args_hash": d.args_hash,
         "reason": d.reason, "at": d.created_at} for d in decisions]}
    lines = [_line(request), f"  asked by {_asker(request)}",
             f"  args ({request.args_hash}): {_shown_args(request.args)}"]
    if request.approved_args is not None:
        lines.append(f"  edited to ({request.approved_hash}): "
                     f"{_shown_args(request.approved_args)}")
    if request.description:
        lines.append(f"  agent-supplied description: {request.description!r}")
    lines.append(f"  needs {request.approvals_required} approval(s)"
                 + (f" from {', '.join(request.roles)}" if request.roles else ""))
    lines.append(f"  created {shown(request.created_at)}")
    lines.extend(_settled_lines(request, decisions, gate.clock()))
    lines.extend(f"  {d.kind.value} by {d.approver}, {shown(d.created_at)}"
                 + (f": {_inert(d.reason)}" if d.reason else "")
                 + (f" (alternatives: {'; '.join(_inert(a) for a in d.alternatives)})"
                    if d.alternatives else "") for d in decisions)
    lines.extend(_change_lines(request))
    emit(args, data, "\n".join(lines))
    return 0


def _settled_lines(request: ApprovalRequest, decisions: list[DecisionRecord],
                   now: float) -> list[str]:
    """Pending: when it expires. Else: how it was settled instead (an expiry no longer
    means anything), with what the approver said."""
    done = settled(request, decisions)
    if done is None:
        if request.expires_at is None:
            return ["  never expires"]
        left = request.expires_at - now
        return [f"  expires {shown(request.expires_at)} "
                f"({'in ' + _span(left) if left > 0 else 'overdue'})"]
    lines = [f"  decided: {done.line()}" + (f": {_inert(done.reason)}" if done.reason else "")]
    if done.alternatives:
        lines.append("  alternatives offered: "
                     + "; ".join(_inert(a) for a in done.alternatives))
    return lines


def _span(seconds: float) -> str:
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60)}m"


# Characters a terminal would act on rather than print (escape sequences, carriage
# returns, C1 controls, direction overrides): shown as \xNN / \uNNNN in the text output.
_TERMINAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                       r"\u202a-\u202e\u2066-\u2069]")


def _inert(text: str) -> str:
    return _TERMINAL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                         else f"\\u{ord(m.group()):04x}", text)


def _shown_args(text: str) -> str:
    """Canonical arguments with what the inbox flags (direction overrides, zero-width and
    other invisible characters) written as ``\\u`` escapes: the same JSON value, with
    nothing in it a terminal draws as something else, and a count of what was escaped."""
    hidden = len(HIDDEN.findall(text))
    if not hidden:
        return text
    return f"{escape_json(text)}  [{hidden} hidden character(s) shown as \\u escapes]"


def _change_lines(request: ApprovalRequest) -> list[str]:
    """The write evidence: per file, what changes (a diff, indented) or what is known."""
    if not request.changes:
        return []
    lines = ["  changes (write evidence; bound: a file changed since refuses the run):"]
    for change in request.changes:
        facts = [str(change.get("kind"))]
        if change.get("edited"):
            facts.append("for the edited arguments")
        if change.get("exists") is False:
            facts.append("absent now")
        elif change.get("size") is not None:
            facts.append(f"{change['size']} bytes now")
        if change.get("sha256"):
            facts.append(f"sha256 {change['sha256']}")
        where = str(change.get("path") or "")
        if change.get("resolved") and change.get("resolved") != where:
            where += f" -> {change['resolved']}"
        lines.append(f"  - {_inert(where)} ({', '.join(facts)})")
        if change.get("note"):
            lines.append(f"    {_inert(str(change['note']))}")
        diff = change.get("diff")
        if diff:
            lines.extend(f"    | {_inert(line)}" for line in str(diff).splitlines())
    return lines


def _asker(request: ApprovalRequest) -> str:
    """Who asked: the principal, and the agent identity when it is another."""
    who = request.principal or request.agent or "-"
    if request.principal and request.agent and request.agent != request.principal:
        who += f" (agent {request.agent})"
    return who


def _inbox_url(args: argparse.Namespace) -> str | None:
    """The server's public URL, as ``signoff serve`` would take it (``None``: unknown)."""
    try:
        from signoff.server.settings import load_settings  # noqa: PLC0415 (server settings)

        return load_settings(policy_path=args.policy or "signoff.toml").base_url
    except Exception:  # a [server] table `signoff serve` would refuse: no link
        return None


def _decide(args: argparse.Namespace, decision: Decision) -> int:
    if getattr(args, "url", None):
        from signoff.cli.approving import decide_remote  # noqa: PLC0415 (only with --url)

        return decide_remote(args, decision)
    if args.expect_hash is not None:
        decision = replace(decision, expected_args_hash=shown_hash("--expect-hash",
                                                                   args.expect_hash))
    gate = open_gate(args)
    gate.passkeys.inbox_url = lambda: _inbox_url(args)  # a passkey refusal says where
    identity = gate.authenticate(token_of(args))
    result = gate.decide(args.request_id, decision, identity=identity,
                         idempotency_key=args.idempotency_key)
    body = result.to_dict()
    emit(args, body, _decided_text(body, result.request.thread_id))
    return 0


def _decided_text(body: dict[str, Any], thread_id: str | None) -> str:
    """A decision's answer (``DecisionResult.to_dict``, or the API's body) in one line."""
    text = (f"{body['request_id']}: {body['status']} "
            f"({body['approvals']}/{body['required']} approvals)")
    if body.get("review_mode") is not None:
        text += f"; thread {thread_id} is {body['review_mode']}"
        if body.get("also_approved"):
            text += f"; also approved {', '.join(body['also_approved'])}"
    return text


def cmd_requests_approve(args: argparse.Namespace) -> int:
    """One request, or several in bulk; on ``--db`` or ``--url`` (``cli.approving``)."""
    from signoff.cli.approving import cmd_requests_approve as approve  # noqa: PLC0415

    return approve(args)


def cmd_requests_reject(args: argparse.Namespace) -> int:
    return _decide(args, Decision.reject(args.reason, args.alternative))


def cmd_requests_edit(args: argparse.Namespace) -> int:
    return _decide(args, Decision.edit(args.args, reason=args.reason))


def cmd_requests_respond(args: argparse.Namespace) -> int:
    return _decide(args, Decision.respond(args.message))


def cmd_requests_cancel(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    identity = gate.authenticate(token_of(args))
    request = gate.withdraw(args.request_id, identity=identity, reason=args.reason)
    emit(args, request.to_dict(), f"{request.id}: {request.status.value} by {identity.name} "
         f"({request.outcome_reason})")
    return 0


def cmd_audit_verify(args: argparse.Namespace) -> int:
    trust = trust_of(args)  # read first: a bad key file fails before the database is opened
    gate = open_gate(args)
    result = gate.verify_audit(trust)
    text = (f"audit ok: {result.count} events" if result.ok else
            f"audit BROKEN at index {result.first_bad}: {result.reason}"
            if result.first_bad is not None else f"audit BROKEN: {result.reason}")
    if result.unsealed:
        text += (f"; {result.unsealed} committed events not sealed yet (held by a running "
                 "transaction; verified once sealed)")
    text += "\n" + checkpoint_lines(result)
    emit(args, result.to_dict(), text)
    return 0 if result.ok else 1


def checkpoint_lines(result: Verification) -> str:
    """What the signed checkpoints showed, and every finding with its index."""
    summary = result.checks.get("checkpoints", {})
    if summary.get("keys") == "outside":
        keys_said = f"keys from outside the database ({summary['keys_from']})"
    else:
        keys_said = ("the keys published in the database itself — whoever can rewrite the "
                     "database can replace them too: give --keys or --signing-key")
    lines = [f"signed checkpoints: {summary.get('verified', 0)} of {summary.get('signed', 0)} "
             f"verified with {keys_said}"]
    if summary.get("newest") is not None:
        lines.append(f"newest verified checkpoint at index {summary['newest']}; "
                     f"{summary.get('unsigned', 0)} events after it")
    lines += [f"{f.check} at index {f.index}: {f.code}: {f.reason}" for f in result.findings]
    return "\n".join(lines)


def cmd_audit_export(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    events = [e.to_dict() for e in gate.audit_events(after=args.after)]
    if args.json:
        print(json.dumps(events, indent=2, ensure_ascii=False))
    else:
        for event in events:
            print(json.dumps(event, ensure_ascii=False))
    held = gate.records.unsealed()
    if held:  # committed, but not in the chain yet: not in this export either; said
        what = "event is" if held == 1 else "events are"
        print(f"signoff: {held} committed audit {what} not sealed yet (a running "
              "transaction holds it back) and not in this export; run it again",
              file=sys.stderr)
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    report = open_gate(args).recover(run_approved=False)
    emit(args, report.to_dict(), ", ".join(f"{k} {v}" for k, v in report.to_dict().items()))
    return 0


