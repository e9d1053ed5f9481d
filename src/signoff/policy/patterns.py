"""The small matching languages of a policy: tool globs, argument patterns, command patterns.

* Tool names: ``fnmatch`` globs (``mcp__github__*``).
* Argument values: path-aware globs — ``*`` and ``?`` stay within one path
  segment, ``**`` spans any number of segments, none included (``**/.env``
  matches ``.env``, ``a/b/.env`` and ``/abs/.env``) — or ``re:<regex>``
  (full match). Non-string values are matched through their canonical JSON text.
* Command patterns: a list of words matched against one simple command's
  argv, each word a glob on one argv word; a final ``*`` word matches any
  remaining words, none included.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

import rfc8785


@dataclass(frozen=True, slots=True)
class ValuePattern:
    """One argument pattern; ``source`` is what the operator wrote."""

    source: str
    regex: re.Pattern[str]

    def matches(self, value: str) -> bool:
        return self.regex.fullmatch(value) is not None


def compile_value_pattern(source: str) -> ValuePattern:
    """Compile a glob or ``re:`` pattern. Raises ``re.error`` on a bad regex."""
    if source.startswith("re:"):
        return ValuePattern(source, re.compile(source[3:], re.DOTALL))
    return ValuePattern(source, re.compile(glob_to_regex(source), re.DOTALL))


def glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end < 0:
                out.append(re.escape(char))
                i += 1
                continue
            body = glob[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def value_text(value: Any) -> str:
    """How a non-string argument value is shown to a pattern: its canonical JSON."""
    if isinstance(value, str):
        return value
    return rfc8785.dumps(value).decode("utf-8")


_GLOB_MAGIC = re.compile(r"[*?\[]")


def _word_matcher(word: str) -> Callable[[str], bool]:
    """A literal word compares by equality; a glob by its precompiled regex."""
    if not _GLOB_MAGIC.search(word):
        return word.__eq__
    regex = re.compile(fnmatch.translate(word))
    return lambda text: regex.match(text) is not None


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
    return fnmatchcase(tool, pattern)
