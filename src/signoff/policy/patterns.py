"""The small matching languages of a policy: tool globs, argument patterns, command patterns.

* Tool names: ``fnmatch`` globs (``mcp__github__*``).
* Argument values: path-aware globs — ``*`` and ``?`` stay within one path
  segment, ``**`` spans any number of segments, none included (``**/.env``
  matches ``.env``, ``a/b/.env`` and ``/abs/.env``) — or ``re:<regex>``
  (full match). Non-string values are matched through their canonical JSON text.
* Command patterns: a list of words matched against one simple command's
  argv, each word a glob on one argv word; a final ``*`` word matches any
  remaining words, none included.

Every pattern is matched by RE2 (``signoff.globs.linear``), in time linear in the
text: an agent's argument can never make matching backtrack.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import rfc8785

from signoff.globs.linear import Linear, python_dialect
from signoff.globs.pathglob import glob_to_regex, regex_literal


@dataclass(frozen=True, slots=True)
class ValuePattern:
    """One argument pattern; ``source`` is what the operator wrote.

    A glob's fixed head and tail (``prefix``, ``suffix``) are what every value it
    matches starts and ends with: a value without them is refused before RE2 is asked,
    and a glob with no wildcard (``literal``) is compared as text.
    """

    source: str
    regex: Linear
    prefix: str = ""
    suffix: str = ""
    # The common path shapes (``x``, ``src/**``, ``**/.env``, ``*.py``, ``**/*.log``)
    # judged with string operations, exactly as RE2 would: no call into it.
    shortcut: Callable[[str], bool] | None = None

    def possible(self, value: str) -> bool:
        """Whether ``value`` has the glob's fixed head and tail (a cheap first look)."""
        return value.startswith(self.prefix) and value.endswith(self.suffix)

    def matches(self, value: str) -> bool:
        if self.shortcut is not None:
            return self.shortcut(value)
        return self.possible(value) and self.regex.fullmatch(value)


def compile_value_pattern(source: str) -> ValuePattern:
    """Compile a glob or ``re:`` pattern. Raises ``LinearError`` (a ``ValueError``) on a
    regex RE2 cannot compile: a bad one, or one that needs backtracking."""
    regex = Linear(value_regex(source))
    if source.startswith("re:"):
        return ValuePattern(source, regex)
    prefix, suffix = _fixed_ends(source)
    return ValuePattern(source, regex, prefix, suffix, _shortcut(source))


def _shortcut(glob: str) -> Callable[[str], bool] | None:
    """String operations for the glob shapes policies use most, or ``None`` (RE2)."""
    if not has_magic(glob):
        return glob.__eq__
    if glob == "**":
        return lambda text: True
    if glob.endswith("/**") and not has_magic(head := glob[:-3]) and head:
        under = head + "/"
        return lambda text: text == head or text.startswith(under)
    if glob.startswith("**/") and not has_magic(name := glob[3:]) and name:
        tail = "/" + name
        return lambda text: text == name or text.endswith(tail)
    if glob.startswith("*") and not has_magic(rest := glob[1:]) and "/" not in rest:
        return lambda text: text.endswith(rest) and "/" not in text
    if glob.startswith("**/*") and not has_magic(rest := glob[4:]) and "/" not in rest:
        return lambda text: text.rpartition("/")[2].endswith(rest)
    if glob.startswith("**/") and glob.endswith("*") and not glob.endswith("**") and \
            not has_magic(start := glob[3:-1]) and start and "/" not in start:
        return lambda text: text.rpartition("/")[2].startswith(start)
    if glob.startswith("**/") and glob.endswith("/**") and len(glob) > 6 and \
            not has_magic(middle := glob[3:-3]):
        inner, first, last = f"/{middle}/", f"{middle}/", f"/{middle}"
        return lambda text: (text == middle or text.startswith(first)
                             or text.endswith(last) or inner in text)
    return None


def _fixed_ends(glob: str) -> tuple[str, str]:
    """The text before a glob's first wildcard and after its last one, less a ``/`` that
    ``**`` may take with it (``src/**`` matches ``src``; ``**/.env`` matches ``.env``)."""
    first = min((i for i in (glob.find(c) for c in "*?[]") if i >= 0), default=len(glob))
    last = max(glob.rfind(c) for c in "*?[]")
    if first == len(glob):
        return glob, ""
    prefix = glob[:first]
    if glob.startswith("**", first) and prefix.endswith("/"):
        prefix = prefix[:-1]
    suffix = glob[last + 1:]
    if glob[last] == "*" and last > 0 and glob[last - 1] == "*" and suffix.startswith("/"):
        suffix = suffix[1:]
    return prefix, suffix


def value_regex(source: str) -> str:
    """The regular expression (RE2's syntax) of a glob or ``re:`` pattern."""
    if source.startswith("re:"):
        return python_dialect(source[3:])
    return glob_to_regex(source)


def value_text(value: Any) -> str:
    """How a non-string argument value is shown to a pattern: its canonical JSON."""
    if isinstance(value, str):
        return value
    return rfc8785.dumps(value).decode("utf-8")


def has_magic(word: str) -> bool:
    return "*" in word or "?" in word or "[" in word


def fnmatch_regex(glob: str) -> str:
    """``fnmatch``'s language (``*`` and ``?`` cross ``/``; ``[!…]`` negates; an unclosed
    ``[`` is itself) as a regular expression both RE2 and ``re`` read."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        i += 1
        if char == "*":
            while i < n and glob[i] == "*":
                i += 1
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            j = i
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append("\\[")
                continue
            body = glob[i:j]
            i = j + 1
            negated = body.startswith("!")
            out.append(_fnmatch_class(body[1:] if negated else body, negated=negated))
        else:
            out.append(regex_literal(char))
    return "".join(out)


def _fnmatch_class(body: str, *, negated: bool) -> str:
    """A bracket's members; a reversed range (``z-a``) names nothing, as in ``fnmatch``."""
    members: list[str] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            if low <= high:
                members.append(_member(low) + "-" + _member(high))
            k += 3
        else:
            members.append(_member(body[k]))
            k += 1
    if not members:
        return "." if negated else _NOTHING
    return ("[^" if negated else "[") + "".join(members) + "]"


_NOTHING = "[^\x00-\U0010ffff]"  # the characters themselves: both syntaxes read them


def _member(char: str) -> str:
    return "\\" + char if char in "\\[]^-" else char


@lru_cache(maxsize=4096)
def _fnmatch_linear(glob: str) -> Linear:
    return Linear(fnmatch_regex(glob))


def _word_matcher(word: str) -> Callable[[str], bool]:
    """A literal word compares by equality; a glob by its precompiled RE2 pattern."""
    if not has_magic(word):
        return word.__eq__
    return _fnmatch_linear(word).fullmatch


@dataclass(frozen=True, slots=True)
class CommandPattern:
    """``["git", "push", "*"]``: words to match one simple command's argv."""

    source: str
    words: tuple[str, ...]
    rest: bool  # a final "*" word: any remaining words, none included
    matchers: tuple[Callable[[str], bool], ...] = ()

    @property
    def name(self) -> str:
        return self.words[0] if self.words else "*"

    def matches(self, argv: Sequence[str], *, by_basename: bool) -> bool:
        if not argv:
            return False
        name = argv[0]
        pattern_name = self.name
        if by_basename and "/" not in pattern_name:
            name = name.rsplit("/", 1)[-1]
        elif "/" not in pattern_name and "/" in name:
            return False  # an allow rule naming a bare command never admits a path
        matchers = self.matchers
        if not matchers[0](name):
            return False
        count = len(matchers) - 1
        if len(argv) - 1 < count or (not self.rest and len(argv) - 1 != count):
            return False
        return all(matchers[i](argv[i]) for i in range(1, count + 1))


@lru_cache(maxsize=1024)
def compile_command_pattern(source: str) -> CommandPattern:
    """Split a pattern like ``"pytest *"`` into words (shell quoting allowed)."""
    words = tuple(shlex.split(source))
    if not words:
        raise ValueError("empty command pattern")
    if words == ("*",):  # any command, any arguments
        return CommandPattern(source, words, True, (_word_matcher("*"),))
    rest = len(words) > 1 and words[-1] == "*"
    kept = words[:-1] if rest else words
    return CommandPattern(source, kept, rest, tuple(_word_matcher(w) for w in kept))


@lru_cache(maxsize=4096)
def tool_matches(pattern: str, tool: str) -> bool:
    """A rule's tool glob (``fnmatch``'s language, case-sensitive) against a tool name."""
    if not has_magic(pattern):
        return pattern == tool
    return _fnmatch_linear(pattern).fullmatch(tool)

