"""docs/architecture.md's package tree is the source's: every package and every module
under ``src/signoff/`` is listed under its package, and nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "signoff"


def listed() -> dict[str, set[str]]:
    """Package (``""`` for the top) → the modules the doc lists under it."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The package tree", 1)[1].split("```", 2)[1]
    packages: dict[str, set[str]] = {}
    current = None
    for line in section.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            head = line.split()[0].rstrip("/")
            current = "" if head == "signoff" else head
            packages[current] = set()
        else:
            assert current is not None, line
            packages[current] |= set(line.split())
    return packages


def in_source() -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        package = path.parent.relative_to(SRC).as_posix()
        package = "" if package == "." else package
        if path.name != "__init__.py":
            packages.setdefault(package, set()).add(path.stem)
        else:
            packages.setdefault(package, set())
    return packages


def test_the_package_tree_lists_every_module_and_nothing_else() -> None:
    doc, src = listed(), in_source()
    assert set(doc) == set(src), f"packages: {set(doc) ^ set(src)}"
    for package, modules in src.items():
        assert doc[package] == modules, (package, sorted(doc[package] ^ modules))


def test_every_package_says_what_it_is_for() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The package tree", 1)[1].split("```", 2)[1]
    heads = [line for line in section.splitlines() if line and not line.startswith(" ")]
    assert all(re.match(r"\S+/\s+\S", head) for head in heads), heads
