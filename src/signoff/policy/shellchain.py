"""Chains: a command line that writes a file and then runs a tool that reads it.

``echo … > conftest.py && pytest``, a hook written then ``git commit``, a Makefile
then ``make``: the later command executes what the earlier one wrote, though neither
says so. Such a line is never allowed by a rule (finding ``executes_written``) and is
high risk.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Sequence

from signoff.policy.shellpaths import PathRef
from signoff.policy.shelltypes import SimpleCommand

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
