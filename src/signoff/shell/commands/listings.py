"""The files a command prints the names of, for the command those names are handed to.

``find . | xargs cat``, ``cat $(ls -a)`` and ``find . -exec cat {} +`` read what the
listing names, ``.env`` among them, though no word of the line spells it. A listing
is the starting points and how they are walked (a ``Tree``): ``find`` every file
beneath them (narrowed by its ``-name`` tests when it can tell, ``find.listing``);
``ls`` a directory's own entries, its dot-files only with ``-a``/``-A``/``-f``, every
level with ``-R``, and the operands themselves with ``-d``. Whatever the format
(``ls -l`` prints a name at the end of each line), the names are in the output.
"""

from __future__ import annotations

from signoff.shell.commands import find, invocation
from signoff.shell.commands.models import Listing, Tree

_HIDDEN = frozenset({"-a", "-A", "-f", "--all", "--almost-all"})


def listing(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Listing | None:
    """What ``argv`` lists when it is a ``find`` or an ``ls``; ``None`` otherwise, or when
    its starting points are not known before it runs (``ls "$DIR"``)."""
    name = argv[0].rsplit("/", 1)[-1] if argv and literal[0] else ""
    if name == "find":
        return find.listing(argv, literal)
    if name in ("ls", "dir", "vdir"):
        return _ls(argv, literal)
    return None


def _ls(argv: tuple[str, ...], literal: tuple[bool, ...]) -> Listing | None:
    inv = invocation(argv, literal)
    options = {p.option for p in inv.parts if p.option is not None}
    operands = [p for p in inv.parts if p.option is None]
    starts = tuple(p.value or p.word for p in operands if p.literal)
    if operands and not starts:
        return None
    if options & {"-d", "--directory"}:
        return Listing(starts or (".",), None)
    return Listing(starts or (".",), Tree(
        hidden=bool(options & _HIDDEN), follow=bool(options & {"-L", "--dereference"}),
        depth=None if options & {"-R", "--recursive"} else 1))
