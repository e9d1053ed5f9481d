"""Scanning helpers the script readers share."""

from __future__ import annotations


def end_of_line(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def delimited(text: str, i: int, delim: str) -> int:
    """Index after the next unescaped ``delim`` from ``i``, or -1."""
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == delim:
            return i + 1
        i += 1
    return -1
