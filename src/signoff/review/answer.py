"""The reviewer's answer: one strict JSON verdict, or it is not an answer.

``{"verdict": "approve" | "escalate", "reason": "..."}`` and nothing else,
checked against a JSON Schema with ``additionalProperties: false``. An answer
with an extra field is refused, not trimmed: a model that adds fields is not
following the format it was given, and that is doubt. So are duplicate keys,
text around the object, an empty answer or a refusal. Doubt goes to a human.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

MAX_REASON = 500
MAX_ANSWER = 2000  # the raw answer kept in the record

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["approve", "escalate"]},
        "reason": {"type": "string", "minLength": 1, "maxLength": MAX_REASON},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


@functools.cache
def _validator() -> Any:
    """The verdict schema's validator, built on first use (jsonschema takes 60 ms to import:
    a policy without a model reviewer never needs it)."""
    import jsonschema  # noqa: PLC0415

    return jsonschema.Draft202012Validator(VERDICT_SCHEMA)


class InvalidAnswer(ValueError):
    """Why an answer is not a verdict; ``code`` is the outcome's ``error``."""

    def __init__(self, message: str, code: str = "review_invalid") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Answer:
    approve: bool
    reason: str


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidAnswer(f"duplicate key {key!r} in the answer")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise InvalidAnswer(f"{name} is not JSON")


def parse_answer(text: str | None) -> Answer:
    """The verdict in ``text``, or ``InvalidAnswer`` saying what is wrong with it."""
    if text is None or not text.strip():
        raise InvalidAnswer("the answer is empty")
    try:
        value = json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"the answer is not one JSON object: {exc.msg}") from None
    errors = sorted(_validator().iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidAnswer(f"the answer breaks the verdict schema: {errors[0].message[:200]}")
    return Answer(approve=value["verdict"] == "approve", reason=value["reason"])
