"""Regular expressions matched in time linear in the text, whatever the text: RE2.

A policy's globs and ``re:`` patterns run on text the agent writes. Python's ``re``
backtracks, so one crafted argument can hold a worker for seconds (``**/build/**/*.log``
against 180 kB took 10 s). RE2 (``google-re2``) never backtracks: a match costs time
proportional to the text, with a bounded memory per pattern. What it cannot do —
backreferences, lookaround, possessive or atomic groups — is refused when the pattern
is compiled (``LinearError``), so a policy that loads never needs them.

Python's dialect is kept where it differs: ``\\Z`` is RE2's ``\\z``, and ``\\d``,
``\\w`` and ``\\s`` keep their Unicode meaning (RE2's are ASCII), so a deny rule on
digits still sees the fullwidth ones. ``\\b`` is ASCII in RE2.
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]
from re2 import _re2

# Python's Unicode classes, in RE2's syntax: as a whole class, and as class members.
_WORD = r"\p{L}\p{N}_"
_SPACE = r"\s\p{Z}\x{85}\x{1c}-\x{1f}"
_OUTSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": f"[{_WORD}]", "W": f"[^{_WORD}]",
            "s": f"[{_SPACE}]", "S": f"[^{_SPACE}]", "Z": r"\z"}
_INSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}
_MAX_MEM = 8 << 20  # bytes of automaton per pattern (RE2's default)


class LinearError(ValueError):
    """A pattern RE2 cannot compile (the message says why)."""


def _options() -> Any:
    options = re2.Options()
    options.dot_nl = True  # as re.DOTALL: an argument may hold newlines
    options.log_errors = False
    options.never_capture = True  # a yes or no is all a policy asks
    options.max_mem = _MAX_MEM
    return options


_OPTIONS = _options()
_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH


def python_dialect(pattern: str) -> str:
    """``pattern`` (Python's ``re`` syntax) with the escapes whose meaning differs in RE2
    rewritten. Raises ``LinearError`` for ``\\W`` or ``\\S`` inside a class (RE2's
    would take every non-ASCII letter, or every Unicode space, as a member)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            escape = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            if escape in table:
                out.append(table[escape])
            elif in_class and escape in "WS":
                raise LinearError(f"\\{escape} inside a character class is not supported")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            out.append(char)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading "]" is a member
                out.append(r"\]")
                i += 1
            continue
        if char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


class Linear:
    """A compiled pattern; ``fullmatch`` says whether all of a text matches it."""

    __slots__ = ("_match", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        # The binding's RE2 object itself: the Python wrapper's generator and match
        # objects cost more than the match on a short argument, and a yes or no is all
        # a policy needs.
        regexp = _re2.RE2(pattern.encode("utf-8", "surrogatepass"), _OPTIONS)
        if not regexp.ok():
            reason = regexp.error()
            raise LinearError(reason.decode("utf-8", "replace") if isinstance(reason, bytes)
                              else str(reason))
        self._match = regexp.Match

    def fullmatch(self, text: str) -> bool:
        # Bytes: a lone surrogate (a file name that is not UTF-8) is read as "?", never
        # a failure.
        data = text.encode("utf-8", "replace")
        return bool(self._match(_BOTH, data, 0, len(data))[0][0] >= 0)

    def __repr__(self) -> str:
        return f"Linear({self.pattern!r})"


class LinearSet:
    """Several patterns matched in one linear pass; ``first`` says which of them (the
    lowest index) all of a text matches, as an alternation of named groups would."""

    __slots__ = ("_set",)

    def __init__(self, patterns: list[str] | tuple[str, ...]) -> None:
        self._set = re2.Set.FullMatchSet(_OPTIONS)
        try:
            for pattern in patterns:
                self._set.Add(pattern)
            self._set.Compile()
        except re2.error as exc:
            raise LinearError(str(exc)) from None

    def first(self, text: str) -> int | None:
        found = self._set.Match(text.encode("utf-8", "replace"))
        return min(found) if found else None
