"""Whether an allow rule's command pattern admits one parsed invocation.

A pattern admits an invocation when every part of it is harmless — inert, or a
read (the workspace guard judges where) — or is the command's declared purpose
(``cp``'s target, ``python``'s script, ``curl``'s URL), or is an option the
pattern itself names as a literal word (``"sed -i *"`` names ``-i`` and so the
files it rewrites; ``"sort -o *"`` names ``-o``). An exact pattern with no
wildcard (``"env"``, ``"python --version"``) admits exactly that command,
whatever it does: the operator wrote it out. A command with no model is
admitted as before models existed: any argument, each judged as a path.
"""

from __future__ import annotations

from collections.abc import Iterable

from signoff.policy.patterns import CommandPattern
from signoff.shell.commands.models import Invocation, Kind, Model, Part

HARMLESS = frozenset({Kind.INERT, Kind.READ})
# Writing to these is printing: standard output and error, the bit bucket ("-": stdout).
OUTPUT_DEVICES = frozenset({"-", "/dev/stdout", "/dev/stderr", "/dev/null", "/dev/tty",
                            "/dev/fd/1", "/dev/fd/2"})
_GLOB = frozenset("*?[")


def is_exact(pattern: CommandPattern) -> bool:
    """A pattern with no wildcard at all: it names one command line."""
    return not pattern.rest and not any(_GLOB & set(word) for word in pattern.words)


def named(pattern: CommandPattern, spec: Model | None) -> frozenset[str]:
    """The options a pattern names literally, by the canonical names the parse uses."""
    out: set[str] = set()
    for word in pattern.words[1:]:
        if _GLOB & set(word):
            continue
        if not word.startswith("-"):
            out.add(word)  # a subcommand: "git commit *" names what commit does
            continue
        out.add(word)
        head = word.split("=", 1)[0]
        out.add(head)
        if spec is not None and head.startswith("--"):
            from signoff.shell.commands.grammar import long_option  # noqa: PLC0415

            found = long_option(spec, head[2:])
            if found is not None:
                out.add("--" + found[0])
        elif head.startswith("-") and len(head) >= 2:
            out.add(head[:2])
    return frozenset(out)


def blocking(invocation: Invocation, names: Iterable[str]) -> list[Part]:
    """The parts of ``invocation`` an allow rule naming ``names`` does not admit."""
    names = frozenset(names)
    return [p for p in invocation.parts
            if p.kind not in HARMLESS and not p.declared
            and not (p.kind is Kind.WRITE and p.literal and p.value in OUTPUT_DEVICES)
            and not (p.option in names or p.cause in names)]
