"""The import graph against the documented layers (docs/architecture.md, "Layers"): every
``import signoff.X`` in ``src/``, at the top of a module or inside a function, goes from a
part to one it may use — never back up. A new arrow is a design decision: change the
table and the docs together, or move the code."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "signoff"

# The shared vocabulary is every module at the top (``model``, ``errors``, ``canonical``…),
# but the package's own ``__init__``, the public face, which may import anything.
BASE = {"vocabulary"}
MAY_USE: dict[str, set[str]] = {
    "vocabulary": set(),
    "globs": BASE,
    "shell": BASE | {"globs"},
    "policy": BASE | {"globs", "shell"},
    "review": BASE | {"globs", "shell", "policy"},
    "store": BASE,
    "kernel": BASE | {"globs", "shell", "policy", "review", "store"},
    "notify": BASE | {"globs", "shell", "policy", "review", "store", "kernel"},
    "server": BASE | {"globs", "shell", "policy", "review", "store", "kernel", "notify"},
    "remote": BASE | {"policy", "store", "kernel"},
    "adapters": BASE | {"globs", "shell", "policy", "review", "store", "kernel", "server",
                        "remote"},
    "demo": BASE | {"globs", "shell", "policy", "review", "store", "kernel", "server",
                    "notify", "adapters", "remote"},
    "cli": BASE | {"globs", "shell", "policy", "review", "store", "kernel", "server",
                   "notify", "adapters", "remote", "demo"},
}
# Arrows still to be removed, each named with why it is here; the test fails when one is
# gone, so the list only shrinks.
KNOWN: dict[tuple[str, str], str] = {}


def part_of(module: str) -> str:
    """``signoff.kernel.gate`` → ``kernel``; a top-level module → ``vocabulary``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if (SRC / parts[1]).is_dir():
        return parts[1]
    return "vocabulary"


def imports() -> Iterator[tuple[str, str, int]]:
    """(importing module, imported module, line) for every ``signoff`` import in src."""
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield module, alias.name, node.lineno
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield module, node.module, node.lineno
                for alias in node.names:  # ``from signoff import kernel``
                    yield module, f"{node.module}.{alias.name}", node.lineno


def arrows() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for source, target, line in imports():
        if not target.startswith("signoff."):
            continue
        if not (SRC / target.split(".")[1]).exists() and \
                not (SRC / f"{target.split('.')[1]}.py").exists():
            continue  # ``from signoff.x import name``: the name, not a module
        here, there = part_of(source), part_of(target)
        if here in ("package", there) or there == "package":
            continue
        found.setdefault((here, there), []).append(f"{source}:{line} imports {target}")
    return found


def test_every_part_of_the_source_is_in_the_table() -> None:
    parts = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert parts | {"vocabulary"} == set(MAY_USE)


def test_no_import_runs_against_the_layers() -> None:
    wrong = {arrow: where for arrow, where in arrows().items()
             if arrow[1] not in MAY_USE[arrow[0]] and arrow not in KNOWN}
    assert not wrong, "\n".join(f"{a} -> {b}: {w[0]} (+{len(w) - 1})"
                                for (a, b), w in wrong.items())


def test_the_known_back_arrows_are_still_there() -> None:
    """When one is removed, remove it from ``KNOWN`` (and the docs' note) too."""
    gone = [arrow for arrow in KNOWN if arrow not in arrows()]
    assert not gone, f"no longer imported, drop from KNOWN: {gone}"
