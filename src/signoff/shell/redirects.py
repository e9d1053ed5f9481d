"""Redirections: the paths they read and write, and the simple command they belong to.

``cat < in > out`` reads ``in`` and writes ``out``; ``>&2`` is a descriptor, not a
file. tree-sitter-bash hangs a statement's redirections on the statement (``ls |
cat > f x``), but bash gives them, and the words after them, to the last simple
command before them: ``attach`` moves them there, where ``feed`` also finds the
standard input they give.
"""

from __future__ import annotations

import dataclasses

import tree_sitter

from signoff.shell import words as sw
from signoff.shell.paths import PathRef
from signoff.shell.results import Walk

REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
# ">&" with a word that is not a descriptor is "&>": bash opens (and truncates) the file.
_WRITE_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})


def trailing_words(redirect: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Words after a redirection's target, which bash gives the command as arguments.

    tree-sitter-bash hangs them on the redirection: ``ls > f x`` has destinations
    ``f`` and ``x``, ``cat <<EOF /etc/passwd`` a heredoc with an argument.
    """
    if redirect.type == "file_redirect":
        return redirect.children_by_field_name("destination")[1:]
    if redirect.type == "heredoc_redirect":
        return redirect.children_by_field_name("argument")
    return []


def attach(node: tree_sitter.Node, walk: Walk) -> None:
    """A statement's redirections belong to the last simple command before them (``ls |
    cat > f x`` is ``ls | cat x > f``), whatever tree-sitter made the body: so do the
    words after them, and the standard input they give (``echo a | xargs cat < f``)."""
    redirects = [child for child in node.children if child.type in REDIRECTS]
    extra = [w for child in redirects for w in trailing_words(child)]
    owner = node.child_by_field_name("body")
    while owner is not None and owner.type in ("pipeline", "list", "redirected_statement"):
        if owner.type == "redirected_statement":
            owner = owner.child_by_field_name("body")
        else:
            named = [c for c in owner.children if c.is_named and c.type != "comment"]
            owner = named[-1] if named else None
    if owner is None or owner.type != "command":
        if extra:
            walk.find("unparseable", "words after a redirection of a compound command")
        return
    if extra:
        walk.extra_words.setdefault(owner.id, []).extend(extra)
    walk.redirects_of.setdefault(owner.id, []).extend(redirects)


def record(node: tree_sitter.Node, walk: Walk) -> None:
    """The path a file redirection reads or writes, for the command it belongs to."""
    if node.type != "file_redirect":
        return  # heredoc / herestring bodies are data; their substitutions are visited anyway
    op = ""
    for child in node.children:
        if not child.is_named and child.type not in ("(", ")"):
            op = child.type
    dest = node.child_by_field_name("destination")  # the first; later ones are arguments
    if dest is None:
        return
    value = sw.word_value(dest)
    if op in (">&", "<&", ">&-", "<&-") and (value.text.isdigit() or value.text == "-"):
        return  # fd duplication, not a file
    ref = PathRef(path=value.text, literal=value.literal, write=op in _WRITE_OPS,
                  cds=tuple(walk.cds), redirect=True)
    if walk.collecting:
        walk.pending_redirects.append(ref)
    else:  # a statement's redirection: it follows the last command read so far
        walk.add_path(dataclasses.replace(ref, command=len(walk.commands) - 1))
