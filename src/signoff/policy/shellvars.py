"""The names a command line spells through its variables and ``$(echo …)``, written in.

``F=.env; cat $F`` reads ``.env`` as surely as ``cat .env``. An assignment is
never allowed, so a line that has one already needs a review; but a review mode
that lets gated calls through (``full``) still owes a human every read of a
credential the line spells. So a line that expands an assigned variable, or
substitutes what ``echo`` or ``printf`` prints of literal words (``cat $(echo
.env)``), is read a second time with the values written in, and the paths that reading touches count
(a secret among them is a ``secret_read``). Since a variable may be assigned
anywhere on the line, every value is tried, and the variants are not what runs:
only their paths count, never a deny. Only values that look like names are put
back (no quotes, ``$`` or blanks).
"""

from __future__ import annotations

import re

import tree_sitter

from signoff.policy import shellfeed
from signoff.policy import shellwords as sw

MAX_VALUES = 8  # per line: the values tried for each variable, and the variants made
_NAME_LIKE = re.compile(r"[A-Za-z0-9._/:~@%+,=*?\[\]-]+")
Assigned = dict[str, list[str]]
# $NAME, ${NAME}, ${NAME[0]}: the expansions a value can be put back into
_USE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\}"
                  r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def record(node: tree_sitter.Node, assigned: Assigned) -> None:
    """Remember ``NAME=value`` (or ``NAME=(a b)``) when the value is a literal name."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None or value is None or name.type != "variable_name":
        return
    items = [c for c in value.children if c.is_named] if value.type == "array" else [value]
    values = assigned.setdefault(sw.node_text(name), [])
    for item in items:
        word = sw.word_value(item)
        if word.literal and _NAME_LIKE.fullmatch(word.text) and len(values) < MAX_VALUES \
                and word.text not in values:
            values.append(word.text)


def record_output(node: tree_sitter.Node, outputs: dict[str, str]) -> None:
    """Remember what ``$(echo .env)`` stands for, when it is a literal name."""
    named = [c for c in node.children if c.is_named]
    if len(named) != 1 or len(outputs) >= MAX_VALUES:
        return
    texts, known = shellfeed.printed(named[0])
    value = "".join(texts).rstrip("\n")  # a substitution drops trailing newlines
    if known and _NAME_LIKE.fullmatch(value):
        outputs[sw.node_text(node)] = value


def substituted(source: str, assigned: Assigned, outputs: dict[str, str]) -> list[str]:
    """``source`` with what it spells written in: ``$(echo .env)`` as ``.env``, and the
    assigned variables it expands, one variant per value (the k-th value of each).
    None when it spells nothing. One pass over the text per variant, however many
    variables the line assigns."""
    for written, value in outputs.items():
        source = source.replace(written, value)
    used = {m["braced"] or m["bare"] for m in _USE.finditer(source)}
    used = {name for name in used if assigned.get(name)}
    if not used:
        return [source] if outputs else []

    def variant(k: int) -> str:
        def put(match: re.Match[str]) -> str:
            name = match["braced"] or match["bare"]
            if name not in used:
                return match.group(0)
            values = assigned[name]
            return values[min(k, len(values) - 1)]
        return _USE.sub(put, source)

    return [variant(k) for k in range(min(MAX_VALUES, max(len(assigned[n]) for n in used)))]
