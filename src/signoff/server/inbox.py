"""The web inbox: server-rendered pages over the same gate the API uses.

Forms post and redirect (303), so every action works without JavaScript; the
little script in ``static/inbox.js`` adds live refresh over SSE and expiry
countdowns. GET never changes state, with one exception: opening a one-time
login link uses it up and starts a session. Every form carries the CSRF token;
the session cookie is HttpOnly and SameSite=Strict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from signoff.canonical import parse_args
from signoff.errors import InvalidDecision, InvalidInput, SignoffError, Unauthenticated
from signoff.identity import Identity, IdentityKind, Session
from signoff.kernel.auto_thread import same_pause
from signoff.kernel.bulk import excluded
from signoff.kernel.cancelling import CANCELLABLE
from signoff.kernel.deciding import approvers_of
from signoff.kernel.ownership import asked, decision_refusal, refusal
from signoff.kernel.visibility import require_approver
from signoff.model import ApprovalRequest, Decision, RequestStatus, ReviewMode
from signoff.policy.definitions import definition_changed
from signoff.reveal import escape_json, reveal
from signoff.server.approvals import decide_as
from signoff.server.auth import COOKIE, authenticate, csrf_for
from signoff.server.bodies import RequestId, ThreadId
from signoff.server.state import AppState, state_of
from signoff.server.threads import allowed_modes, set_mode, thread_view
from signoff.settled import settled
from signoff.shown import shown_hash
from signoff.times import iso, shown

pages = APIRouter(include_in_schema=False)
PENDING_PAGE = 50  # pending requests the inbox shows; the rest: /requests?status=pending
env = Environment(loader=PackageLoader("signoff.server", "templates"),
                  autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
env.filters["urlencode"] = lambda value: quote(str(value), safe="")
env.filters["reveal"] = lambda value: reveal(value)[0]  # agent-supplied text, flagged
env.filters["utc"] = shown  # every time on a page says its zone: 2026-12-06 08:12 UTC
env.filters["iso"] = iso

MODE_HELP = {"manual": "a human reviews every gated call",
             "auto": "the reviewer approves low and medium risk; a human the rest",
             "full": "gated calls run without review"}


def render(request: Request, template: str, status: int = 200, **data: Any) -> HTMLResponse:
    secret = getattr(request.state, "session_secret", None)
    data.setdefault("identity", getattr(request.state, "identity", None))
    data["csrf"] = csrf_for(secret) if secret else ""
    html = env.get_template(template).render(**data)
    return HTMLResponse(html, status_code=status)


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60)}m"


class Row:
    """A request as a list row: the request's fields plus display text; in the inbox,
    whether the reader may tick it for a bulk approval (``bulk``: its shape's key) or why
    not (``bulk_why``)."""

    bulk: str | None = None
    bulk_shape: str = ""
    bulk_why: str = ""

    def __init__(self, request: ApprovalRequest, now: float) -> None:
        self.r = request
        self.summary_html = reveal(request.summary)[0]
        self.definition_changed = definition_changed(request)
        self.age = _age(now - request.created_at) + " ago"
        self.expires_in = "in " + _age(request.expires_at - now) if request.expires_at else ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.r, name)


async def signed_in(request: Request) -> Identity | Response:
    """The person reading a page; the inbox lists every requester's calls, so an agent's
    bearer token is refused here (``403 approver_required``), as it is at sign-in."""
    try:
        identity = await authenticate(state_of(request).gate, request)
        require_approver(identity, "the inbox")
        return identity
    except Unauthenticated as exc:
        why = f"?why={exc.code}" if exc.code in LOGIN_MESSAGES else ""
        response = RedirectResponse(f"/login{why}", status_code=303)
        if request.cookies.get(COOKIE):
            response.delete_cookie(COOKIE, path="/")
        return response


@pages.get("/")
async def home() -> Response:
    return RedirectResponse("/inbox", status_code=303)


LOGIN_MESSAGES = {"session_expired": "Your session expired; sign in again.",
                  "signed_out": "You are signed out.",
                  "identity_disabled": "This user is disabled."}


@pages.get("/login")
async def login(request: Request, code: str | None = None, token: str | None = None,
                why: str | None = None) -> Response:
    """The sign-in page; with ``?code=`` a one-time login link, used up by this request."""
    if token is not None:
        return render(request, "login.html", status=400, error={
            "code": "token_in_url", "message": "a token is never taken from a URL (it would "
            "stay in browser history and logs); paste it into the form below"})
    if not code:
        return render(request, "login.html", flash=LOGIN_MESSAGES.get(why or ""))
    state = state_of(request)
    try:
        secret, session = await run_in_threadpool(state.gate.redeem_login_link, code,
                                                  limits=state.settings.limits)
    except SignoffError as exc:
        return render(request, "login.html", status=exc.http_status,
                      error={"code": exc.code, "message": exc.message})
    return await _signed_in(request, secret, session)


@pages.post("/login")
async def login_with_token(request: Request) -> Response:
    """Sign in by pasting a token: it travels in the body, never in a URL."""
    form = await request.form()
    state = state_of(request)
    try:
        secret, session = await run_in_threadpool(
            state.gate.sign_in, (_field(form, "token") or "").strip(),
            limits=state.settings.limits)
    except SignoffError as exc:
        return render(request, "login.html", status=exc.http_status,
                      error={"code": exc.code, "message": exc.message})
    return await _signed_in(request, secret, session)


async def _signed_in(request: Request, secret: str, session: Session) -> Response:
    """Set the new session's cookie; a session the browser had before ends (one browser,
    one session: the old one would otherwise live on, unseen, until it expired)."""
    state = state_of(request)
    previous = request.cookies.get(COOKIE)
    if previous and previous != secret:
        await run_in_threadpool(state.gate.end_session, previous)
    response = RedirectResponse("/inbox", status_code=303)
    response.set_cookie(COOKIE, secret, httponly=True, samesite="strict",
                        secure=state.settings.secure_cookies,
                        max_age=max(1, int(session.expires_at - state.gate.clock())), path="/")
    return response


@pages.post("/logout")
async def logout(request: Request) -> Response:
    form = await request.form()
    state = state_of(request)
    await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    secret = getattr(request.state, "session_secret", None)
    if secret:
        await run_in_threadpool(state.gate.end_session, secret)
    response = RedirectResponse("/login?why=signed_out", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def inbox_data(state: AppState, identity: Identity | None = None) -> dict[str, Any]:
    gate = state.gate
    after = gate.audit_head()[0]  # read first: the page's live stream replays what follows
    now = gate.clock()
    # A page of the newest pending requests, the most urgent first; the rest are a link
    # away (/requests?status=pending): rendering hundreds of rows was the page's cost.
    pending = gate.list_requests(status=RequestStatus.PENDING, limit=PENDING_PAGE + 1)
    more = len(pending) > PENDING_PAGE
    pending = pending[:PENDING_PAGE]
    recent = [r for r in gate.list_requests(limit=40) if r.status is not RequestStatus.PENDING]
    threads: dict[str, int] = {}
    for r in pending:
        if r.thread_id:
            threads[r.thread_id] = threads.get(r.thread_id, 0) + 1
    order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
    pending.sort(key=lambda r: (order.get(r.risk.value, 4), r.created_at))
    rows = [Row(r, now) for r in pending]
    if identity is not None:
        for row in rows:
            why = excluded(row.r, identity, now)
            if why is None:
                shape = gate.shape_of(row.r)
                row.bulk, row.bulk_shape = shape.key, shape.describe()
            else:
                row.bulk_why = why.message
    return {"pending": rows, "recent": [Row(r, now) for r in recent[:15]],
            "threads": [{"id": t, "count": n} for t, n in sorted(threads.items())],
            "more_pending": more, "after": after}


@pages.get("/inbox")
async def inbox(request: Request, fragment: bool = False) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    data = await run_in_threadpool(inbox_data, state_of(request), who)
    return render(request, "_list.html" if fragment else "inbox.html", **data)


_CHANGE_KINDS = {
    "diff": "changes", "new": "new file", "binary": "binary: no diff",
    "too_large": "too large: no diff", "secret": "credentials file: content not shown",
    "unreadable": "not read", "edit_failed": "the edit cannot apply",
    "shell_write": "written by the shell command", "write": "written: content not declared",
    "outside": "outside the workspace: not read", "omitted": "more files"}


def _diff_class(line: str) -> str:
    """The CSS class of one diff line, by its first characters; nothing else is styled."""
    if line.startswith(("+++ ", "--- ")):
        return "diff-file"
    if line.startswith("@@"):
        return "diff-hunk"
    if line.startswith("… ") or line.startswith("\\"):
        return "diff-note"
    return {"+": "diff-add", "-": "diff-del"}.get(line[:1], "diff-ctx")


def change_views(req: ApprovalRequest) -> tuple[list[dict[str, Any]], int]:
    """The write evidence as the page shows it: every text escaped (and hidden characters
    flagged) here, each diff line with a class for its colour; and how many were flagged."""
    views: list[dict[str, Any]] = []
    flagged = 0
    for change in req.changes:
        lines: list[tuple[str, Markup]] = []
        for line in str(change.get("diff") or "").splitlines():
            html, count = reveal(line)
            flagged += count
            lines.append((_diff_class(line), html))
        path_html, count = reveal(str(change.get("path") or ""))
        flagged += count
        kind = str(change.get("kind"))
        views.append({**change, "kind_text": _CHANGE_KINDS.get(kind, kind),
                      "path_html": path_html, "diff_lines": lines})
    return views, flagged


def request_data(state: AppState, request_id: str, identity: Identity) -> dict[str, Any]:
    gate = state.gate
    after = gate.audit_head()[0]
    req = gate.request(request_id)
    decisions = gate.decisions(req.id)
    approvers = approvers_of(req, decisions)
    args_html, flagged = reveal(req.run_args)
    description_html, flagged_desc = reveal(req.description)
    summary_html, flagged_summary = reveal(req.summary)
    tool_html, flagged_tool = reveal(req.tool)
    changes, flagged_changes = change_views(req)
    try:
        pretty = escape_json(json.dumps(json.loads(req.run_args), indent=2,
                                        ensure_ascii=False))
    except ValueError:
        pretty = req.run_args
    refused = refusal(req, identity)  # the very checks decide() makes
    can_decide, why = refused is None, refused.message if refused else ""
    party: dict[str, str | None] = {"grant": None, "edit": None, "auto": None}
    others: list[Row] = []
    can_auto = False
    if can_decide and req.thread_id and req.status is RequestStatus.PENDING:
        parties = gate.thread_parties(req.thread_id)
        for name, probe in (("grant", Decision.approve(scope="thread")),
                            ("edit", Decision.edit({})),
                            ("auto", Decision.approve(scope="auto_thread"))):
            found = decision_refusal(req, identity.name, probe, parties)
            party[name] = found.message if found else None
        # "Auto-approve this thread" (the approval card): offered where the ceiling allows auto;
        # the page names the pause's other calls it would approve with this one
        can_auto = party["auto"] is None and ReviewMode.AUTO in allowed_modes(gate)
        if can_auto:  # the calls of this pause only (same run and asker): the form lists
            # each with its arguments hash, and the kernel approves no other
            others = [Row(r, gate.clock()) for r in gate.pending_on_thread(req.thread_id)
                      if r.id != req.id and same_pause(req, r)]
    can_cancel = req.status in CANCELLABLE and (asked(req, identity.name)
                                                or identity.kind is IdentityKind.ADMIN)
    now = gate.clock()
    return {"r": req, "request_id": req.id, "thread_id": req.thread_id, "decisions": decisions,
            # the hash of the arguments this page shows: its decision forms carry it back
            "shown_hash": req.run_hash,
            "approvals": len(approvers), "approvers": approvers, "args_html": args_html,
            "flagged": flagged + flagged_desc + flagged_summary + flagged_tool,
            "changes": changes, "flagged_changes": flagged_changes,
            "summary_html": summary_html, "tool_html": tool_html,
            "definition_changed": definition_changed(req),
            "description_html": description_html, "pretty_args": pretty,
            "edited_from": req.args if req.approved_args is not None else None,
            "expires_in": "in " + _age(req.expires_at - now) if req.expires_at else "",
            "settled": settled(req, decisions),
            "can_decide": can_decide, "cannot_decide": why, "after": after,
            "cannot_grant": party["grant"], "cannot_edit": party["edit"],
            "can_auto_thread": can_auto, "pause_others": others,
            "can_cancel": can_cancel,
            "has_passkey": bool(req.passkey and gate.passkeys.passkeys(identity.name))}


@pages.get("/requests/{request_id}")
async def request_page(request: Request, request_id: RequestId, fragment: bool = False,
                       done: str | None = None) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    data = await run_in_threadpool(request_data, state_of(request), request_id, who)
    flash = {"approved": "Approved.", "rejected": "Rejected; the agent gets your reason.",
             "edited": "Approved with your edited arguments.", "responded": "Response sent.",
             "cancelled": "Cancelled; the agent gets your reason.",
             "recorded": "Your approval is recorded; more approvals are needed.",
             "auto": "Approved; this thread is now on auto-approve, and its other waiting "
                     "calls that were yours to decide are approved too."}.get(done or "")
    return render(request, "_status.html" if fragment else "request.html", flash=flash, **data)


def _field(form: Mapping[str, Any], name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


@pages.post("/requests/{request_id}/decide")
async def decide_form(request: Request, request_id: RequestId) -> Response:
    form = await request.form()
    state = state_of(request)
    identity = await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    action = _field(form, "action") or ""
    try:
        decision = _form_decision(action, form)
        result = await decide_as(state, request_id, decision, identity, None)
    except SignoffError as exc:
        data = await run_in_threadpool(request_data, state, request_id, identity)
        return render(request, "request.html", status=exc.http_status,
                      error={"code": exc.code, "message": exc.message}, **data)
    done = {"approve_once": "approved", "approve_thread": "approved",
            "approve_auto_thread": "auto", "reject": "rejected", "edit": "edited",
            "respond": "responded"}[action]
    if action.startswith("approve") and result.request.status is RequestStatus.PENDING:
        done = "recorded"
    return RedirectResponse(f"/requests/{quote(request_id, safe='')}?done={done}",
                            status_code=303)


@pages.post("/requests/{request_id}/cancel")
async def cancel_form(request: Request, request_id: RequestId) -> Response:
    form = await request.form()
    state = state_of(request)
    identity = await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    try:
        await run_in_threadpool(lambda: state.gate.withdraw(
            request_id, identity=identity, reason=_field(form, "reason") or ""))
    except SignoffError as exc:
        data = await run_in_threadpool(request_data, state, request_id, identity)
        return render(request, "request.html", status=exc.http_status,
                      error={"code": exc.code, "message": exc.message}, **data)
    return RedirectResponse(f"/requests/{quote(request_id, safe='')}?done=cancelled",
                            status_code=303)


def card_listing(form: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The calls the auto-approve card showed: ``listed`` fields of ``<id> <hash>``."""
    getlist = getattr(form, "getlist", None)
    values = getlist("listed") if callable(getlist) else []
    pairs: list[tuple[str, str]] = []
    for value in values:
        parts = value.split(" ") if isinstance(value, str) else []
        if len(parts) != 2:
            raise InvalidInput("listed: expected a request id and an arguments hash",
                               code="invalid_listed", field="listed")
        pairs.append((parts[0], parts[1]))
    return pairs


def _form_decision(action: str, form: Mapping[str, Any]) -> Decision:
    """The decision a form says, bound to the arguments hash the page showed with it (a page
    an edit has overtaken is refused with ``args_changed``, and shown again as it is now)."""
    decision = _form_kind(action, form)
    shown = _field(form, "expected_args_hash")
    if shown is None:
        return decision
    return replace(decision, expected_args_hash=shown_hash("expected_args_hash", shown))


def _assertion(form: Mapping[str, Any]) -> dict[str, Any] | None:
    """The passkey assertion the page's script put in the form (docs/signatures.md)."""
    text = _field(form, "assertion")
    return parse_args(text) if text else None


def _form_kind(action: str, form: Mapping[str, Any]) -> Decision:
    assertion = _assertion(form)
    if action == "approve_once":
        return Decision.approve(scope="once", assertion=assertion)
    if action == "approve_thread":
        return Decision.approve(scope="thread", assertion=assertion)
    if action == "approve_auto_thread":
        return Decision.approve(scope="auto_thread", listed=card_listing(form),
                                assertion=assertion)
    if action == "reject":
        alternatives = [a.strip() for a in (_field(form, "alternatives") or "").splitlines()
                        if a.strip()]
        return Decision.reject(_field(form, "reason") or "", alternatives)
    if action == "edit":
        return Decision.edit(parse_args(_field(form, "args") or ""),
                             reason=_field(form, "reason") or None, assertion=assertion)
    if action == "respond":
        message = (_field(form, "message") or "").strip()
        if not message:
            raise InvalidDecision("a response needs a message", code="missing_message")
        return Decision.respond(message)
    raise InvalidDecision(f"unknown action {action!r}", code="unknown_action")


def thread_data(state: AppState, thread_id: str) -> dict[str, Any]:
    after = state.gate.audit_head()[0]
    view = thread_view(state.gate, thread_id)
    allowed = {m.value for m in allowed_modes(state.gate)}
    modes = [{"value": m, "label": f"{m} review mode", "help": MODE_HELP[m],
              "allowed": m in allowed} for m in ("manual", "auto", "full")]
    return {"thread": view, "thread_id": thread_id, "modes": modes, "after": after}


@pages.get("/threads/{thread_id:path}")
async def thread_page(request: Request, thread_id: ThreadId, fragment: bool = False,
                      done: str | None = None) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    data = await run_in_threadpool(thread_data, state_of(request), thread_id)
    page = "thread.html"
    if fragment:  # the part below the heading
        html = bytes(render(request, page, can_decide=who.may_decide, **data).body).decode()
        start = html.index('<div id="thread-body">') + len('<div id="thread-body">')
        end = html.rindex("</div>", start, html.index("</main>"))
        return HTMLResponse(html[start:end])
    flash = "Review mode saved." if done == "mode" else None
    return render(request, page, can_decide=who.may_decide, flash=flash, **data)


@pages.post("/threads/{thread_id:path}/mode")
async def thread_mode(request: Request, thread_id: ThreadId) -> Response:
    form = await request.form()
    state = state_of(request)
    identity = await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    mode = _field(form, "review_mode") or ""
    try:
        if mode not in MODE_HELP:
            raise InvalidDecision(f"unknown review mode {mode!r}", code="unknown_review_mode")
        if mode == "full" and _field(form, "confirm") != "yes":
            raise InvalidDecision("full mode runs gated calls without review; confirm it",
                                  code="confirmation_required")
        from signoff.server.auth import require_decider  # noqa: PLC0415

        require_decider(identity)
        await run_in_threadpool(set_mode, state.gate, thread_id, mode, identity)
    except SignoffError as exc:
        data = await run_in_threadpool(thread_data, state, thread_id)
        return render(request, "thread.html", status=exc.http_status,
                      can_decide=identity.may_decide,
                      error={"code": exc.code, "message": exc.message}, **data)
    return RedirectResponse(f"/threads/{quote(thread_id, safe='')}?done=mode", status_code=303)


def static_file(name: str) -> tuple[bytes, str]:
    data = resources.files("signoff.server").joinpath("static", name).read_bytes()
    return data, "text/javascript" if name.endswith(".js") else "text/css"


@pages.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in ("inbox.js", "inbox.css"):
        return Response("not found", status_code=404, media_type="text/plain")
    data, media = static_file(name)
    return Response(data, media_type=media, headers={"Cache-Control": "no-cache"})


