"""Errors as ``application/problem+json`` (RFC 9457) carrying signoff's stable ``code``.

Every failure an HTTP client can cause ends here with a typed answer: a
``SignoffError`` keeps its code and status (an ``InvalidInput`` adds the
``field``, a ``StoreError`` the ``Retry-After`` header); a value refused by the
input contract in a body, path, query or header keeps the contract's code;
any other shape error is 422 ``invalid_body``; a database error that escaped
the store's typing is typed here (``signoff.store.faults``); anything
unexpected is a 500 ``internal_error``. No detail names internals: they are
logged instead.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match

from signoff.errors import ArgsChanged, Conflict, InvalidInput, SignoffError, StoreError
from signoff.inputs import CODES
from signoff.store.faults import classify

if TYPE_CHECKING:  # problem() needs only Starlette: mcp-proxy --listen has no FastAPI
    from fastapi import FastAPI

PROBLEM = "application/problem+json"
log = logging.getLogger("signoff.server")

_TITLES = {400: "Bad request", 401: "Unauthenticated", 403: "Forbidden", 404: "Not found",
           405: "Method not allowed", 409: "Conflict", 410: "Gone", 413: "Too large",
           415: "Unsupported media type", 422: "Unprocessable content", 500: "Internal error",
           503: "Service unavailable"}


def problem(status: int, code: str, detail: str, *, headers: Mapping[str, str] | None = None,
            **extra: Any) -> Response:
    body = {"type": f"https://signoff.dev/problems/{code}", "title": _TITLES.get(status, "Error"),
            "status": status, "code": code, "detail": detail, **extra}
    headers = dict(headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="signoff"'
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type=PROBLEM,
                    headers=headers)


def error_response(request: Request, exc: SignoffError) -> Response:
    """The problem for a ``SignoffError``: a store fault with ``Retry-After`` (and logged,
    since the client is told only what it can act on), a bad input naming its field."""
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(exc, Conflict) and exc.status:
        extra["request_status"] = exc.status
    if isinstance(exc, ArgsChanged):  # what would run now, to show the approver
        extra["args_hash"] = exc.args_hash
        extra["args"] = json.loads(exc.current_args)
    if isinstance(exc, InvalidInput) and exc.field:
        extra["field"] = exc.field
    if isinstance(exc, StoreError):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, StoreError) and not exc.reported:  # an outage is logged once, by the store
        log.warning("%s %s: %s (%s)", request.method, request.url.path, exc.code,
                    exc.__cause__ or exc.message)
    return problem(exc.http_status, exc.code, exc.message, headers=headers, **extra)


def install(app: FastAPI) -> None:
    from fastapi.exceptions import RequestValidationError  # noqa: PLC0415

    @app.exception_handler(SignoffError)
    async def signoff_error(request: Request, exc: SignoffError) -> Response:
        return error_response(request, exc)

    async def driver_error(request: Request, exc: Exception) -> Response:
        typed = classify(exc)  # a database failure that escaped the store's own typing
        if typed is None:
            return await unexpected(request, exc)
        return error_response(request, typed)

    app.add_exception_handler(sqlite3.Error, driver_error)
    psycopg = sys.modules.get("psycopg")  # imported by a PostgreSQL store, if any
    if psycopg is not None:
        app.add_exception_handler(psycopg.Error, driver_error)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Request, exc: RequestValidationError) -> Response:
        errors: list[dict[str, Any]] = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
            for e in exc.errors()]
        kinds = [str(e.get("type", "")) for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid"}
        where, field = _field(list(first["loc"]))
        # A refusal by the input contract keeps its code (signoff.inputs); pydantic's own
        # shape errors are invalid_body.
        code = kinds[0] if kinds and kinds[0] in CODES else "invalid_body"
        extra: dict[str, Any] = {"field": field} if code != "invalid_body" and field else {}
        return problem(422, code, f"{where or 'body'}: {first['msg']}", errors=errors,
                       **extra)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return problem(exc.status_code, code, str(exc.detail), headers=headers)

    app.add_exception_handler(Exception, unexpected)


async def unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "the server failed; the error was logged")


def _field(loc: list[str]) -> tuple[str, str]:
    """``("body.call_id", "call_id")`` for a body field; a header by its HTTP name."""
    where = ".".join(loc)
    if not loc or loc[0] not in ("body", "path", "query", "header"):
        return where, where
    field = ".".join(loc[1:])
    if loc[0] == "header":
        field = "-".join(part.capitalize() for part in field.replace("_", "-").split("-"))
    return where, field


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (GET and PUT live on two routes)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, BaseRoute) and getattr(route, "methods", None):
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods.update(route.methods)  # type: ignore[attr-defined]
    return sorted(methods)


def problem_schema() -> dict[str, Any]:
    """The OpenAPI schema of a problem body (every error response uses it)."""
    return {"type": "object", "required": ["status", "code", "detail"],
            "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                           "status": {"type": "integer"}, "code": {"type": "string"},
                           "detail": {"type": "string"}}}


def json_response(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)
