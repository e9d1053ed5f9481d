"""The names a command line spells through its variables and ``$(echo …)``, written in.

``F=.env; cat $F`` reads ``.env`` as surely as ``cat .env``. An assignment is
never allowed, so a line that has one already needs a review; but a review mode
that lets gated calls through (``full``) still owes a human every read of a
credential the line spells. So a line that expands an assigned variable, or
substitutes what ``echo`` or ``printf`` prints of literal words (``cat $(echo
.env)``), is read a second time with the values written in, and the paths that
reading touches count (a secret among them is a ``secret_read``). Since a variable
may be assigned anywhere on the line, every value is tried, and the variants are not
what runs: only their paths count, never a deny. Only values that look like names are
put back (no quotes, ``$`` or blanks). A loop assigns too: ``for f in .env`` each of
its words, ``… | while read f`` each name on its input; and a variable that holds
what a ``find`` or ``ls`` lists (``F=$(find .)``, ``find . | while read f``) stands for
those files (``feeds.substituted_listing``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import tree_sitter

from signoff.shell import stdin as feeds
from signoff.shell import words as sw
from signoff.shell.commands.models import Listing
from signoff.shell.redirects import REDIRECTS

if TYPE_CHECKING:
    from signoff.shell.results import Walk

MAX_VALUES = 8  # per line: the values tried for each variable, and the variants made
_NAME_LIKE = re.compile(r"[A-Za-z0-9._/:~@%+,=*?\[\]-]+")
Assigned = dict[str, list[str]]
# $NAME, ${NAME}, ${NAME[0]}: the expansions a value can be put back into
_USE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\}"
                  r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def record(node: tree_sitter.Node, walk: Walk) -> None:
    """Remember ``NAME=value`` (or ``NAME=(a b)``) when the value is a literal name, and
    ``NAME=$(find .)`` as what the find lists."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None or value is None or name.type != "variable_name":
        return
    items = [c for c in value.children if c.is_named] if value.type == "array" else [value]
    _bind(sw.node_text(name), items, walk)


def record_loop(node: tree_sitter.Node, above: tree_sitter.Node | None, walk: Walk) -> None:
    """A loop assigns its variable too: ``for f in .env $(find .)`` each word (and what a
    substitution lists), ``… | while read f`` each name on its input."""
    if node.type == "for_statement":
        variable = node.child_by_field_name("variable")
        if variable is not None:
            _bind(sw.node_text(variable), node.children_by_field_name("value"), walk)
        return
    condition = node.child_by_field_name("condition")
    names = _read_names(condition) if condition is not None else []
    if not names:
        return
    statement = above if above is not None and above.type == "redirected_statement" else node
    feed = feeds.feed_of(statement, [], statement.parent, walk.before)
    found = feed.listing
    texts = [piece for line in feeds.lines(feed) for piece in (line.strip(), *line.split())]
    for name in names:
        values = walk.assigned.setdefault(name, [])
        for text in texts:
            _keep(text, values)
        if found is not None:
            _bind_listing(name, found, walk)


def _bind(name: str, items: list[tree_sitter.Node], walk: Walk) -> None:
    values = walk.assigned.setdefault(name, [])
    for item in items:
        found = feeds.substituted_listing(item) \
            if item.type == "command_substitution" else None
        if found is not None:
            _bind_listing(name, found, walk)
        word = sw.word_value(item)
        if word.literal:
            _keep(word.text, values)


def _keep(text: str, values: list[str]) -> None:
    if _NAME_LIKE.fullmatch(text) and len(values) < MAX_VALUES and text not in values:
        values.append(text)


def _bind_listing(name: str, found: Listing, walk: Walk) -> None:
    """``$f`` and ``${f}`` stand for the names a listing holds (``cat "$f"`` reads them)."""
    if len(walk.listed) < feeds.MAX_LISTINGS:
        walk.listed[f"${name}"] = walk.listed[f"${{{name}}}"] = found


# read's options that take a value (the next word when the option ends its cluster)
_READ_VALUED = frozenset("adinNptu")


def _read_names(command: tree_sitter.Node) -> list[str]:
    """The variables ``read -r a b`` assigns (none for ``read -a``: an array)."""
    if command.type != "command":
        return []
    words = [sw.word_value(c.children[0] if c.type == "command_name" and c.children else c)
             for c in command.children
             if c.is_named and c.type not in ("variable_assignment", *REDIRECTS)]
    if not words or words[0].text != "read":
        return []
    i = 1
    while i < len(words) and words[i].text.startswith("-") and words[i].text != "--":
        cluster = words[i].text[1:]
        if "a" in cluster:
            return []
        valued = next((k for k, c in enumerate(cluster) if c in _READ_VALUED), None)
        i += 2 if valued == len(cluster) - 1 else 1
    i += i < len(words) and words[i].text == "--"
    names = [w.text for w in words[i:] if w.literal and w.text.isidentifier()]
    return names or ["REPLY"]
def record_output(node: tree_sitter.Node, outputs: dict[str, str]) -> None:
    """Remember what ``$(echo .env)`` stands for, when it is a literal name."""
    named = [c for c in node.children if c.is_named]
    if len(named) != 1 or len(outputs) >= MAX_VALUES:
        return
    texts, known = feeds.printed(named[0])
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
