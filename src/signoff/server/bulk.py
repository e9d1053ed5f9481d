"""Bulk approval in the inbox: tick pending calls of one shape, read them all on one
confirmation page, approve each by its own decision (``signoff.kernel.bulk``).

``GET /bulk?id=…`` draws the confirmation: every call with its exact arguments, escaped and
with hidden characters flagged as on a request's own page, and a form that carries each
request id with the arguments hash drawn beside it. ``POST /bulk`` sends exactly that list
to ``Gate.approve_many``: a call added after the page was drawn is not in it, and one
whose arguments changed since is refused by its hash. The answer page says, call by call,
what was approved and what was not, and why.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff import inputs
from signoff.errors import InvalidInput, SignoffError
from signoff.identity import Identity
from signoff.kernel.bulk import BULK_MAX, Refused, excluded
from signoff.model import ApprovalRequest
from signoff.reveal import reveal
from signoff.server.approvals import approve_many
from signoff.server.auth import authenticate
from signoff.server.inbox import _field, card_listing, change_views, render, signed_in
from signoff.server.state import AppState, state_of

bulk_pages = APIRouter(include_in_schema=False)


def call_view(request: ApprovalRequest) -> dict[str, Any]:
    """One call as the confirmation shows it: the texts escaped and flagged as on its own
    page (``reveal``), its changes as diffs, and the hash of the arguments shown."""
    args_html, flagged = reveal(request.run_args)
    tool_html, flagged_tool = reveal(request.tool)
    summary_html, flagged_summary = reveal(request.summary)
    description_html, flagged_desc = reveal(request.description)
    changes, flagged_changes = change_views(request)
    return {"r": request, "args_html": args_html, "tool_html": tool_html,
            "summary_html": summary_html, "description_html": description_html,
            "flagged": flagged + flagged_tool + flagged_summary + flagged_desc,
            "changes": changes, "flagged_changes": flagged_changes,
            "shown_hash": request.run_hash}


def bulk_data(state: AppState, ids: list[str], identity: Identity) -> dict[str, Any]:
    """The calls ``ids`` names that ``identity`` may approve together, and the rest with
    why not. Raises ``InvalidInput`` for a selection no confirmation can be drawn for."""
    gate = state.gate
    if not ids:
        raise InvalidInput("select at least one pending call", code="nothing_listed",
                           field="id")
    if len(ids) > BULK_MAX:
        raise InvalidInput(f"at most {BULK_MAX} calls are approved together",
                           code="too_many_listed", field="id")
    now = gate.clock()
    calls: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    for request_id in dict.fromkeys(inputs.identifier("id", i) for i in ids):
        request = gate.find_request(request_id)
        why = Refused(request_id, "not_found", f"no approval request {request_id!r}") \
            if request is None else excluded(request, identity, now)
        if why is not None:
            left_out.append({"id": request_id, "code": why.code, "message": why.message,
                             "r": request})
        else:
            assert request is not None
            calls.append(call_view(request))
    shapes = {gate.shape_of(c["r"]).describe() for c in calls}
    return {"calls": calls, "left_out": left_out, "shapes": sorted(shapes),
            "shape": next(iter(shapes)) if len(shapes) == 1 else None}


@bulk_pages.get("/bulk")
async def bulk_page(request: Request) -> Response:
    """The confirmation of the calls ticked in the inbox (``?id=`` each)."""
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    ids = request.query_params.getlist("id")
    state = state_of(request)
    try:
        data = await run_in_threadpool(bulk_data, state, ids, who)
    except SignoffError as exc:
        return render(request, "bulk.html", status=exc.http_status, calls=[], left_out=[],
                      shape=None, shapes=[],
                      error={"code": exc.code, "message": exc.message})
    if len(data["shapes"]) > 1:
        return render(request, "bulk.html", status=422, error={
            "code": "mixed_shapes", "message": "calls approved together must share one "
            "shape (tool, argument names, commands); selected: " + "; ".join(
                data["shapes"])}, **data)
    return render(request, "bulk.html", **data)


@bulk_pages.post("/bulk")
async def bulk_decide(request: Request) -> Response:
    """Approve once each call the confirmation listed (``listed``: ``<id> <hash>``)."""
    form = await request.form()
    state = state_of(request)
    identity = await authenticate(state.gate, request, csrf=_field(form, "csrf"))
    listed: list[tuple[str, str]] = []
    try:
        listed = card_listing(form)
        result = await approve_many(state, listed, identity)
    except SignoffError as exc:
        ids = [request_id for request_id, _ in listed]
        try:
            data = await run_in_threadpool(bulk_data, state, ids, identity)
        except SignoffError:
            data = {"calls": [], "left_out": [], "shape": None, "shapes": []}
        return render(request, "bulk.html", status=exc.http_status,
                      error={"code": exc.code, "message": exc.message}, **data)
    return render(request, "bulk_done.html", result=result,
                  shape=result.shape.describe() if result.shape else None)
