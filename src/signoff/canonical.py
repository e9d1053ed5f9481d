"""Canonical arguments: strict parsing, RFC 8785 bytes and the args hash.

What an approver sees, what is hashed and what runs must be the same bytes,
so arguments are parsed strictly (anything two JSON parsers could read
differently is refused) and serialised with RFC 8785 (JCS) by the ``rfc8785``
package. Limits keep a hostile model from making the policy slow or a
request unreadable.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import rfc8785

from signoff import jcs
from signoff.errors import InvalidArguments

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_SAFE_INTEGER = 2**53 - 1  # I-JSON / RFC 8785: integers beyond are not exact in every parser

_INEXACT_FLOAT = float(2**53)
_EXPONENT_FORM = 1e21  # from here on RFC 8785 / ECMAScript use exponent notation
_SURROGATE = re.compile("[\ud800-\udfff]")

def parse_args(raw: Mapping[str, Any] | str | bytes | None) -> dict[str, Any]:
    """Return the call's arguments as a validated JSON object.

    ``None`` means no arguments (``{}``). Text is parsed strictly; a mapping
    is checked against the same limits. Raises ``InvalidArguments`` with a
    stable code on anything else.
    """
    if raw is None:
        return {}
    if type(raw) is dict:  # what models and frameworks hand over: skip the ABC checks
        budget = _check(raw, 1)
        if budget > MAX_BYTES // 8 and len(canonical_bytes(raw)) > MAX_BYTES:
            raise InvalidArguments(
                f"arguments exceed {MAX_BYTES} bytes when canonicalised", code="too_large"
            )
        return raw
    if isinstance(raw, str | bytes | bytearray):
        value = _loads_strict(raw)
        if not isinstance(value, dict):
            raise InvalidArguments(
                f"arguments must be a JSON object, got {type(value).__name__}",
                code="not_an_object",
            )
        _check(value, 1)
        return value
    if isinstance(raw, Mapping):
        args = raw if isinstance(raw, dict) else dict(raw)
        budget = _check(args, 1)
        if budget > MAX_BYTES // 8 and len(canonical_bytes(args)) > MAX_BYTES:
            raise InvalidArguments(
                f"arguments exceed {MAX_BYTES} bytes when canonicalised", code="too_large"
            )
        return args
    raise InvalidArguments(
        f"arguments must be a JSON object, got {type(raw).__name__}", code="not_an_object"
    )


def canonical_bytes(args: Mapping[str, Any]) -> bytes:
    """RFC 8785 bytes of already-validated arguments."""
    try:
        return jcs.dumps(args)
    except rfc8785.CanonicalizationError as exc:  # validated input never gets here
        raise InvalidArguments(str(exc), code="unsupported_type") from exc


def args_hash(args: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical bytes: the identity of a call's arguments."""
    return "sha256:" + hashlib.sha256(canonical_bytes(args)).hexdigest()


def hash_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_text(args: Mapping[str, Any]) -> str:
    """The canonical bytes as text, for showing to approvers."""
    try:
        return jcs.text(args)
    except rfc8785.CanonicalizationError as exc:  # validated input never gets here
        raise InvalidArguments(str(exc), code="unsupported_type") from exc


def _loads_strict(raw: str | bytes | bytearray) -> Any:
    size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
    if size > MAX_BYTES:
        raise InvalidArguments(f"arguments exceed {MAX_BYTES} bytes ({size})", code="too_large")
    if isinstance(raw, bytes | bytearray):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArguments(f"arguments are not UTF-8: {exc}", code="invalid_json") from exc
    else:
        text = raw
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except InvalidArguments:
        raise
    except RecursionError as exc:
        raise InvalidArguments(f"arguments nest deeper than {MAX_DEPTH}", code="too_deep") from exc
    except ValueError as exc:
        raise InvalidArguments(f"arguments are not valid JSON: {exc}", code="invalid_json") from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidArguments(f"duplicate key {key!r} in arguments", code="duplicate_key")
            seen.add(key)
    return obj


def _no_constants(name: str) -> Any:
    raise InvalidArguments(f"{name} is not a JSON number", code="non_finite_number")


def _check(value: Any, depth: int) -> int:
    """Walk a value, enforcing the limits; return a rough byte budget used.

    Exact ``dict`` and ``str`` are tested first and a string inside an object is judged
    in place (the usual arguments are an object of strings); everything else, subclasses
    included, takes the ``isinstance`` chain below. Same order, same errors."""
    if depth > MAX_DEPTH:
        raise InvalidArguments(f"arguments nest deeper than {MAX_DEPTH}", code="too_deep")
    kind = type(value)
    if kind is dict:
        return _check_object(value, depth)
    if kind is str or isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            raise InvalidArguments("string holds a lone surrogate", code="lone_surrogate")
        return len(value) + 2
    if isinstance(value, dict):
        return _check_object(value, depth)
    if isinstance(value, list | tuple):
        used = 2
        for item in value:
            used += 1 + _check(item, depth + 1)
        return used
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise InvalidArguments(
                f"integer {value} is outside ±(2^53-1)", code="integer_out_of_range"
            )
        return 16
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArguments(f"{value} is not a JSON number", code="non_finite_number")
        if _INEXACT_FLOAT <= abs(value) < _EXPONENT_FORM:
            # RFC 8785 writes these as integer literals, which re-parse as integers
            # outside the safe range: refuse them the same way, whichever form came in.
            raise InvalidArguments(
                f"number {value!r} is an integer outside ±(2^53-1)", code="integer_out_of_range"
            )
        return 24
    raise InvalidArguments(
        f"{type(value).__name__} is not a JSON value", code="unsupported_type"
    )


def _check_object(value: dict[Any, Any], depth: int) -> int:
    used = 2
    leaf = depth < MAX_DEPTH  # a string one level down is within the depth limit
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidArguments(f"object key {key!r} is not a string", code="non_string_key")
        if not key.isascii() and _SURROGATE.search(key):
            raise InvalidArguments("object key holds a lone surrogate", code="lone_surrogate")
        if leaf and type(item) is str:
            if not item.isascii() and _SURROGATE.search(item):
                raise InvalidArguments("string holds a lone surrogate", code="lone_surrogate")
            used += len(key) + len(item) + 5
        else:
            used += len(key) + 3 + _check(item, depth + 1)
    return used
