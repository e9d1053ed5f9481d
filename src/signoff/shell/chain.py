"""Chains: a command line that writes a file and then runs a tool that reads it.

``echo … > conftest.py && pytest``, a hook written then ``git commit``, a Makefile
then ``make``: the later command executes what the earlier one wrote, though neither
says so. Such a line is never allowed by a rule (finding ``executes_written``) and is
high risk.

The same holds for the ignore files a walk honours (``git add -A``, ``rg``): ``rm
.gitignore && git add -A`` stages the ``.env`` that ``.gitignore`` excluded when the
policy looked. They count only when nothing that runs before the tool, or beside it,
can have changed them (``settle_ignores``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import posixpath
from collections.abc import Sequence

from signoff.shell.commands import Kind
from signoff.shell.paths import PathRef
from signoff.shell.results import SimpleCommand

# Files a tool reads and executes or trusts without naming them on its command line.
TRUSTS: dict[str, tuple[str, ...]] = {
    "git": (".git/**", ".gitattributes", ".gitmodules"),
    "pytest": ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"),
    "py.test": ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"),
    "tox": ("tox.ini", "setup.py", "pyproject.toml"),
    "nox": ("noxfile.py",),
    "make": ("Makefile", "makefile", "GNUmakefile", "*.mk"),
    "npm": ("package.json", ".npmrc"), "npx": ("package.json", ".npmrc"),
    "yarn": ("package.json", ".yarnrc", ".yarnrc.yml"), "pnpm": ("package.json", ".npmrc"),
    "pip": ("setup.py", "pyproject.toml", "setup.cfg"),
    "python": ("sitecustomize.py", "usercustomize.py", "*.pth", "conftest.py"),
    "python3": ("sitecustomize.py", "usercustomize.py", "*.pth", "conftest.py"),
    "less": (".lessfilter", ".lesskey"),
    "docker": ("Dockerfile", "docker-compose.yml", "compose.yaml"),
    "cargo": ("build.rs", ".cargo/**"), "mvn": ("pom.xml", ".mvn/**"),
    "gradle": ("*.gradle",), "bash": (".bashrc", ".bash_profile", ".profile", ".envrc"),
    "direnv": (".envrc",),
}


def executes_written(commands: Sequence[SimpleCommand], paths: Sequence[PathRef]) -> str | None:
    """A command that trusts a file written earlier in the same command line."""
    writes = [(ref.command, ref.path) for ref in paths if ref.write and ref.literal]
    if not writes:
        return None
    for index, cmd in enumerate(commands):
        trusted = TRUSTS.get(cmd.basename)
        if not trusted:
            continue
        for written_at, path in writes:
            if written_at >= index:
                continue
            pattern = _trusted_match(path, trusted)
            if pattern is not None:
                return (f"{cmd.basename} reads {path!r} ({pattern}), written earlier in the "
                        "same command: it runs what was just written")
    return None


def _trusted_match(path: str, patterns: tuple[str, ...]) -> str | None:
    parts = [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]
    for pattern in patterns:
        if pattern.endswith("/**"):
            if pattern[:-3] in parts:
                return pattern
        elif parts and fnmatch.fnmatchcase(parts[-1], pattern):
            return pattern
    return None


def settle_ignores(commands: Sequence[SimpleCommand], paths: Sequence[PathRef], *,
                   sequential: bool) -> list[PathRef]:
    """``paths``, with the ignore files of a walk dropped (every file counts as read)
    unless the line runs one command after another (no ``&``, loop or function) and
    each command before the walk's, or in its pipeline, is modelled and writes, runs
    and redirects nothing."""
    if not any(ref.tree is not None and ref.tree.ignores for ref in paths):
        return list(paths)
    writers = {ref.command for ref in paths if ref.write}
    settled: list[PathRef] = []
    for ref in paths:
        tree = ref.tree
        trusted = tree is None or not tree.ignores or (
            sequential and _undisturbed(ref.command, commands, writers))
        settled.append(ref if trusted or tree is None else dataclasses.replace(
            ref, tree=dataclasses.replace(tree, ignores=())))
    return settled


def _undisturbed(index: int, commands: Sequence[SimpleCommand], writers: set[int]) -> bool:
    if index in writers or not 0 <= index < len(commands):
        return False  # rg x > .gitignore: the shell truncates it before rg starts
    pipeline = commands[index].pipeline
    return all(_inert(cmd) and j not in writers for j, cmd in enumerate(commands)
               if j != index and (j < index or cmd.pipeline == pipeline))


def _inert(cmd: SimpleCommand) -> bool:
    if cmd.basename in ("cd", "pushd", "popd", "true", ":"):
        return True  # builtins that change no file
    inv = cmd.invocation
    return inv is not None and inv.modelled and inv.inner is None and all(
        p.kind in (Kind.INERT, Kind.READ) for p in inv.parts)
