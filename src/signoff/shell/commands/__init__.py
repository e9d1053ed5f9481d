"""Command models: what each option and operand of a known command does.

``invocation(argv, literal)`` reads one simple command against the model of its
command (by basename) and returns an ``Invocation`` whose parts are classed
``inert``, ``read``, ``write``, ``exec``, ``network`` or ``unknown``. The
models are data, one table per command, grouped by family in the modules
beside this one; adding a command is adding a ``model(...)`` entry to one of
their ``MODELS`` lists (see docs/shell.md, "Command models").
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from signoff.shell.commands.models import Concern, Invocation, Kind, Model, Part, Tree

__all__ = ["Concern", "Invocation", "Kind", "Model", "Part", "Tree", "aliases_of", "invocation",
           "model_for", "modelled_names"]

_PYTHON = re.compile(r"^(?:python|pypy)[0-9.]*$")
_NODE = re.compile(r"^node[0-9]*$")
UNMODELLED = Invocation(model="")


@cache
def _registry() -> tuple[dict[str, Model], dict[str, str]]:
    """Every command's model by name, and the aliases: built on first use (importing the
    model tables is most of the analyser's start; a call with no shell command needs none)."""
    from signoff.shell.commands import (  # noqa: PLC0415
        archive,
        containers,
        git,
        inert,
        network,
        readers,
        runners,
        text,
        viewers,
        wrappers,
        writers,
    )

    models: dict[str, Model] = {}
    for module in (readers, inert, text, git, archive, writers, runners, wrappers, network,
                   viewers, containers):
        for spec in module.MODELS:
            models[spec.name] = spec
    aliases = {"gawk": "awk", "mawk": "awk", "nawk": "awk", "busybox-awk": "awk",
               "egrep": "grep", "fgrep": "grep", "rgrep": "grep", "gsed": "sed", "gtar": "tar",
               "bsdtar": "tar", **runners.ALIASES}
    return models, aliases


def model_for(name: str) -> Model | None:
    """The model of a command by its (base)name, or ``None``."""
    models, aliases = _registry()
    base = name.rsplit("/", 1)[-1]
    base = aliases.get(base, base)
    found = models.get(base)
    if found is None and _PYTHON.match(base):
        return models["python"]
    if found is None and _NODE.match(base):
        return models["node"]
    return found


def aliases_of(name: str) -> tuple[str, ...]:
    """The other names the alias table gives the model called ``name`` (``python``:
    ``python2``, ``python3``, ``pypy``, ``pypy3``), sorted."""
    _, aliases = _registry()
    return tuple(sorted(a for a, base in aliases.items() if base == name))


def modelled_names() -> list[str]:
    models, aliases = _registry()
    return sorted({*models, "find", "sqlite3", *aliases})


@lru_cache(maxsize=2048)
def invocation(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Invocation:
    """``argv`` read against its command's model (``UNMODELLED`` when there is none).

    ``literal[i]`` says whether word i is known before the shell runs (no expansion).
    """
    if not argv or not literal or not literal[0]:
        return UNMODELLED
    base = argv[0].rsplit("/", 1)[-1]
    if base == "find":
        from signoff.shell.commands.find import parse_find  # noqa: PLC0415

        return parse_find(argv, literal)
    if base in ("sqlite3", "sqlite"):
        from signoff.shell.commands.sqlite3 import parse_sqlite  # noqa: PLC0415

        return parse_sqlite(argv, literal)
    spec = model_for(base)
    if spec is None:
        return UNMODELLED
    from signoff.shell.commands.grammar import parse  # noqa: PLC0415

    return parse(spec, argv, literal)
