"""Canonical arguments: RFC 8785 bytes, the args hash, and strict parsing with stable codes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signoff import InvalidArguments, args_hash, canonical_bytes, parse_args
from signoff.canonical import MAX_BYTES, MAX_DEPTH, MAX_SAFE_INTEGER

GOLDEN = Path(__file__).parent / "golden" / "args_hashes.json"


# RFC 8785 §3.2.3: keys sort by UTF-16 code units, not code points.
def test_rfc8785_key_order() -> None:
    value = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew",
             "1": "One", "\U0001f600": "Emoji", "\u0080": "Control", "\u00f6": "o-umlaut"}
    text = canonical_bytes(value).decode("utf-8")
    keys = [k for k, _ in json.loads(text, object_pairs_hook=list)]
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


# RFC 8785 Appendix B: ECMAScript number serialisation.
@pytest.mark.parametrize(("number", "expected"), [
    (0.0, "0"), (-0.0, "0"), (1e21, "1e+21"), (1e-7, "1e-7"),
    (333333333.3333333, "333333333.3333333"), (9007199254740992.0, "9007199254740992"),
    (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.000001, "0.000001"), (1e23, "1e+23"), (295147905179352830000.0, "295147905179352830000"),
    (4.5, "4.5"), (100, "100"), (-1, "-1"),
])
def test_rfc8785_numbers(number: float, expected: str) -> None:
    assert canonical_bytes({"n": number}) == ('{"n":' + expected + "}").encode()


def test_whitespace_and_escapes_are_canonical() -> None:
    raw = '{ "b" : [1, 2.0, "\\u00e9\\n"], "a": {"z": null, "y": true} }'
    assert canonical_bytes(parse_args(raw)) == (
        b'{"a":{"y":true,"z":null},"b":[1,2,"\xc3\xa9\\n"]}'
    )


def test_text_and_mapping_give_the_same_hash() -> None:
    raw = '{"path": "src/main.py", "lines": [1, 2, 3], "opts": {"b": 1, "a": 2}}'
    assert args_hash(parse_args(raw)) == args_hash(
        {"opts": {"a": 2, "b": 1}, "lines": [1, 2, 3], "path": "src/main.py"}
    )


def test_hash_is_sha256_of_the_canonical_bytes() -> None:
    args = {"command": "ls -la", "n": 3}
    digest = hashlib.sha256(b'{"command":"ls -la","n":3}').hexdigest()
    assert args_hash(args) == "sha256:" + digest


def test_golden_hashes() -> None:
    """Pinned hashes: a change here changes the identity of every stored request."""
    cases = json.loads(GOLDEN.read_text("utf-8"))
    assert len(cases) >= 12
    for case in cases:
        args = parse_args(case["json"])
        assert canonical_bytes(args).decode("utf-8") == case["canonical"], case["json"]
        assert args_hash(args) == case["hash"], case["json"]


@pytest.mark.parametrize(("raw", "code"), [
    ('{"a": 1, "a": 2}', "duplicate_key"),
    ('{"x": {"k": 1, "k": 1}}', "duplicate_key"),
    ('{"a": NaN}', "non_finite_number"),
    ('{"a": Infinity}', "non_finite_number"),
    ('{"a": -Infinity}', "non_finite_number"),
    ('{"a": "\\ud800"}', "lone_surrogate"),
    ('{"a": "x\\udfffy"}', "lone_surrogate"),
    ('{"\\ud800": 1}', "lone_surrogate"),
    ('{"a": ' + "[" * 64 + "]" * 64 + "}", "too_deep"),
    ('{"a": "' + "x" * MAX_BYTES + '"}', "too_large"),
    ('{"a": 9007199254740992.0}', "integer_out_of_range"),
    ('{"a": 1e20}', "integer_out_of_range"),
    ('{"a": 9007199254740992}', "integer_out_of_range"),
    ('{"a": -9007199254740992}', "integer_out_of_range"),
    ('{"a": 1e400}', "non_finite_number"),
    ("[1, 2]", "not_an_object"),
    ('"text"', "not_an_object"),
    ("null", "not_an_object"),
    ("{", "invalid_json"),
    ('{"a": 1,}', "invalid_json"),
    ("", "invalid_json"),
    (b"\xff\xfe", "invalid_json"),
])
def test_strict_parsing_refuses(raw: str | bytes, code: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_args(raw)
    assert info.value.code == code
    assert info.value.http_status == 422


def test_depth_limit_is_exactly_64() -> None:
    ok = '{"a": ' + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2) + "}"
    parse_args(ok)  # object + 62 arrays = 63 levels
    edge = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    parse_args(edge)  # exactly 64
    with pytest.raises(InvalidArguments, match="deeper"):
        parse_args('{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}")


def test_deep_nesting_beyond_the_recursion_limit_is_too_deep_not_a_crash() -> None:
    raw = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    with pytest.raises(InvalidArguments) as info:
        parse_args(raw)
    assert info.value.code == "too_deep"


def test_size_limit_counts_bytes() -> None:
    payload = "é" * (MAX_BYTES // 2)  # 1 MiB of characters, 2 MiB of UTF-8 … minus quoting
    with pytest.raises(InvalidArguments) as info:
        parse_args(json.dumps({"a": payload}, ensure_ascii=False))
    assert info.value.code == "too_large"
    with pytest.raises(InvalidArguments) as info:
        parse_args({"a": payload})
    assert info.value.code == "too_large"


def test_integer_bounds_are_inclusive() -> None:
    assert parse_args({"a": MAX_SAFE_INTEGER})["a"] == MAX_SAFE_INTEGER
    assert parse_args({"a": -MAX_SAFE_INTEGER})["a"] == -MAX_SAFE_INTEGER


@pytest.mark.parametrize(("value", "code"), [
    ({"a": float("nan")}, "non_finite_number"),
    ({"a": float("inf")}, "non_finite_number"),
    ({"a": 2**53}, "integer_out_of_range"),
    ({"a": "\udc80"}, "lone_surrogate"),
    ({1: "x"}, "non_string_key"),
    ({"a": {1, 2}}, "unsupported_type"),
    ({"a": b"bytes"}, "unsupported_type"),
    ({"a": object()}, "unsupported_type"),
])
def test_mappings_are_held_to_the_same_limits(value: dict[Any, Any], code: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_args(value)
    assert info.value.code == code


def test_python_deep_mapping_is_too_deep() -> None:
    value: dict[str, Any] = {}
    cursor = value
    for _ in range(200):
        cursor["a"] = {}
        cursor = cursor["a"]
    with pytest.raises(InvalidArguments) as info:
        parse_args(value)
    assert info.value.code == "too_deep"


def test_none_means_no_arguments() -> None:
    assert parse_args(None) == {}
    assert args_hash({}) == "sha256:" + hashlib.sha256(b"{}").hexdigest()


json_values = st.recursive(
    st.none() | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not 2**53 <= abs(f) < 1e21)
    | st.text(st.characters(blacklist_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=5), inner,
                      max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
                       json_values, max_size=6))
def test_canonical_bytes_round_trip(args: dict[str, Any]) -> None:
    """Canonical bytes re-parse to equal arguments and re-canonicalise to the same bytes."""
    data = canonical_bytes(parse_args(args))
    again = parse_args(data)
    assert canonical_bytes(again) == data
    assert args_hash(again) == args_hash(args)


# ---- the limits walk: the fast dispatch judges exactly as the plain isinstance chain ----------

def _reference_check(value: Any, depth: int) -> int:
    """``canonical._check`` as first written: one isinstance chain, one call per value."""
    import math
    import re
    if depth > MAX_DEPTH:
        raise InvalidArguments("deep", code="too_deep")
    surrogate = re.compile("[\ud800-\udfff]")
    if isinstance(value, str):
        if not value.isascii() and surrogate.search(value):
            raise InvalidArguments("s", code="lone_surrogate")
        return len(value) + 2
    if isinstance(value, dict):
        used = 2
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArguments("k", code="non_string_key")
            if not key.isascii() and surrogate.search(key):
                raise InvalidArguments("k", code="lone_surrogate")
            used += len(key) + 3 + _reference_check(item, depth + 1)
        return used
    if isinstance(value, list | tuple):
        return 2 + sum(1 + _reference_check(item, depth + 1) for item in value)
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise InvalidArguments("i", code="integer_out_of_range")
        return 16
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArguments("f", code="non_finite_number")
        if float(2**53) <= abs(value) < 1e21:
            raise InvalidArguments("f", code="integer_out_of_range")
        return 24
    raise InvalidArguments("t", code="unsupported_type")


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"a": leaf}
    return leaf


_leaves = (st.none() | st.booleans() | st.integers(-(2**54), 2**54)
           | st.floats() | st.text(max_size=4) | st.sampled_from(["\ud800", "x\udfff", "é"])
           | st.builds(_Str, st.text(max_size=3)) | st.sampled_from([b"x", object(), {1, 2}]))
_keys = st.text(max_size=3) | st.sampled_from(["\ud800", 1, None, _Str("k")])
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner)
    | st.dictionaries(_keys, inner, max_size=3)
    | st.builds(_Dict, st.dictionaries(st.text(max_size=2), inner, max_size=2)),
    max_leaves=12)


def _outcome(check: Any, value: Any, depth: int) -> Any:
    try:
        return check(value, depth)
    except InvalidArguments as exc:
        return exc.code


@given(value=_values, depth=st.sampled_from([1, 2, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH]))
def test_the_limits_walk_matches_the_plain_chain(value: Any, depth: int) -> None:
    from signoff.canonical import _check
    for probe in (value, {"k": value}, _nested(3, value)):
        assert _outcome(_check, probe, depth) == _outcome(_reference_check, probe, depth)
