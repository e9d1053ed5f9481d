"""``signoff.jcs``: the quick path gives exactly the ``rfc8785`` package's bytes, and
refuses exactly what it refuses."""

from __future__ import annotations

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from signoff import jcs
from signoff.canonical import args_hash, canonical_bytes, canonical_text

_ascii = st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=8)
_any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**60), max_value=2**60)
            | st.floats(allow_nan=False, allow_infinity=False) | _ascii | _any_text)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ascii | _any_text, inner,
                                                                max_size=3),
    max_leaves=12,
)


@given(_values)
def test_quick_and_general_paths_agree(value: object) -> None:
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(rfc8785.CanonicalizationError):
            jcs.dumps(value)
        return
    assert jcs.dumps(value) == expected
    assert jcs.text(value) == expected.decode("utf-8")


@pytest.mark.parametrize("value", [
    {"command": "make build"},
    {"del": "a\x7fb"},  # the standard library escapes DEL; RFC 8785 does not
    {"ctl": "\x00\x1f\t\n\b\f\r\"\\/"},
    {"big": 2**53 - 1, "small": -(2**53 - 1)},
    {"nested": [{"b": 1, "a": None}, True, "x"]},
    {"é": "ü", "\u2028": "\U0001f600"},
    {"float": 1e21, "tiny": 5e-324, "neg": -0.0},
])
def test_hard_cases_match_rfc8785(value: dict[str, object]) -> None:
    assert jcs.dumps(value) == rfc8785.dumps(value)
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_text(value) == rfc8785.dumps(value).decode("utf-8")
    assert args_hash(value).startswith("sha256:")


def test_integers_past_two_to_the_53_are_refused_on_both_paths() -> None:
    for value in ({"big": 2**53}, {"small": -(2**53)}):
        with pytest.raises(rfc8785.CanonicalizationError):
            rfc8785.dumps(value)
        with pytest.raises(rfc8785.CanonicalizationError):
            jcs.dumps(value)


@pytest.mark.parametrize("value", [
    1e-4, -1e-4, 0.00010000000000000002, 9.999999999999999e-05, 0.1, 0.5, 1.5, 123.456,
    1733500000.123456, 1e15 + 0.5, 2.0**53 - 0.5, 4503599627370495.5, 2.0**53, 1e16, 1e21,
    2.0, -3.0, 1e-7, 5e-324, 1.7976931348623157e308,
])
def test_floats_on_the_quick_path_print_as_rfc8785_does(value: float) -> None:
    assert jcs.dumps({"at": value}) == rfc8785.dumps({"at": value})
    assert jcs.dumps([value, {"x": value}]) == rfc8785.dumps([value, {"x": value}])


@given(st.floats(min_value=1e-4, max_value=2.0**53, allow_nan=False)
       | st.floats(min_value=1.6e9, max_value=2.2e9))  # timestamps
def test_floats_in_the_quick_range_agree(value: float) -> None:
    for sign in (1.0, -1.0):
        assert jcs.dumps({"t": sign * value}) == rfc8785.dumps({"t": sign * value})


def test_timestamps_take_the_quick_path() -> None:
    assert jcs._plain({"iat": 1733500001.25, "roles": ["a"], "n": 3})
    assert not jcs._plain({"iat": 2.0})  # Python writes "2.0", RFC 8785 "2"
    assert not jcs._plain({"tiny": 1e-5})  # Python writes an exponent
