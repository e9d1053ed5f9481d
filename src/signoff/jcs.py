"""RFC 8785 (JCS) text, fast for the values signoff mostly canonicalises.

Tool arguments, audit data and receipts are mostly objects of ASCII keys, ASCII
strings, small integers, nulls and timestamps. For those, the standard library's sorted,
compact JSON is byte for byte the RFC 8785 form and several times faster than the general
encoder; ``_plain`` says when a value is such a value. Anything else — floats outside
the range where Python and ECMAScript print them alike, non-ASCII text, DEL (which the
standard library escapes and RFC 8785 does not), integers past 2**53, other types — goes
through the ``rfc8785`` package, which also refuses what cannot be canonicalised.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785


def text(value: Any) -> str:
    """The RFC 8785 text of ``value``; raises ``rfc8785.CanonicalizationError``."""
    if _plain(value):
        return _sorted_compact(value)
    return rfc8785.dumps(value).decode("utf-8")


def dumps(value: Any) -> bytes:
    """The RFC 8785 bytes of ``value``; raises ``rfc8785.CanonicalizationError``."""
    if _plain(value):
        return _sorted_compact(value).encode("ascii")
    return rfc8785.dumps(value)


# A float whose magnitude is in [1e-4, 2**53) and that is not integral prints the same in
# Python (``repr``: the shortest digits that round-trip, positional from 1e-4 up to 1e16)
# and in ECMAScript (the same digits, positional from 1e-6 up to 1e21). Below, Python
# writes an exponent; integral ones Python writes as "2.0" and ECMAScript as "2".
_FLOAT_LOW = 1e-4
_FLOAT_HIGH = float(2**53)


def _unencodable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")  # _plain lets none through


# ``json.dumps`` with options builds a new encoder per call; these are built once and
# produce the same text. The C encoder, when there is one, is called directly: that is
# what ``JSONEncoder.encode`` does, less building it again each time (no cycle check:
# ``_plain`` has walked the value already, and a cycle never gets past it).
_SORTED_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_ascii_string = json.encoder.encode_basestring_ascii
_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_SORTED_COMPACT = None if _c_encoder is None else _c_encoder(
    None, _unencodable, _ascii_string, None, ":", ",", True, False, True)


def _sorted_compact(data: Any) -> str:
    if _C_SORTED_COMPACT is None:
        return _SORTED_COMPACT(data)
    return "".join(_C_SORTED_COMPACT(data, 0))


def _plain(value: Any) -> bool:
    kind = type(value)  # the common exact types first; subclasses take the general path
    if kind is str:  # DEL: the standard library escapes it, RFC 8785 does not
        return str.isascii(value) and "\x7f" not in value
    if kind is dict:
        for key, item in value.items():
            if not (isinstance(key, str) and key.isascii() and "\x7f" not in key):
                return False
            kind = type(item)  # flat string and null values judged in place
            if kind is str:
                if not item.isascii() or "\x7f" in item:
                    return False
            elif item is not None and not _plain(item):
                return False
        return True
    if kind is list:
        return all(_plain(item) for item in value)
    if kind is float:  # timestamps: Python's repr is the ECMAScript form in this range
        return _FLOAT_LOW <= abs(value) < _FLOAT_HIGH and not value.is_integer()
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value.isascii() and "\x7f" not in value
    if isinstance(value, int):
        return -(2**53) < value < 2**53
    if isinstance(value, dict):
        return all(isinstance(k, str) and k.isascii() and "\x7f" not in k and _plain(v)
                   for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False
