"""``/requests``: every request, newest first, a keyset page at a time, with the API's
filters and text search (``signoff.store.pages``) — the inbox shows what waits; this
finds what happened, at a million requests as at ten."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff.model import RequestStatus, Risk
from signoff.server import schemas
from signoff.server.inbox import Row, render, signed_in
from signoff.server.state import state_of
from signoff.store.pages import CURSOR_MAX, RequestQuery, cursor_of, parse_cursor

PAGE = 50

history = APIRouter(include_in_schema=False)


@history.get("/requests")
async def all_requests(request: Request, *,
                       status: Annotated[RequestStatus | None, Query()] = None,
                       risk: Annotated[Risk | None, Query()] = None,
                       tool: Annotated[schemas.ToolName | None, Query()] = None,
                       thread_id: Annotated[schemas.Identifier | None, Query()] = None,
                       requester: Annotated[schemas.Identifier | None, Query()] = None,
                       q: Annotated[schemas.SearchText | None, Query()] = None,
                       cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None
                       ) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    after = parse_cursor(cursor) if cursor else None
    query = RequestQuery(status=status, risk=risk, tool=tool or None,
                         thread_id=thread_id or None, requester=requester or None,
                         text=q or None)
    state = state_of(request)
    found = await run_in_threadpool(lambda: state.gate.list_requests(
        query=query, after=after, limit=PAGE + 1))
    now = state.gate.clock()
    page = found[:PAGE]
    filters = {"status": status and status.value, "risk": risk and risk.value, "tool": tool,
               "thread_id": thread_id, "requester": requester, "q": q}
    kept = {k: v for k, v in filters.items() if v}
    older = (f"/requests?{urlencode({**kept, 'cursor': cursor_of(page[-1])})}"
             if len(found) > PAGE else None)
    data: dict[str, Any] = {"rows": [Row(r, now) for r in page], "filters": filters,
                            "statuses": [s.value for s in RequestStatus],
                            "risks": [r.value for r in Risk], "older": older,
                            "first": f"/requests?{urlencode(kept)}" if cursor else None}
    return render(request, "requests.html", **data)
