"""Source text the parse left in no node: put back, or refused.

tree-sitter-bash drops a lone ``-`` between a command and its redirection (``python -
<<'PY'``, ``tar -xf - 2>/dev/null``): no node holds it, so the command's words would miss
an argument bash passes. ``dashes_after`` counts those, for the walk to put back. Any other
text no node holds is a parse the gate cannot trust: ``skipped`` names it, and the analysis
reports the command as unparseable.
"""

from __future__ import annotations

import re

import tree_sitter

_DASHES = re.compile(rb"(?:(?:[ \t]|\\\n)+-)+(?:[ \t]|\\\n)*")


def dashes_after(command: tree_sitter.Node, statement: tree_sitter.Node) -> int:
    """How many lone ``-`` words the parse dropped right after ``command``, a child of the
    redirected statement ``statement``."""
    after = next((c for c in statement.children if c.start_byte >= command.end_byte
                  and c.end_byte > command.end_byte), None)
    if after is None or after.start_byte == command.end_byte:
        return 0
    text = statement.text or b""
    gap = text[command.end_byte - statement.start_byte:after.start_byte - statement.start_byte]
    return gap.count(b"-") if _DASHES.fullmatch(gap) else 0


def skipped(root: tree_sitter.Node) -> bytes | None:
    """The first text, other than blanks and the dashes ``dashes_after`` puts back, that
    lies inside a node and in none of its children."""
    data = root.text or b""
    stack = [root]
    while stack:
        node = stack.pop()
        at, previous = node.start_byte, ""
        for child in node.children:
            if child.start_byte > at:
                gap = data[at:child.start_byte]
                if _filled(gap) and not (node.type == "redirected_statement"
                                         and previous == "command" and _DASHES.fullmatch(gap)):
                    return gap.strip()
            at = max(at, child.end_byte)
            previous = child.type
            if child.child_count:
                stack.append(child)
        if node.end_byte > at and _filled(data[at:node.end_byte]):
            return data[at:node.end_byte].strip()
    return None


def _filled(gap: bytes) -> bool:
    """Whether ``gap`` holds more than blanks and line continuations."""
    return bool(gap.strip()) and bool(gap.replace(b"\\\n", b"").strip())
