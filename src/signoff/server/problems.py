"""Errors as ``application/problem+json`` (RFC 9457) carrying signoff's stable ``code``.

Every failure an HTTP client can cause ends here with a typed answer: a
``SignoffError`` keeps its code and status; a body FastAPI cannot parse is 422
``invalid_body``; anything unexpected is a 500 ``internal_error`` whose detail
names no internals (it is logged instead).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match

from signoff.errors import Conflict, SignoffError

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


def install(app: FastAPI) -> None:
    @app.exception_handler(SignoffError)
    async def signoff_error(_: Request, exc: SignoffError) -> Response:
        extra: dict[str, Any] = {}
        if isinstance(exc, Conflict) and exc.status:
            extra["request_status"] = exc.status
        return problem(exc.http_status, exc.code, exc.message, **extra)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Request, exc: RequestValidationError) -> Response:
        errors = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
                  for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid"}
        return problem(422, "invalid_body",
                       f"{'.'.join(first['loc']) or 'body'}: {first['msg']}", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return problem(exc.status_code, code, str(exc.detail), headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(500, "internal_error", "the server failed; the error was logged")


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
