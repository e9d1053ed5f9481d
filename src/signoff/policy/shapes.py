"""A command line as the patterns an allow rule could admit it by, from narrow to wide.

Rule suggestions (``signoff.policy.suggest``) learn from approved commands, and the
rule they propose must be as narrow as the history allows. Each simple command is
written four ways: ``exact`` (its own words, escaped: admits only itself), ``paths``
(each path turned into a glob of its kind inside the workspace — ``reproduce.py`` and
``tests/x.py`` → ``*.py``, ``/testbed/src/x.py`` → ``/testbed/*.py``; in a command
pattern ``*`` spans ``/``), ``shape`` (that, and every other operand and option value
``*``), and ``wide`` (its name and subcommand, then ``*``; for an interpreter, its
options and the script it runs, then ``*``: ``python *.py *``, so that ``python -m X``,
``python -c``, a program on standard input — other heads — stay out).
Paths are found by the command's model (``signoff.shell.commands``) where it has one,
by their look otherwise; a path outside the workspace, or climbing out of it, stays
literal (and the workspace scope asks about it whatever the pattern says).

A command is learned under the program it calls (``program``): ``python3`` and
``python3.11`` are ``python`` (the command models read them as one), ``./mvnw`` is
``mvn`` and ``./gradlew`` is ``gradle`` (the build tool's wrapper, checked into the
project, runs the tool itself); a rule is written for every name of that program
(``family``). A path to a program (``/usr/bin/python3``) is only itself.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from signoff.shell import SimpleCommand
from signoff.shell.commands import aliases_of, model_for
from signoff.shell.commands.models import Kind

_PYTHONS = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*")
# A build tool's wrapper: a script checked into the project that runs the tool itself, at
# the version the project pins (Maven Wrapper, Gradle Wrapper). Named by its path in the
# workspace, as the projects' documentation runs it.
WRAPPERS = {"./mvnw": "mvn", "./gradlew": "gradle"}
# Interpreters whose head is the script they run: ``python -m X``, ``python -c``, a
# program on standard input are other heads, which their wide pattern must not admit.
_SCRIPT_HEADS = frozenset({"python", "node"})
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_:-]*")
_FILE_NAME = re.compile(r"[\w.+-]*\.([A-Za-z][A-Za-z0-9]{0,7})")
_ATTACHED = re.compile(r"(--?[A-Za-z][\w.-]*=)(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Shapes:
    """One simple command's patterns (command-pattern strings) and its head."""

    head: str  # program and subcommand: "git log", "python -m pytest", "javac", "mvn test"
    program: str  # the program the command calls, which every pattern starts with
    exact: str
    paths: str  # only the paths turned into globs
    shape: str
    wide: str
    # the paths and shape patterns word by word (one word per argv word)
    path_words: tuple[str, ...] = ()
    shape_words: tuple[str, ...] = ()


def escape(word: str) -> str:
    """A glob that matches ``word`` alone."""
    return re.sub(r"([*?\[])", r"[\1]", word)


def path_glob(path: str, root: str | None) -> str:
    """The glob a path generalizes to: its kind (extension) in its place in the workspace."""
    match = _FILE_NAME.fullmatch(posixpath.basename(path))
    leaf = f"*.{match.group(1)}" if match else "*"
    if path.startswith("/"):
        base = (root or "").rstrip("/")
        norm = posixpath.normpath(path)
        if not base or not (norm == base or norm.startswith(base + "/")):
            return escape(path)  # outside the workspace: only itself
        return f"{escape(base)}/**/{leaf}" if match else f"{escape(base)}/**"
    if ".." in path.split("/") or path.startswith("~") or "$" in path:
        return escape(path)
    if "/" not in path.rstrip("/"):
        return leaf
    return f"**/{leaf}"


def word_glob(path: str, root: str | None) -> str:
    """``path_glob`` for a word of a command pattern, whose ``*`` spans ``/``: a file of
    its kind anywhere in the workspace (``*.py``, ``/testbed/*.py``), or only itself."""
    glob = path_glob(path, root)
    if glob == escape(path):
        return glob
    base = (root or "").rstrip("/")
    for prefix in (f"{escape(base)}/**/", "**/"):
        if glob.startswith(prefix):
            return glob[: len(prefix) - 3] + glob[len(prefix):]
    if glob == f"{escape(base)}/**":
        return f"{escape(base)}/*"
    return glob


def program(name: str) -> str:
    """The program a command name calls: ``python`` for ``python3`` and ``python3.11``
    (versioned names the command models read as the same program), ``mvn`` for
    ``./mvnw``; the name itself otherwise, and always for any other path."""
    if name in WRAPPERS:
        return WRAPPERS[name]
    if "/" in name:
        return name
    spec = model_for(name)
    if spec is not None and name.startswith(spec.name) and \
            _VERSION.fullmatch(name[len(spec.name):]):
        return spec.name
    return name


def family(name: str, seen: Iterable[str] = ()) -> tuple[str, ...]:
    """The names a rule learned for the program ``name`` is written for: the name, its
    versioned names in the command models' alias table (``python2``, ``python3``), its
    wrapper (``./mvnw``) and the names of it that ``seen`` used (``python3.11``)."""
    names = {name}
    names.update(w for w, p in WRAPPERS.items() if p == name)
    names.update(a for a in aliases_of(name) if program(a) == name)
    names.update(n for n in seen if program(n) == name)
    return tuple(sorted(names))


def rename(pattern: str, name: str, to: str) -> str:
    """``pattern`` (which starts with the program ``name``) for the program's name ``to``."""
    first = join([escape(name)])
    assert pattern == first or pattern.startswith(first + " "), (pattern, name)
    return join([escape(to)]) + pattern[len(first):]


def _looks_like_path(word: str) -> bool:
    if word.startswith("-") or any(c.isspace() for c in word):
        return False
    return "/" in word or _FILE_NAME.fullmatch(word) is not None


def head_length(command: SimpleCommand) -> int:
    """How many leading words name what the command is: ``git log``, ``python -m pytest``."""
    argv = command.argv
    invocation = command.invocation
    if invocation is not None and invocation.subcommand_index:
        return invocation.subcommand_index + 1
    if invocation is not None and invocation.model == "python":
        # python [OPTIONS] -m MODULE: through the module (``python -u -m pylint``)
        for part in invocation.parts:
            if part.option == "-m" and part.value:
                return part.index + (1 if part.word == f"-m{part.value}" else 2)
    if _PYTHONS.fullmatch(command.basename) and len(argv) >= 3 and argv[1] == "-m":
        return 3
    modelled = invocation is not None and invocation.modelled
    if not modelled and len(argv) >= 2 and _SUBCOMMAND.fullmatch(argv[1]):
        return 2
    return 1


def _program_of(command: SimpleCommand) -> str:
    return program(command.argv[0]) if command.literal[0] else command.argv[0]


def head(command: SimpleCommand) -> str:
    """The program a command calls and its subcommand (``python -m pytest`` for
    ``python3 -m pytest -q``): what a rule learned about it is grouped by."""
    return " ".join([_program_of(command), *command.argv[1:head_length(command)]])


def shapes(command: SimpleCommand, root: str | None) -> Shapes:
    """The four patterns of one simple command, each starting with its program."""
    argv = command.argv
    size = head_length(command)
    paths: set[int] = set()
    script: int | None = None  # the index of the script an interpreter runs
    invocation = command.invocation
    if invocation is not None and invocation.modelled:
        for part in invocation.parts:
            if part.value is None:
                continue
            # the value is the part's own word, or the word after its option
            at = part.index if part.word.endswith(part.value) and part.option is None \
                else part.index + 1
            if part.kind is Kind.EXEC and part.declared and part.option is None and \
                    at >= size and script is None:
                script = at
            if not part.literal:
                continue
            if part.kind in (Kind.READ, Kind.WRITE) or part.path or \
                    (part.kind is Kind.EXEC and part.declared):
                paths.add(at)
    name = _program_of(command)
    words: list[str] = [escape(name), *(escape(w) for w in argv[1:size])]
    globbed: list[str] = list(words)
    for index in range(size, len(argv)):
        word = argv[index]
        if not command.literal[index]:
            words.append(escape(word))
            globbed.append(escape(word))
        elif index in paths or (not (invocation and invocation.modelled)
                                and _looks_like_path(word)):
            words.append(word_glob(word, root))
            globbed.append(words[-1])
        elif word.startswith("-"):
            attached = _ATTACHED.fullmatch(word)
            words.append(f"{escape(attached.group(1))}*" if attached else escape(word))
            globbed.append(escape(word))
        else:
            words.append("*")
            globbed.append(escape(word))
    if script is not None:  # the interpreter, its options, the script: then anything
        wide = [*words[: script + 1], "*"]
    elif invocation is not None and invocation.model in _SCRIPT_HEADS and size == 1:
        wide = words  # no script (--version, -c, stdin): no wider than its shape
    else:
        wide = [*words[:size], "*"]
    return Shapes(head=head(command), program=name,
                  exact=join([escape(name), *(escape(w) for w in argv[1:])]),
                  paths=join(globbed), shape=join(words), wide=join(wide),
                  path_words=tuple(globbed), shape_words=tuple(words))


_PLAIN = re.compile(r"[\w@%+=:,./*?\[\]!-]+")


def join(words: Iterable[str]) -> str:
    """Pattern words as one string: quoted only where the shell would split or expand."""
    return " ".join(w if _PLAIN.fullmatch(w) else shlex.quote(w) for w in words)
