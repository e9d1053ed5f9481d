"""Reading request bodies strictly, and the shapes every API module shares.

A body is parsed with the same strict parser as tool arguments — a duplicate
key, ``NaN``, a lone surrogate, too deep or too large is an error with its own
code — because the bytes hashed must be the bytes meant; only then is its
shape validated against the pydantic model.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import Path
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from signoff.canonical import parse_args
from signoff.errors import InvalidArguments
from signoff.model import ApprovalRequest
from signoff.server import schemas
from signoff.server.problems import problem_schema

M = TypeVar("M", bound=BaseModel)
MAX_BODY = (1 << 20) + 64 * 1024  # the arguments' limit plus room for the envelope
MAX_INDEX = 2**53 - 1  # audit indexes; beyond this a database integer would overflow

# Ids in paths, by the input contract (signoff.inputs). A thread id may hold "/": its
# routes take the rest of the path ("{thread_id:path}"), and links percent-encode it.
RequestId = Annotated[schemas.Identifier, Path(description="a request id (req_…)")]
ThreadId = Annotated[schemas.Identifier, Path(
    description="a thread id: 1–200 visible ASCII characters; percent-encode '/', '#', "
    "'?' and '%'")]

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "content": {"application/problem+json": {
        "schema": problem_schema()}}}
    for code, text in [(400, "bad input or Host"), (401, "no or unknown token"),
                       (403, "not allowed (role, self-approval, agent, CSRF, origin)"),
                       (404, "no such request"), (409, "state moved on (already decided, …)"),
                       (410, "the request expired"), (422, "malformed body or decision"),
                       (503, "database unavailable")]}


def body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its body with ``read_body``."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema()}}}}


async def read_body(request: Request, model: type[M]) -> M:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidArguments(f"body exceeds {MAX_BODY} bytes", code="too_large")
    try:
        data = parse_args(raw)
    except InvalidArguments as exc:
        raise InvalidArguments(f"body: {exc.message}", code=exc.code) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None


def request_fields(req: ApprovalRequest) -> dict[str, Any]:
    """A request as the API shows it (the ``Request`` schema's fields)."""
    data = req.to_dict()
    return {key: data.get(key) for key in schemas.Request.model_fields}
