"""Dangerous shell commands (a built-in classifier), feeding a verdict's risk.

It does not allow or deny anything by itself: it raises the risk, so the
auto reviewer sends these calls to a human and approvers see why. Patterns
are judged on parsed argv (after quote removal), so ``r''m -rf /`` counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from signoff.model import Risk
from signoff.shell import ShellAnalysis, SimpleCommand

_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "xh"})
_RUNNERS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3",
                      "perl", "ruby", "node", "php", "sudo", "source", ".", "eval"})
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*$")


def _runs_code(name: str) -> bool:
    return name in _RUNNERS or bool(_PYTHON.match(name))


@dataclass(frozen=True, slots=True)
class Danger:
    risk: Risk
    code: str
    text: str


def classify(analysis: ShellAnalysis) -> tuple[Danger, ...]:
    found: dict[str, Danger] = {}
    by_pipeline: dict[int, list[SimpleCommand]] = {}
    for cmd in analysis.commands:
        by_pipeline.setdefault(cmd.pipeline, []).append(cmd)
        for danger in _one(cmd):
            found.setdefault(danger.code, danger)
    for commands in by_pipeline.values():
        names = [c.basename for c in commands]
        for i, name in enumerate(names):
            if name in _DOWNLOADERS and any(_runs_code(n) for n in names[i + 1:]):
                found.setdefault("pipe_to_shell", Danger(
                    Risk.CRITICAL, "pipe_to_shell", f"{name} output piped into an interpreter"))
    # bash <(curl …), sh -c "$(curl …)", eval "$(wget -O- …)": the download is substituted
    # into an interpreter rather than piped.
    if any(f.code == "substitution" for f in analysis.never_allow):
        every = {c.basename for c in analysis.commands}
        downloader = next((n for n in sorted(every) if n in _DOWNLOADERS), None)
        if downloader is not None and any(_runs_code(n) for n in every):
            found.setdefault("pipe_to_shell", Danger(
                Risk.CRITICAL, "pipe_to_shell",
                f"{downloader} output substituted into an interpreter"))
    return tuple(found.values())


def highest(dangers: tuple[Danger, ...]) -> Risk:
    return Risk.highest(*(d.risk for d in dangers)) if dangers else Risk.LOW


def _flags(argv: tuple[str, ...]) -> tuple[set[str], set[str]]:
    short: set[str] = set()
    long: set[str] = set()
    for arg in argv[1:]:
        if arg == "--":
            break
        if arg.startswith("--"):
            long.add(arg.split("=", 1)[0])
        elif arg.startswith("-") and len(arg) > 1:
            short.update(arg[1:])
    return short, long


_NAMED = frozenset({"rm", "mke2fs", "mkswap", "wipefs", "fdisk", "parted", "sfdisk", "shred",
                    "dd", "git", "chmod", "chown", "chgrp", "shutdown", "reboot", "halt",
                    "poweroff", "init", "kill", "killall", "pkill", "curl", "wget"})


def _one(cmd: SimpleCommand) -> list[Danger]:
    name = cmd.basename
    if name not in _NAMED and not name.startswith("mkfs"):
        return []  # most commands: nothing this table names
    argv = cmd.argv
    short, long = _flags(argv)
    out: list[Danger] = []
    if name == "rm":
        recursive = bool({"r", "R"} & short or "--recursive" in long)
        force = "f" in short or "--force" in long
        if recursive and force:
            out.append(Danger(Risk.CRITICAL, "rm_rf", "rm -rf deletes trees without asking"))
        elif recursive:
            out.append(Danger(Risk.HIGH, "rm_r", "rm -r deletes directory trees"))
        if "--no-preserve-root" in long:
            out.append(Danger(Risk.CRITICAL, "rm_no_preserve_root", "rm --no-preserve-root"))
    elif name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs", "fdisk", "parted",
                                             "sfdisk", "shred"):
        out.append(Danger(Risk.CRITICAL, "disk_format", f"{name} destroys disk contents"))
    elif name == "dd":
        out.append(Danger(Risk.HIGH, "dd", "dd writes raw blocks"))
    elif name == "git" and "push" in argv[1:]:
        if "f" in short or {"--force", "--force-with-lease", "--mirror", "--delete"} & long \
                or any(a.startswith("+") for a in argv[2:]):
            out.append(Danger(Risk.HIGH, "git_force_push", "git push --force rewrites history"))
    elif name == "git" and "reset" in argv[1:] and "--hard" in long:
        out.append(Danger(Risk.HIGH, "git_reset_hard", "git reset --hard discards work"))
    elif name == "git" and "clean" in argv[1:] and "f" in short:
        out.append(Danger(Risk.HIGH, "git_clean", "git clean -f deletes untracked files"))
    elif name in ("chmod", "chown", "chgrp") and ({"R"} & short or "--recursive" in long):
        if name == "chmod" and any(a.endswith("777") or a in ("a+rwx", "ugo+rwx")
                                   for a in argv[1:]):
            out.append(Danger(Risk.HIGH, "chmod_777", "chmod -R 777 opens everything to all"))
        else:
            out.append(Danger(Risk.MEDIUM, "recursive_perms", f"{name} -R changes a tree"))
    elif name in ("shutdown", "reboot", "halt", "poweroff", "init", "kill", "killall", "pkill"):
        out.append(Danger(Risk.HIGH, "process_control", f"{name} stops processes or the host"))
    elif name in ("curl", "wget") and ({"--upload-file", "--data", "--data-binary", "--form",
                                        "--post-file"} & long or {"T", "d", "F"} & short):
        out.append(Danger(Risk.MEDIUM, "upload", f"{name} sends data off the machine"))
    return out
